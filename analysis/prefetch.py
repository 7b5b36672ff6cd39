"""Prefetching measured from outside the proxy: the requests a proxy under test sent to its Collector port
that no client request caused, and what became of them.

Attribution. The Multiplier tags every client request (X-SPE-Request) and every proxy forwards the tag
with the requests the client's request makes it send; the Collector logs it (spe_tools/rundir/access_log.py).
A line on a proxy's port is that proxy's own doing (a prefetch) unless its tag names a client request for the same
URL (the method may differ: Varnish and nginx fetch a client's HEAD with a GET, to fill their caches).
On a port where the proxy forwards tags (any of its lines has one), an untagged line is its own: the agent
of a prefetcher sends none, and its request may well overlap the client's (the client's request then joins
the prefetch in flight: a late prefetch, not a client miss). On a port without any tag (a proxy that
drops the header, an older log), an untagged line is the client's when a client request for
that URL could have had a leg to that proxy in flight while the Collector served it: the Collector's
transaction lies inside the leg that caused it, since its reply passes through the proxy before the leg
ends, and a leg runs between the client request's arrival (`ts`) and, at the latest, the Collector's
reply time plus the leg's own (`collector.total_us` + the leg's `total_us`: in sequential mode the leg
starts when the Collector's reply is complete). Both clocks are this machine's wall clock;
WINDOW_SLACK_S allows for the access log's millisecond resolution. Everything else is a prefetch.

What became of a prefetch: the first client request for its URL after the prefetch started, within
HORIZON_S of its end. Found: used, its lead time is the client request's arrival minus the prefetch's
end (negative: late, the client asked before the prefetch finished). Not found: wasted, its reply bytes
wasted bandwidth. Precision is the share of prefetches used.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from analysis.collector_log import strips_query_terms
from analysis.section import Section
from analysis.stats import mean_ci, percentile
from spe_tools.rundir.access_log import BadLineError, as_logged, read_access_log
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import PREFETCH_AGENT_LOG, RunDir

PREFETCH_COLUMNS = ["prefetch_requests", "prefetch_rate_per_s", "prefetch_bytes", "prefetch_precision",
                    "prefetch_wasted_bytes", "prefetch_lead_ms_p10", "prefetch_lead_ms_p50", "prefetch_lead_ms_p90",
                    "prefetch_late", "prefetch_horizon_s", "twin_of",
                    "twin_gain_requests", "twin_gain_ms_mean", "twin_gain_ci_low_ms", "twin_gain_ci_high_ms",
                    "prefetch_agent_fetches", "prefetch_agent_bytes"]
HORIZON_S = 300.0  # a prefetch not asked for within 5 minutes of its end is counted as wasted
WINDOW_SLACK_S = 0.002  # the access log's times are milliseconds


@dataclass(frozen=True)
class PortLine:
    """One request a proxy sent to its Collector port (from the Collector's access.log)."""

    start: float  # unix seconds: end minus the transaction's elapsed time
    end: float
    method: str
    url: str
    bytes: int  # reply bytes the Collector sent
    tag: str  # X-SPE-Request, "" when the request carried none


@dataclass(frozen=True)
class ClientRequest:
    ts: float  # when the Multiplier read it
    method: str
    url: str
    legs: dict[str, tuple[float, float]] = field(default_factory=dict)  # proxy -> when its leg may have run
    latency_ms: dict[str, float] = field(default_factory=dict)  # proxy -> its response time, delivered legs only


def parse_port_lines(access_log: Path, port_names: dict[int, str]) -> dict[str, list[PortLine]]:
    """Lines per Collector port name (lines that do not parse are left out)."""
    out: dict[str, list[PortLine]] = defaultdict(list)
    for r in read_access_log(access_log):
        if not isinstance(r, BadLineError):
            out[port_names.get(r.port, str(r.port))].append(PortLine(r.start, r.end, r.method, r.url, r.bytes_sent,
                                                                      r.tag))
    return out


def client_requests(log: Path, strip_query_terms: bool = False) -> dict[str, ClientRequest]:
    """The Multiplier's records by request tag (records without a tag made no upstream request), each URL
    in the form the Collector logs it (without its query when it strips them)."""
    out = {}
    with open(log) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not r.get("tag"):
                continue
            reference_s = ((r.get("collector") or {}).get("total_us") or 0) / 1e6
            legs = {p["name"]: (r["ts"], r["ts"] + reference_s + (p.get("total_us") or 0) / 1e6)
                    for p in r.get("proxies", [])}
            latency = {p["name"]: p["total_us"] / 1000 for p in r.get("proxies", [])
                       if p.get("status") is not None and not p.get("error") and p.get("total_us") is not None}
            out[r["tag"]] = ClientRequest(r["ts"], r["method"], upstream_url(r, strip_query_terms), legs, latency)
    return out


def upstream_url(record: dict, strip_query_terms: bool = False) -> str:
    """The URL as the Collector logs it: the record's (an intercepted https request is logged by the
    Collector under its https URL too, patch 0014), cut after its '?' when the Collector strips queries."""
    return as_logged(record["url"], strip_query_terms)


def caused_by_client(line: PortLine, proxy: str, tagged: dict[str, ClientRequest],
                     in_flight: dict[str, list[tuple[float, float]]]) -> bool:
    if line.tag:
        req = tagged.get(line.tag)
        return req is not None and req.url == line.url
    return any(start - WINDOW_SLACK_S <= line.start and line.end <= end + WINDOW_SLACK_S
               for start, end in in_flight.get(line.url, ()))


def prefetches(lines: list[PortLine], proxy: str, requests: dict[str, ClientRequest]) -> list[PortLine]:
    """The lines on this proxy's port that no client request caused."""
    in_flight: dict[str, list[tuple[float, float]]] = defaultdict(list)
    if not any(line.tag for line in lines):  # the proxy drops the tag: the legs' windows decide
        for req in requests.values():
            if proxy in req.legs:
                in_flight[req.url].append(req.legs[proxy])
    return [line for line in lines if not caused_by_client(line, proxy, requests, in_flight)]


def account(prefetched: list[PortLine], requests: dict[str, ClientRequest], horizon_s: float = HORIZON_S,
            served: list[ClientRequest] | None = None) -> dict:
    """The prefetch columns of one proxy; `served` collects the client requests its prefetches served."""
    asked: dict[str, list[ClientRequest]] = defaultdict(list)
    for req in requests.values():
        asked[req.url].append(req)
    for reqs in asked.values():
        reqs.sort(key=lambda r: r.ts)
    leads, late, used, wasted_bytes = [], 0, 0, 0
    for p in prefetched:
        first = next((r for r in asked.get(p.url, ()) if p.start <= r.ts <= p.end + horizon_s), None)
        if first is None:
            wasted_bytes += p.bytes
            continue
        used += 1
        leads.append((first.ts - p.end) * 1000)
        late += first.ts < p.end
        if served is not None and first not in served:
            served.append(first)
    n = len(prefetched)
    times = [r.ts for r in requests.values()]
    span = max(times) - min(times) if len(times) > 1 else 0.0
    return {"prefetch_requests": n, "prefetch_rate_per_s": n / span if span > 0 else None,
            "prefetch_bytes": sum(p.bytes for p in prefetched),
            "prefetch_precision": used / n if n else None, "prefetch_wasted_bytes": wasted_bytes,
            "prefetch_lead_ms_p10": percentile(leads, 0.1), "prefetch_lead_ms_p50": percentile(leads, 0.5),
            "prefetch_lead_ms_p90": percentile(leads, 0.9), "prefetch_late": late,
            "prefetch_horizon_s": horizon_s}


def prefetch_columns(run: Path, proxies: list[str]) -> dict[str, dict]:
    """Per proxy, its prefetch columns; empty without the run's lab.json, access.log or log, or without
    request tags in the log."""
    files = RunDir(run)
    topology = LabJson.read(run)
    if not (topology is not None and files.access_log.exists() and files.multiplier_log.exists()):
        return {}
    twins = topology.twins()
    requests = client_requests(files.multiplier_log, strips_query_terms(topology))
    if not requests:  # no record has a tag (a log from before tags): what the clients caused is unknown
        return {}
    lines = parse_port_lines(files.access_log, topology.collector.port_names())
    out = {}
    for name in proxies:
        served: list[ClientRequest] = []
        out[name] = account(prefetches(lines.get(name, []), name, requests), requests, served=served)
        if name in twins:
            out[name] |= twin_gain(served, name, twins[name])
        spec = topology.proxies.get(name)
        out[name] |= agent_counts(files / spec.dir / PREFETCH_AGENT_LOG if spec and spec.dir else None)
    return out


def agent_counts(path: Path | None) -> dict:
    """What a prefetcher's own log says it fetched (squid-prefetch's agent: one JSON line per fetch), as extra
    evidence beside SPE's count: its fetches include the client pages it refetches to parse (hits in its own
    cache, which never reach the Collector) and fetches its cache answered, so it counts more than SPE does."""
    if path is None or not path.exists():
        return {}
    fetches, fetched = 0, 0
    for line in path.read_text(errors="replace").splitlines():
        try:
            fetched += int(json.loads(line).get("bytes") or 0)
        except (ValueError, AttributeError):
            continue
        fetches += 1
    return {"prefetch_agent_fetches": fetches, "prefetch_agent_bytes": fetched}


def twin_gain(served: list[ClientRequest], proxy: str, twin: str) -> dict:
    """The twin's response time minus the prefetcher's on the client requests a prefetch served (positive:
    the prefetcher was faster), paired request by request, with its 95 % interval."""
    gains = [req.latency_ms[twin] - req.latency_ms[proxy] for req in served
             if proxy in req.latency_ms and twin in req.latency_ms]
    ci = mean_ci(gains)
    return {"twin_of": twin, "twin_gain_requests": len(gains),
            "twin_gain_ms_mean": sum(gains) / len(gains) if gains else None,
            "twin_gain_ci_low_ms": ci[0] if ci else None, "twin_gain_ci_high_ms": ci[1] if ci else None}


def _lead_spread(row: dict) -> str:
    low, high = row.get("prefetch_lead_ms_p10"), row.get("prefetch_lead_ms_p90")
    return "" if low is None or high is None else f" (p10 {low:,.0f}, p90 {high:,.0f})"


def prefetch_text(rows: list[dict]) -> list[str]:
    """The report's prefetch lines: every proxy that sent requests of its own."""
    active = [r for r in rows if r.get("prefetch_requests")]
    if not active:
        return []
    out = [f"Prefetching (requests a proxy sent that no client request caused; used = asked for within "
           f"{active[0]['prefetch_horizon_s']:g} s):"]
    for r in active:
        lead = r["prefetch_lead_ms_p50"]
        rate = r.get("prefetch_rate_per_s")
        text = (f"  {r['name']}: {r['prefetch_requests']:,} prefetches"
                + (f" ({rate:.2f}/s over the run)" if rate is not None else "")
                + f", {r['prefetch_bytes']:,} bytes; precision "
                f"{100 * r['prefetch_precision']:.1f} %; wasted {r['prefetch_wasted_bytes']:,} bytes; lead time "
                f"median {'-' if lead is None else f'{lead:,.0f} ms'}{_lead_spread(r)}; {r['prefetch_late']:,} late")
        if r.get("twin_gain_ms_mean") is not None:
            low, high = r["twin_gain_ci_low_ms"], r["twin_gain_ci_high_ms"]
            interval = f" [{low:+.1f}, {high:+.1f}]" if low is not None else ""
            text += (f"; {r['twin_gain_ms_mean']:+.1f} ms{interval} faster than its twin {r['twin_of']} on the "
                     f"{r['twin_gain_requests']:,} requests its prefetches served")
        if r.get("prefetch_agent_fetches") is not None:
            text += (f" (its own log: {r['prefetch_agent_fetches']:,} fetches, {r['prefetch_agent_bytes']:,} bytes, "
                     "counting those its cache answered)")
        out.append(text)
    return out


def _prefetchers(rep) -> list[dict]:
    return [r for r in rep.rows[1:] if r.get("prefetch_requests")]


# No compute: the report reads the prefetch columns before the per-proxy table's hit ratios, which leave a
# prefetcher's own requests out (analysis/cache_behaviour.py).
SECTION = Section("prefetching", "Prefetching", columns=tuple(PREFETCH_COLUMNS),
                  applies=lambda rep: bool(_prefetchers(rep)), details_text=lambda rep: prefetch_text(rep.rows),
                  template="sections/prefetching.html.j2", context=lambda rep: {"prefetchers": _prefetchers(rep)})
