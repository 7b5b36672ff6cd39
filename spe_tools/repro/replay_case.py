"""Replay a repro case: a fresh lab (the patched Collector, the stand-in origin, ONE proxy of the
recorded kind and options, the Multiplier) in DIR/replay/, the case's requests sent through the
Multiplier with their recorded timing, and the verdict on the last one: did the proxy break the
expected rule again? Every process is stopped however the replay ends (the lab machinery's stop).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spe_tools.lab.definition.kinds import KINDS, MULTIPLIER
from spe_tools.lab.definition.model import Lab, LabFileError, parse_lab
from spe_tools.lab.definition.proxy_spec import CACHE_PORTS
from spe_tools.lab.start.bring_up import bring_up
from spe_tools.lab.start.run_directory import make_run_dir
from spe_tools.lab.start.running_lab import ROOT, RunningLab
from spe_tools.ports import free_port
from spe_tools.process import ProcessGroup
from spe_tools.repro.case import UNSAFE, Case, CaseError, Finding, load_case, replayed_request_headers
from spe_tools.repro.stand_in_origin import START_PATH, STARTED_FIELD
from spe_tools.rundir import access, layout
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.records import read_records

# The name clients put in URLs, as in the default lab: Traffic Server never sends a request for the
# literal 127.0.0.1 to its parent, so it would bypass its Collector port (spe_tools/lab/definition/model.py).
ORIGIN_HOST = "localhost"
NOT_STARTED = ("external",)  # kinds the user runs: a replay cannot start a fresh one
RECORD_WAIT_S = 15.0  # beyond the Multiplier's timeout, for the last record to reach the log
# Rules broken by a copy older than a bound (its lifetime, or its Age), and `date`, broken by a Date written
# later than the stored one: a copy only grows older, so the judged request goes this much later than
# recorded, past a bound (or a second) it crossed by less than the clocks' jitter.
AGEING_RULES = frozenset({"age", "stale", "must-revalidate", "proxy-revalidate", "s-maxage", "request-max-age",
                          "date"})
AGEING_MARGIN_S = 0.5


class ReplayError(RuntimeError):
    """The replay could not run; the message says why."""


@dataclass(frozen=True)
class Verdict:
    reproduced: tuple[Finding, ...]  # expected rules found again, with the replay's section and reason
    missing: tuple[str, ...]  # expected rules not found
    judged: str  # how the replay judged the proxy's reply, for the "not reproduced" line
    rundir: Path

    @property
    def ok(self) -> bool:
        return not self.missing

    def lines(self) -> list[str]:
        out = [f"reproduced: {f.rule} ({f.section}) — {f.reason}" for f in self.reproduced]
        if self.missing:
            out.append(f"not reproduced: {', '.join(self.missing)}: the proxy's reply was judged {self.judged}")
        return out


def _toml(values: dict) -> list[str]:
    return [f"{key} = {json.dumps(value)}" for key, value in values.items()]  # JSON's scalars and lists are TOML


def replay_lab(case: Case, origin_port: int) -> Lab:
    """The lab of a replay, validated like a lab file (a case edited by hand gets the lab file's messages)."""
    if case.proxy.kind not in KINDS:
        raise ReplayError(f"proxy {case.proxy.name!r}: unknown kind {case.proxy.kind!r} (kinds: {', '.join(KINDS)})")
    if case.proxy.kind in NOT_STARTED:
        raise ReplayError(f"proxy {case.proxy.name!r} is of kind {case.proxy.kind!r}: you run it, SPE cannot start "
                          "a fresh one to replay the case against")
    lines = ['name = "repro"', "[collector]", 'kind = "spe"', *_toml(case.collector), "[origin]", 'kind = "none"',
             "[multiplier]", *_toml(case.multiplier), "[[proxy]]",
             *_toml({"name": case.proxy.name, "kind": case.proxy.kind, **case.proxy.options,
                     **_origin_ports(case.proxy.kind, origin_port)})]
    try:
        return parse_lab("\n".join(lines) + "\n")
    except LabFileError as e:
        raise ReplayError(f"the case's lab: {e}") from None


def _origin_ports(kind: str, origin_port: int) -> dict[str, list[int]]:
    """Apache caches only the origin ports it is told (CacheEnable per port): the run's were another
    origin's, the replay's is the stand-in's."""
    return {CACHE_PORTS.key: [origin_port]} if CACHE_PORTS.key in KINDS[kind].keys else {}


def _env(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT)}


def _start_clock(origin_port: int) -> float:
    """Starts the stand-in origin's case clock; returns its start (unix s), from which it moves dates."""
    conn = http.client.HTTPConnection("127.0.0.1", origin_port, timeout=10)
    try:
        conn.request("GET", START_PATH)
        reply = conn.getresponse()
        reply.read()
        return float(reply.getheader(STARTED_FIELD) or time.time())
    finally:
        conn.close()


def same_phase_delay(recorded_start: float, now: float) -> float:
    """Seconds until the clock's fraction of a second is the recording's. Date and Age have one-second
    resolution, and so has the judge's reading of them: a copy 1.6 s old by the recorded clock can read as 1
    or 2 s old by another phase, which decides `age` and `stale` near their bounds. At the recorded phase each
    step's Date rounds as it did."""
    return (recorded_start - now) % 1.0


def send_offsets(case: Case) -> list[float]:
    """When each step goes, from the first: as recorded, the judged one AGEING_MARGIN_S later when every
    expected rule is one a copy breaks by growing older (a later reuse breaks it the more), or when `date` is
    one of them: a Date written in a later second than the stored one is found when the reuse crossed a second's
    tick, often by less than a loaded machine's jitter (a precedence case's `date` beside validator-precedence
    did not come back in CI); the half second's margin lands it past the tick."""
    offsets = [step.offset_s for step in case.steps]
    rules = {f.rule for f in case.expected}
    if rules and (rules <= AGEING_RULES or "date" in rules):
        offsets[-1] += AGEING_MARGIN_S
    return offsets


def send_sequence(case: Case, multiplier_port: int, origin_port: int, timeout_s: float) -> None:
    """Every step through the Multiplier at its offset (or at once, when the previous one ran late)."""
    url = f"http://{ORIGIN_HOST}:{origin_port}{case.path}"
    time.sleep(same_phase_delay(case.recorded_start, time.time()))
    started = _start_clock(origin_port)
    start = time.monotonic()
    for step, offset in zip(case.steps, send_offsets(case), strict=True):
        time.sleep(max(0.0, start + offset - time.monotonic()))
        conn = http.client.HTTPConnection("127.0.0.1", multiplier_port, timeout=timeout_s)
        try:
            # Only the recorded fields: http.client would add Accept-Encoding of its own.
            conn.putrequest(step.method, url, skip_accept_encoding=True)
            for name, value in replayed_request_headers(case, step, started).items():
                conn.putheader(name, value)
            body = b"spe repro\n" if step.method in UNSAFE else None  # the log keeps no request body
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            conn.getresponse().read()
        except (OSError, http.client.HTTPException) as e:
            raise ReplayError(f"request {step.record_id} ({step.method}) through the Multiplier failed: {e}") from e
        finally:
            conn.close()


def last_record(rundir: Path, count: int, deadline_s: float) -> dict:
    """The record of the sequence's last request, once all `count` are in the log."""
    end = time.monotonic() + deadline_s
    log = RunDir(rundir).multiplier_log
    while True:
        records = read_records(log) if log.exists() else []
        if len(records) >= count:
            return max(records, key=lambda r: r["id"])
        if time.monotonic() > end:
            raise ReplayError(f"the Multiplier logged {len(records)} of {count} records in time ({log})")
        time.sleep(0.1)


def describe(leg: dict) -> str:
    """How the judge saw a leg: result and status, where the reply came from, what it broke."""
    cache = leg.get("cache") or {}
    source = "a reused copy" if cache.get("reused") else f"provenance {cache.get('provenance', 'unknown')}"
    detail = ", ".join(x for x in (f"status {leg['status']}" if leg.get("status") else "", leg.get("error") or "") if x)
    text = f"{leg.get('result')}" + (f" ({detail})" if detail else "") + f", {source}"
    found = cache.get("violations") or []
    if found:
        return text + ", violations: " + "; ".join(f"{v['rule']} ({v['section']}) — {v['reason']}" for v in found)
    return text + ", with no violation"


def judge(case: Case, record: dict, rundir: Path) -> Verdict:
    leg = next((p for p in record.get("proxies", []) if p["name"] == case.proxy.name), None)
    if leg is None:
        raise ReplayError(f"the replay's record {record.get('id')} has no leg of {case.proxy.name!r}")
    found = {v["rule"]: v for v in (leg.get("cache") or {}).get("violations", [])}
    reproduced = tuple(Finding(f.rule, found[f.rule]["section"], found[f.rule]["reason"])
                       for f in case.expected if f.rule in found)
    missing = tuple(f.rule for f in case.expected if f.rule not in found)
    return Verdict(reproduced, missing, describe(leg), rundir)


def replay(case_dir: Path, say=print, multiplier: Path = MULTIPLIER) -> Verdict:
    """Replay the case in case_dir; raises ReplayError (or the lab's own errors) when it cannot run."""
    case_dir = Path(case_dir).resolve()  # the proxies' configs name their directories in it
    case = load_case(case_dir)
    origin_port = free_port()
    lab = replay_lab(case, origin_port)
    base = case_dir / "replay"
    base.mkdir(exist_ok=True)
    access.open_for_services(base, None)  # the proxy drops to its own user, who must pass through (0711)
    rundir = make_run_dir(lab, base)
    say(f"spe repro: replay in {rundir}")
    group = ProcessGroup(rundir)
    run: RunningLab | None = None
    try:
        origin = group.start(layout.ORIGIN, [sys.executable, "-m", "spe_tools.repro.stand_in_origin", "--case",
                                        str(case_dir.resolve()), "--listen", f"127.0.0.1:{origin_port}"],
                             port=origin_port, deadline_s=20, env=_env(rundir))
        run = bring_up(lab, rundir, group, multiplier=multiplier, say=say)
        run.record(origin)  # in pids.json, so `./spe lab down` finds it too
        timeout_s = lab.multiplier.timeout_s
        send_sequence(case, run.ports.multiplier, origin_port, timeout_s + 5)
        return judge(case, last_record(rundir, len(case.steps), timeout_s + RECORD_WAIT_S), rundir)
    except CaseError as e:
        raise ReplayError(str(e)) from e
    finally:
        with signals_ignored():  # a second Ctrl-C must not interrupt the stopping
            (run or RunningLab(lab, rundir, group)).stop()


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
