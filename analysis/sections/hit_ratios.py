"""Hit ratios and bandwidth of each proxy under test, from what reached its Collector port.

A proxy answers a request from its cache (a hit) or forwards it to the Collector. So, per
proxy: hit ratio = 1 - requests its clients' requests caused on its Collector port / responses it
delivered; byte hit ratio = 1 - bytes those requests pulled from the Collector / bytes it delivered
(headers and bodies). Only the requests of responses it delivered count: a Collector request tagged
(X-SPE-Request) with a client request whose leg at this proxy failed (no reply, a read that failed, e.g. a
refused PUT) is neither side of the ratio. A prefetcher's own requests (prefetch.py, its columns added first) are not
its clients': a request a prefetch served is a hit, and the prefetch's cost shows in the relative bandwidth = all
bytes it pulled (or sent) / bytes the direct path pulled (sent).
Ratios are clipped to [0, 1]; they are None without a Collector log or delivered responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.section import RunData, Section
from spe_tools.rundir.port_usage import PortUsage

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries


def delivered(tables: ReplyQueries) -> dict[str, tuple[int, int]]:
    """Per reply source: (responses it delivered, their bytes, headers and bodies)."""
    return {name: (n, int(size or 0)) for name, n, size in tables.rows(
        "SELECT name, count(*), sum(coalesce(bytes, 0) + coalesce(header_bytes, 0)) FROM results "
        "WHERE status IS NOT NULL AND error IS NULL GROUP BY name")}


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def cache_columns(responses: tuple[int, int], name: str, usage: dict[str, PortUsage] | None,
                  prefetch_requests: int = 0, prefetch_bytes: int = 0) -> dict:
    """hit_ratio, byte_hit_ratio, relative bandwidth received/sent for one proxy (or the direct path), from the
    responses it delivered and their bytes (`delivered`); `prefetch_requests` and `prefetch_bytes` are the
    proxy's own, left out of its hit ratios."""
    empty = {"collector_requests": None, "hit_ratio": None, "byte_hit_ratio": None,
             "rel_bandwidth_received": None, "rel_bandwidth_sent": None}
    if usage is None:
        return empty
    direct = usage.get("direct")
    key = "direct" if name.startswith("Collector") else name
    mine = usage.get(key, PortUsage())
    responded, delivered_bytes = responses
    out = dict(empty, collector_requests=mine.requests)
    if key == "direct":  # the reference path: its bandwidth is the unit, it has no cache of its own
        out["rel_bandwidth_received"] = out["rel_bandwidth_sent"] = 1.0
        return out
    if responded:
        out["hit_ratio"] = _clip(1 - (mine.requests - mine.failed_leg_requests - prefetch_requests) / responded)
    if delivered_bytes:
        pulled = mine.bytes_to_client - mine.failed_leg_bytes - prefetch_bytes
        out["byte_hit_ratio"] = _clip(1 - pulled / delivered_bytes)
    if direct and direct.bytes_to_client:
        out["rel_bandwidth_received"] = mine.bytes_to_client / direct.bytes_to_client
    if direct and direct.bytes_from_client:
        out["rel_bandwidth_sent"] = mine.bytes_from_client / direct.bytes_from_client
    return out


HIT_RATIO_COLUMNS = ("collector_requests", "hit_ratio", "byte_hit_ratio", "rel_bandwidth_received",
                     "rel_bandwidth_sent")


def add_hit_ratios(run: RunData) -> None:
    """Each row's hit ratios and bandwidth, a prefetcher's own requests left out (its prefetch columns, added
    before these)."""
    responses = delivered(run.tables) if run.usage is not None else {}
    for row in run.rows:
        row.update(cache_columns(responses.get(row["name"], (0, 0)), row["name"], run.usage,
                                 row.get("prefetch_requests") or 0, row.get("prefetch_bytes") or 0))


# Columns of the per-proxy table itself (the text and HTML tables show them): nothing to show of its own.
SECTION = Section("hit-ratios", "Hit ratios", columns=HIT_RATIO_COLUMNS, rows=add_hit_ratios,
                  applies=lambda rep: False)
