"""A repro case: what one proxy's cache-rule violation needs to happen again, taken from a run directory.

The case holds the requests for the violation's URL up to and including the judged one (method, the
cache-relevant request fields, time offset from the first), the origin's reply in force for each (the
Collector's fresh fetch for that request, else the latest earlier one), the proxy's kind and lab-file
options, the Collector's and the Multiplier's settings, and the violation expected. It is written as
DIR/case.json with a DIR/README.txt for a bug report (docs/repro.md).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from spe_tools.lab import access
from spe_tools.lab.kinds import KINDS
from spe_tools.lab.model import LabFileError, load_lab
from spe_tools.rundir.lab_json import CollectorOfRun, LabJson, MultiplierOfRun
from spe_tools.rundir.layout import CASE_JSON, RunDir

FORMAT = 1
# The log keeps only that a request had credentials; the case sends fixed stand-ins instead.
DUMMY_AUTHORIZATION = "Basic c3BlOnJlcHJv"  # spe:repro
DUMMY_COOKIE = "spe-repro=1"
PRESENT = "(present)"
STAND_INS = {"authorization": DUMMY_AUTHORIZATION, "cookie": DUMMY_COOKIE}
UNSAFE = ("POST", "PUT", "DELETE", "PATCH")
COLLECTOR_KEYS = ("uncacheable_ttl_s", "replay_timing", "cache_mb")
MULTIPLIER_KEYS = ("mode", "legs")
# Options that name this machine's ports: a replay picks free ones.
PORT_KEYS = ("port", "collector_port", "address")


class CaseError(RuntimeError):
    """The case cannot be written or read; the message says why."""


@dataclass(frozen=True)
class OriginReply:
    status: int
    headers: dict[str, str]  # the origin's judged fields as recorded, lowercase names
    body_bytes: int
    fetched_offset_s: float  # case time of the fetch that brought it


@dataclass(frozen=True)
class Step:
    record_id: int
    offset_s: float  # from the case's first request
    method: str
    headers: dict[str, str]
    reply: OriginReply  # the origin's reply in force for this request
    fresh: bool  # the Collector fetched it from the origin for this request


@dataclass(frozen=True)
class Finding:
    rule: str
    section: str
    reason: str


@dataclass(frozen=True)
class ProxyOfCase:
    name: str
    kind: str
    options: dict[str, object] = field(default_factory=dict)  # lab-file keys besides name, kind and ports


@dataclass(frozen=True)
class Case:
    source: str  # the run directory it was taken from
    request_id: int
    url: str
    path: str  # path and query, what the stand-in origin answers
    recorded_start: float  # unix time of the first request in the run
    proxy: ProxyOfCase
    expected: tuple[Finding, ...]
    steps: tuple[Step, ...]
    collector: dict[str, object] = field(default_factory=dict)
    multiplier: dict[str, object] = field(default_factory=dict)


def read_log(path: Path) -> list[dict]:
    """The records of a multiplier.jsonl; a half-written last line is left out."""
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _leg(record: dict, proxy: str) -> dict:
    legs = {p["name"]: p for p in record.get("proxies", [])}
    if proxy not in legs:
        raise CaseError(f"no proxy {proxy!r} in request {record['id']} (proxies: {', '.join(legs) or 'none'})")
    return legs[proxy]


def _rules(leg: dict, what: str = "violations") -> list[str]:
    return [v["rule"] for v in (leg.get("cache") or {}).get(what, [])]


def _no_violation(records: list[dict], record: dict, proxy: str) -> CaseError:
    """The error for a request where the proxy broke no rule: what it has there and elsewhere."""
    advisories = _rules(_leg(record, proxy), "advisories")
    text = f"proxy {proxy!r} has no violation on request {record['id']}"
    if advisories:
        text += f" (advisories: {', '.join(advisories)})"
    elsewhere = [(r["id"], _rules(leg)) for r in records
                 for leg in r.get("proxies", []) if leg["name"] == proxy and _rules(leg)]
    if elsewhere:
        shown = ", ".join(f"request {rid} ({', '.join(rules)})" for rid, rules in elsewhere[:10])
        text += f"; it has violations on {shown}" + (" ..." if len(elsewhere) > 10 else "")
    else:
        text += "; it has none in this run"
    return CaseError(text)


def _request_headers(record: dict) -> dict[str, str]:
    return {name: STAND_INS.get(name, value) if value == PRESENT else value
            for name, value in (record.get("request_headers") or {}).items()}


def _fresh_reply(record: dict, offset: float, previous: OriginReply | None) -> OriginReply | None:
    """The origin's reply when the Collector fetched it for this request, else None. A 304 to a
    conditional request revalidated the copy: the earlier reply, its fields updated."""
    collector = record.get("collector") or {}
    origin = (collector.get("cache") or {}).get("origin")
    if origin is None:
        return None
    status, length = collector.get("status") or 200, collector.get("bytes") or 0
    if status == 304 and previous is not None:
        return OriginReply(previous.status, {**previous.headers, **origin}, previous.body_bytes, offset)
    if record["method"] == "HEAD" and previous is not None:
        length = previous.body_bytes  # a HEAD reply has no body: the length stays the GET's
    return OriginReply(status, dict(origin), length, offset)


def _steps(sequence: list[dict]) -> tuple[Step, ...]:
    start = sequence[0]["ts"]
    offsets = [round(r["ts"] - start, 6) for r in sequence]
    fetched: list[OriginReply | None] = []  # the origin's reply to each request the Collector passed on
    in_force: OriginReply | None = None
    for record, offset in zip(sequence, offsets, strict=True):
        safe = record["method"] not in UNSAFE  # an unsafe method's reply is its own, never stored
        reply = _fresh_reply(record, offset, in_force if safe else None)
        in_force = reply if safe and reply else in_force
        fetched.append(reply)
    safe_replies = [r for rec, r in zip(sequence, fetched, strict=True) if r and rec["method"] not in UNSAFE]
    if not safe_replies and any(rec["method"] not in UNSAFE for rec in sequence):
        raise CaseError(f"no origin reply was recorded for {sequence[-1]['url']} (the Collector never fetched it "
                        "in this run): the stand-in origin would not know what to answer")
    # A request answered before the case's first fetch (the Collector held a copy from outside the
    # sequence) gets the first reply fetched.
    in_force = safe_replies[0] if safe_replies else None
    steps = []
    for record, offset, reply in zip(sequence, offsets, fetched, strict=True):
        if record["method"] in UNSAFE:
            chosen = reply or OriginReply((record.get("collector") or {}).get("status") or 200, {}, 0, offset)
        else:
            in_force = chosen = reply or in_force
        steps.append(Step(record["id"], offset, record["method"], _request_headers(record), chosen,
                          reply is not None))
    return tuple(steps)


def _proxy_of_case(run: Path, name: str) -> ProxyOfCase:
    """Kind from lab.json; options from the run's lab.toml (the lab as it ran) when it is there."""
    files = RunDir(run)
    recorded = (LabJson.read(run) or LabJson()).proxies.get(name)
    if recorded is None or recorded.kind is None:
        raise CaseError(f"{files.lab_json} does not name proxy {name!r}: the case needs its kind")
    allowed = KINDS[recorded.kind].keys - set(PORT_KEYS)
    # lab.json names only some options (prefetch); lab.toml, where a run has it, has them all
    options: dict[str, object] = {k: v for k, v in recorded.to_json().items() if k in allowed}
    if files.lab_toml.exists():
        try:
            spec = load_lab(files.lab_toml).proxy(name)
        except (LabFileError, StopIteration) as e:
            raise CaseError(f"{files.lab_toml}: cannot read proxy {name!r}: {e}") from None
        options = {key: getattr(spec, key) for key in sorted(allowed)}
        options = {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}
    return ProxyOfCase(name, recorded.kind, options)


def _settings(recorded: CollectorOfRun | MultiplierOfRun, keys: tuple[str, ...]) -> dict[str, object]:
    """The keys of lab.json's table that it has (a run from an older version may lack some)."""
    return {k: v for k, v in recorded.to_json().items() if k in keys and v is not None}


def extract_case(run: Path, proxy: str, request_id: int) -> Case:
    """The case of `proxy`'s violation on request `request_id` of the run in `run`."""
    run = Path(run)
    log = RunDir(run).multiplier_log
    if not log.exists():
        raise CaseError(f"no run directory with a multiplier.jsonl at {run}")
    records = read_log(log)
    target = next((r for r in records if r.get("id") == request_id), None)
    if target is None:
        raise CaseError(f"no record {request_id} in {log} ({len(records)} records)")
    leg = _leg(target, proxy)
    if "cache" not in leg:
        raise CaseError(f"{log} has no cache verdicts (written before the cache-rule judge): nothing to reproduce")
    if not _rules(leg):
        raise _no_violation(records, target, proxy)
    sequence = sorted((r for r in records if r.get("url") == target["url"] and r["ts"] <= target["ts"]
                       and (r["ts"], r["id"]) <= (target["ts"], target["id"])), key=lambda r: (r["ts"], r["id"]))
    parts = urlsplit(target["url"])
    recorded = LabJson.read(run) or LabJson()
    return Case(source=str(run.resolve()), request_id=request_id, url=target["url"],
                path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                recorded_start=sequence[0]["ts"], proxy=_proxy_of_case(run, proxy),
                expected=tuple(Finding(v["rule"], v["section"], v["reason"]) for v in leg["cache"]["violations"]),
                steps=_steps(sequence), collector=_settings(recorded.collector, COLLECTOR_KEYS),
                multiplier=_settings(recorded.multiplier, MULTIPLIER_KEYS))


def default_dir(case: Case) -> Path:
    return RunDir(case.source).repro(case.request_id, case.proxy.name)


def write_case(case: Case, out: Path | None = None) -> Path:
    """DIR/case.json and DIR/README.txt (DIR: `out`, default RUN/repro/<ID>-<NAME>/); returns DIR."""
    out = Path(out) if out is not None else default_dir(case)
    access.make_passable_dirs(out)  # a replay's proxy drops to its own user, who must pass through to replay/
    access.open_for_services(out, None)  # 0711: passable, not listable; case.json is private (./spe repro's umask)
    (out / CASE_JSON).write_text(json.dumps({"format": FORMAT, **asdict(case)}, indent=2) + "\n")
    (out / "README.txt").write_text(readme(case, out))
    return out


def cite(section: str) -> str:
    """'4' -> 'RFC 9111 section 4'; another RFC's section names it first: '9110 9.3.2'."""
    rfc, _, rest = section.partition(" ")
    return f"RFC {rfc} section {rest}" if rest and rfc.isdigit() else f"RFC 9111 section {section}"


def readme(case: Case, where: Path) -> str:
    shown = "\n".join(f"  - {f.rule} ({cite(f.section)}): {f.reason}" for f in case.expected)
    steps = "\n".join(f"  {s.offset_s:8.3f} s  {s.method} {case.path}" + (
        f"  [{', '.join(f'{k}: {v}' for k, v in s.headers.items())}]" if s.headers else "")
                      + f"  -> origin {s.reply.status}" + ("" if s.fresh else " (earlier reply)") for s in case.steps)
    options = ", ".join(f"{k} = {v!r}" for k, v in case.proxy.options.items()) or "defaults"
    return textwrap.dedent("""\
        SPE repro case: proxy {name} (kind {kind}, options: {options}), request {rid}
        URL: {url}

        What it shows: the proxy's reply to the last request below broke
        {shown}

        The requests, with their time from the first, and the origin's reply in force:
        {steps}

        Replay it (a fresh {kind} behind SPE's patched Collector and a stand-in origin that answers as
        recorded; exit 0 when the violation shows again, 1 when not, 2 on error):
          ./spe repro {here}

        case.json holds everything the replay uses; docs/repro.md says what a case can and cannot show.
        Credentials in the original requests are replaced by fixed stand-ins.
        """).format(name=case.proxy.name, kind=case.proxy.kind, options=options, rid=case.request_id, url=case.url,
                    shown=shown.lstrip(), steps=steps.strip("\n"), here=where)


def load_case(path: Path) -> Case:
    """Read DIR/case.json (or the file itself)."""
    path = Path(path)
    file = path / CASE_JSON if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CaseError(f"cannot read the case {file}: {e}") from None
    if data.pop("format", None) != FORMAT:
        raise CaseError(f"{file}: not a case of format {FORMAT}")
    try:
        steps = tuple(Step(**{**s, "reply": OriginReply(**s["reply"])}) for s in data.pop("steps"))
        return Case(**{**data, "proxy": ProxyOfCase(**data["proxy"]), "steps": steps,
                       "expected": tuple(Finding(**f) for f in data["expected"])})
    except (KeyError, TypeError) as e:
        raise CaseError(f"{file}: not a valid case: {e}") from None
