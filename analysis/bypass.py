"""Proxies whose replies did not come through their Collector port: their cache numbers would be wrong.

A proxy's hit ratio, byte hit ratio and bandwidth come from what reached its own Collector port
(cache_behaviour.py). A proxy that fetches from the origin directly (Traffic Server does, for URLs
naming 127.0.0.1) shows a hit ratio of 1 and no bandwidth, silently. Two independent evidences:

- the stamp: every reply the Collector sends carries `X-SPE-Fetch`, stored with the object, so
  every cached copy carries it too; the Multiplier logs it as `fetch`. A proxy reply without it,
  where the Collector's reply to the same request had one, did not come through the Collector.
  A 304 (a proxy builds it from a short header list) and the proxy's own 5xx errors prove nothing.
- the Collector's access.log: a proxy whose Collector port saw no request at all while it answered
  requests the Collector had to fetch from the origin (with the same status as the reference).

Such a proxy is named, and its hit ratio, byte hit ratio and bandwidth are not computed.
"""

from __future__ import annotations

import polars as pl

from analysis.collector_log import strips_query_terms
from analysis.records import COLLECTOR
from analysis.report_data import BYPASS
from analysis.section import TRUST, RunData, Section
from spe_tools.rundir.access_log import as_logged
from spe_tools.rundir.port_usage import PortUsage

# What a bypassing proxy's row must not show (they would be computed from a port it did not use).
CACHE_FIGURES = ("hit_ratio", "byte_hit_ratio", "rel_bandwidth_received", "rel_bandwidth_sent")


def _delivered(prefix: str = "") -> pl.Expr:
    return pl.col(f"{prefix}status").is_not_null() & pl.col(f"{prefix}error").is_null()


def _with_reference(results: pl.DataFrame, name: str) -> pl.DataFrame:
    """One proxy's replies, each beside the Collector's reply to the same request (columns ref_*)."""
    ref = results.filter(pl.col("name") == COLLECTOR).select(
        "id", *[pl.col(c).alias(f"ref_{c}") for c in ("status", "error", "fetch")])
    return results.filter(pl.col("name") == name).join(ref, on="id", how="inner")


def stamp_evidence(results: pl.DataFrame, name: str) -> tuple[int, int]:
    """(replies without the Collector's stamp, replies the stamp rule applies to) for one proxy."""
    part = _with_reference(results, name).filter(
        _delivered() & pl.col("ref_fetch").is_not_null() & (pl.col("status") != 304)
        & (pl.col("status") >= 200) & (pl.col("status") < 500))
    return part.filter(pl.col("fetch").is_null()).height, part.height


def silent_port_evidence(results: pl.DataFrame, name: str, usage: dict[str, PortUsage],
                         strip_query_terms: bool = False) -> int:
    """Replies to requests the Collector fetched from the origin, answered with the reference's status,
    while this proxy's Collector port saw no request at all (0 when it saw one, or when lab.json names
    no port for it: then nothing says where its requests would have arrived). URLs are compared as the
    Collector logs them (without their query when it strips them)."""
    direct = usage.get("direct")
    if direct is None or not direct.origin_urls or name not in usage or usage[name].requests:
        return 0
    part = _with_reference(results, name).filter(
        _delivered() & (pl.col("status") == pl.col("ref_status")) & (pl.col("status") < 500)
        & logged_urls(strip_query_terms).is_in(list(direct.origin_urls)))
    return part.height


def logged_urls(strip_query_terms: bool) -> pl.Expr:
    """The records' URLs as the Collector's access.log shows them (spe_tools.rundir.access_log.as_logged)."""
    if not strip_query_terms:
        return pl.col("url")
    return pl.col("url").map_elements(lambda url: as_logged(url, True), return_dtype=pl.Utf8)


def find_bypasses(results: pl.DataFrame, names: list[str], usage: dict[str, PortUsage] | None,
                  strip_query_terms: bool = False) -> dict[str, dict]:
    """Per proxy with evidence of a bypass: the counts and what to tell the user."""
    found = {}
    for name in names:
        unstamped, checked = stamp_evidence(results, name)
        silent = silent_port_evidence(results, name, usage, strip_query_terms) if usage else 0
        messages = []
        if unstamped:
            messages.append(f"{name}: {unstamped:,} of {checked:,} replies did not come through its Collector port "
                            "(no Collector stamp); hit ratio and bandwidth not computed")
        if silent:
            messages.append(f"{name}: its Collector port saw no request while it answered {silent:,} requests the "
                            "Collector fetched from the origin; hit ratio and bandwidth not computed")
        if messages:
            found[name] = {"unstamped": unstamped, "stamp_checked": checked, "silent_port_replies": silent,
                           "messages": messages}
    return found


def withhold_cache_figures(rows: list[dict], bypasses: dict[str, dict]) -> None:
    """Blank the figures a bypassing proxy's Collector port cannot give (the report prints '-')."""
    for row in rows:
        if row["name"] in bypasses:
            row.update(dict.fromkeys(CACHE_FIGURES))


def bypass_lines(bypasses: dict[str, dict]) -> list[str]:
    return [m for found in bypasses.values() for m in found["messages"]]


def _withhold_bypassed(run: RunData) -> dict[str, dict]:
    """The evidence per proxy; a bypassing proxy's row loses its cache figures and counts the replies shown."""
    found = find_bypasses(run.records.results, run.records.proxies, run.usage, strips_query_terms(run.lab))
    withhold_cache_figures(run.rows, found)
    for row in run.rows[1:]:
        evidence = found.get(row["name"], {})
        row["bypassed_replies"] = max(evidence.get("unstamped", 0), evidence.get("silent_port_replies", 0))
    return found


SECTION = Section(
    BYPASS, "Proxies that bypassed their Collector port", question=TRUST, columns=("bypassed_replies",),
    compute=_withhold_bypassed, applies=lambda rep: bool(rep.bypass), verdict_text=lambda rep: bypass_lines(rep.bypass),
    template="sections/bypass.html.j2", summary=lambda rep, rows: {"bypass": rep.bypass})
