"""A repro case: what one proxy's cache-rule violation needs to happen again, taken from a run directory.

The case holds the requests for the violation's URL up to and including the judged one (method, the
cache-relevant request fields, time offset from the first), the origin's reply in force for each (the
Collector's fresh fetch for that request, else the latest earlier one), the proxy's kind and lab-file
options, the Collector's and the Multiplier's settings, and the violation expected. case_dir.py writes it as
DIR/case.json, with DIR/case.har and DIR/README.txt for a bug report (docs/repro.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import LabFileError, load_lab
from spe_tools.rundir.lab_json import CollectorOfRun, LabJson, MultiplierOfRun, lab_run_of
from spe_tools.rundir.layout import CASE_JSON, RunDir
from spe_tools.rundir.records import read_records, request_sequence
from spe_tools.workload.http11 import format_date, parse_date

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


MOVED = ("expires", "last-modified")  # a reply's absolute dates, moved with its Date in a replay
# A request's dates that echo a reply's Last-Modified: moved with that reply's (RFC 9110 13.1.3, 13.1.4, 13.1.5)
MOVED_IN_REQUESTS = ("if-modified-since", "if-unmodified-since", "if-range")


class CaseError(RuntimeError):
    """The case cannot be written or read; the message says why."""


@dataclass(frozen=True)
class OriginReply:
    status: int
    headers: dict[str, str]  # the origin's judged fields as recorded, lowercase names
    body_bytes: int
    fetched_offset_s: float  # case time of the fetch that brought it
    # The names of its other fields (Set-Cookie, Content-Type, X-...: the record keeps names, not values),
    # sent by the stand-in origin with stand-in values; a case written before they were kept has none.
    other_fields: tuple[str, ...] = ()
    interim: tuple[int, ...] = ()  # the interim (1xx) responses the origin sent before it, in order
    # The fields its Connection listed, for one hop (collector.cache.origin_connection): sent with a Connection
    # that lists them, so a proxy that forwards or stores one does it again.
    hop_fields: tuple[str, ...] = ()
    # The Content-Length the origin's 304 carried when it validated this reply (collector.cache.validated_length;
    # RFC 9110 8.6 forbids it, some origins send 0): the stand-in's 304s carry it too, so a proxy that merges it
    # into its copy (`framing`) does so again. None: that 304 carried none, or the reply was not validated.
    not_modified_length: int | None = None


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


#: An origin's Date is its clock read to the second as it answers: within this of the fetch's recorded time it is
#: the recording's clock; further off it is not (an origin's wrong clock, a fixed Date the case is about).
SAME_CLOCK_S = 2.0


def date_shift(started: float, recorded_start: float) -> float:
    """Whole seconds a replay that started at `started` (unix) moves the case's absolute dates, so an expiry or a
    Last-Modified keeps its distance to when the replay's fetch of it is due. Every date moves by the same amount,
    the replay's start from the recording's: dates equal in the run stay equal in the replay whichever fetch
    carries them (a proxy may compare If-Modified-Since with its copy's Last-Modified exactly, as nginx does;
    each fetch's own Date, read to the second at another sub-second phase, would move them apart by a second)."""
    return round(started - recorded_start)


def off_the_clock(reply: OriginReply, recorded_start: float) -> bool:
    """Whether the reply's Date was not the recording's clock (an origin's fast or slow clock, a fixed Date the
    case is about): a replay sends it moved like the other dates, keeping its distance to the fetch (the copy's
    apparent age, RFC 9111 4.2.3), not the stand-in's own Date."""
    recorded = parse_date(reply.headers.get("date", ""))
    return recorded is not None and abs(recorded_start + reply.fetched_offset_s - recorded) > SAME_CLOCK_S


def moved_date(value: str, shift: float) -> str:
    """An IMF-fixdate moved by `shift` seconds. Anything else stays as it was, byte for byte: an ETag in
    If-Range, `0`, and a date a cache must read as invalid or in an obsolete form (`2:01:18` for an hour, double
    spaces: RFC 9111 5.3), which the case is often about and which rewriting would make valid."""
    moved = parse_date(value)
    return format_date(int(moved + shift)) if moved is not None and format_date(moved) == value else value


def replayed_request_headers(case: Case, step: Step, started: float) -> dict[str, str]:
    """The step's request fields as a replay sends them: a date (one that echoes a recorded Last-Modified) is
    moved as the stand-in origin moves every date (the proxy compares it with its copy's, as it did)."""
    out = dict(step.headers)
    for name in MOVED_IN_REQUESTS:
        if name not in out:
            continue
        out[name] = moved_date(out[name], date_shift(started, case.recorded_start))
    return out


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


# Names the stand-in origin does not send as the origin's: its own (Date, framing, Server), the hop's, the
# Collector's and the run's stamps (the replay's Collector adds its own), and a coding its body does not have.
NOT_REPLAYED = frozenset({"date", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
                          "upgrade", "proxy-connection", "via", "x-cache", "x-cache-lookup", "server",
                          "content-encoding", "content-type"})


def _other_fields(cache: dict, judged: dict[str, str]) -> tuple[str, ...]:
    names = (cache.get("origin_fields") or "").split()
    return tuple(n for n in names if n not in judged and n not in NOT_REPLAYED and not n.startswith("x-spe-"))


def _interim(collector: dict) -> tuple[int, ...]:
    # 100 Continue answers the client's Expect, not the origin's reply: not the origin's to replay
    return tuple(i["status"] for i in collector.get("interim") or () if i.get("status", 100) != 100)


def _fresh_reply(record: dict, offset: float, previous: OriginReply | None) -> OriginReply | None:
    """The origin's reply when the Collector fetched it for this request, else None. A 304 to a
    conditional request revalidated the copy: the earlier reply, its fields updated."""
    collector = record.get("collector") or {}
    cache = collector.get("cache") or {}
    origin = cache.get("origin")
    if origin is None:
        return None
    status, length = collector.get("status") or 200, collector.get("bytes") or 0
    validated_length = cache.get("validated_length")
    if status == 304 and previous is not None:
        headers = {**previous.headers, **origin}
        others = tuple(dict.fromkeys((*previous.other_fields, *_other_fields(cache, headers))))
        return OriginReply(previous.status, headers, previous.body_bytes, offset, others, previous.interim,
                           previous.hop_fields, validated_length)
    if record["method"] == "HEAD" and previous is not None:
        length = previous.body_bytes  # a HEAD reply has no body: the length stays the GET's
    hop = tuple((cache.get("origin_connection") or "").split())
    return OriginReply(status, dict(origin), length, offset, _other_fields(cache, origin), _interim(collector), hop,
                       validated_length)


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
    """Kind from lab.json; options from the run's lab.toml (the lab as it ran) when it is there. An other
    Multiplier's directory (multipliers/NAME) is described by its lab run's files."""
    files = RunDir(lab_run_of(run))
    recorded = (LabJson.of_multiplier_run(run) or LabJson()).proxies.get(name)
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
    records = read_records(log)
    target = next((r for r in records if r.get("id") == request_id), None)
    if target is None:
        raise CaseError(f"no record {request_id} in {log} ({len(records)} records)")
    leg = _leg(target, proxy)
    if "cache" not in leg:
        raise CaseError(f"{log} has no cache verdicts (written before the cache-rule judge): nothing to reproduce")
    if not _rules(leg):
        raise _no_violation(records, target, proxy)
    sequence = request_sequence(records, target)
    parts = urlsplit(target["url"])
    recorded = LabJson.of_multiplier_run(run) or LabJson()
    return Case(source=str(run.resolve()), request_id=request_id, url=target["url"],
                path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                recorded_start=sequence[0]["ts"], proxy=_proxy_of_case(run, proxy),
                expected=tuple(Finding(v["rule"], v["section"], v["reason"]) for v in leg["cache"]["violations"]),
                steps=_steps(sequence), collector=_settings(recorded.collector, COLLECTOR_KEYS),
                multiplier=_settings(recorded.multiplier, MULTIPLIER_KEYS))


def _origin_reply(data: dict) -> OriginReply:
    """From case.json, where JSON has lists for the tuples."""
    return OriginReply(**{**data, "other_fields": tuple(data.get("other_fields", ())),
                          "interim": tuple(data.get("interim", ())), "hop_fields": tuple(data.get("hop_fields", ()))})


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
        steps = tuple(Step(**{**s, "reply": _origin_reply(s["reply"])}) for s in data.pop("steps"))
        return Case(**{**data, "proxy": ProxyOfCase(**data["proxy"]), "steps": steps,
                       "expected": tuple(Finding(**f) for f in data["expected"])})
    except (KeyError, TypeError) as e:
        raise CaseError(f"{file}: not a valid case: {e}") from None
