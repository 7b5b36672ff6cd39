"""Hit ratios and bandwidth of each proxy under test, from what reached its Collector port.

A proxy answers a request from its cache (a hit) or forwards it to the Collector. So, per
proxy: hit ratio = 1 - requests its clients' requests caused on its Collector port / responses it
delivered; byte hit ratio = 1 - bytes those requests pulled from the Collector / bytes it delivered
(headers and bodies). Only the requests of responses it delivered count: a Collector request tagged
(X-SPE-Request) with a client request whose leg at this proxy failed (no reply, a read that failed, e.g. a
refused PUT) is neither side of the ratio. A prefetcher's own requests (analysis/prefetch.py) are not its clients': a
request a prefetch served is a hit, and the prefetch's cost shows in the relative bandwidth = all
bytes it pulled (or sent) / bytes the direct path pulled (sent).
Ratios are clipped to [0, 1]; they are None without a Collector log or delivered responses.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import ACCESS_LOG
from spe_tools.rundir.port_usage import PortUsage, parse_access_log


def failed_legs(results: pl.DataFrame) -> dict[str, set[str]]:
    """Per proxy, the tags of the client requests whose leg there delivered no response (the rows
    cache_columns leaves out of the responses)."""
    failed = results.filter((pl.col("status").is_null() | pl.col("error").is_not_null()) & pl.col("tag").is_not_null())
    out: dict[str, set[str]] = {}
    for name, tag in failed.select("name", "tag").iter_rows():
        out.setdefault(name, set()).add(tag)
    return out


def collector_usage(run: Path, results: pl.DataFrame | None = None) -> tuple[dict[str, PortUsage], int] | None:
    """Usage per port name from the run's lab.json and the Collector's access.log, if present (with the
    run's `results`, the requests of failed legs counted apart: failed_legs)."""
    lab_json = LabJson.read(run)
    if lab_json is None:
        return None
    log = Path(run) / (lab_json.collector.access_log or ACCESS_LOG)
    if not log.exists():
        return None
    return parse_access_log(log, lab_json.collector.port_names(), failed_legs(results) if results is not None else None)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def cache_columns(results: pl.DataFrame, name: str, usage: dict[str, PortUsage] | None,
                  prefetch_requests: int = 0, prefetch_bytes: int = 0) -> dict:
    """hit_ratio, byte_hit_ratio, relative bandwidth received/sent for one proxy (or the direct path);
    `prefetch_requests` and `prefetch_bytes` are the proxy's own, left out of its hit ratios."""
    empty = {"collector_requests": None, "hit_ratio": None, "byte_hit_ratio": None,
             "rel_bandwidth_received": None, "rel_bandwidth_sent": None}
    if usage is None:
        return empty
    direct = usage.get("direct")
    key = "direct" if name.startswith("Collector") else name
    mine = usage.get(key, PortUsage())
    part = results.filter((pl.col("name") == name) & pl.col("status").is_not_null() & pl.col("error").is_null())
    delivered = int((part["bytes"].fill_null(0) + part["header_bytes"].fill_null(0)).sum() or 0)
    out = dict(empty, collector_requests=mine.requests)
    if key == "direct":  # the reference path: its bandwidth is the unit, it has no cache of its own
        out["rel_bandwidth_received"] = out["rel_bandwidth_sent"] = 1.0
        return out
    if part.height:
        out["hit_ratio"] = _clip(1 - (mine.requests - mine.failed_leg_requests - prefetch_requests) / part.height)
    if delivered:
        pulled = mine.bytes_to_client - mine.failed_leg_bytes - prefetch_bytes
        out["byte_hit_ratio"] = _clip(1 - pulled / delivered)
    if direct and direct.bytes_to_client:
        out["rel_bandwidth_received"] = mine.bytes_to_client / direct.bytes_to_client
    if direct and direct.bytes_from_client:
        out["rel_bandwidth_sent"] = mine.bytes_from_client / direct.bytes_from_client
    return out
