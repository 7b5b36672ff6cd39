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

from typing import TYPE_CHECKING

from analysis.readers.records import COLLECTOR
from analysis.readers.run_collector import strips_query_terms
from analysis.section import TRUST, RunData, Section
from spe_tools.rundir.port_usage import PortUsage

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "bypass"  # the section's name: its anchor, and the key of its data in Report.data


def of(report: Report) -> dict:
    """Proxy -> evidence it bypassed its Collector port (this section's data)."""
    return report.data.get(NAME, {})


# What a bypassing proxy's row must not show (they would be computed from a port it did not use).

CACHE_FIGURES = ("hit_ratio", "byte_hit_ratio", "rel_bandwidth_received", "rel_bandwidth_sent")


DELIVERED = "p.status IS NOT NULL AND p.error IS NULL"


def _with_reference(tables: ReplyQueries) -> str:
    """The proxies' replies (p), each beside the Collector's reply to the same request (c: ref_status, ref_fetch).
    ("fetch" is quoted: FETCH is SQL.)"""
    return f"""results p JOIN (SELECT run, id, status AS ref_status, "fetch" AS ref_fetch FROM results
                               WHERE name = '{COLLECTOR}') c USING (run, id)"""


def stamp_evidence(tables: ReplyQueries) -> dict[str, tuple[int, int]]:
    """Per proxy: (replies without the Collector's stamp, replies the stamp rule applies to)."""
    return {name: (unstamped, checked) for name, unstamped, checked in tables.rows(f"""
        SELECT p.name, count(*) FILTER (p."fetch" IS NULL), count(*) FROM {_with_reference(tables)}
        WHERE p.name <> '{COLLECTOR}' AND {DELIVERED} AND c.ref_fetch IS NOT NULL AND p.status <> 304
              AND p.status >= 200 AND p.status < 500
        GROUP BY p.name""")}


def silent_port_evidence(tables: ReplyQueries, name: str, usage: dict[str, PortUsage],
                         strip_query_terms: bool = False) -> int:
    """Replies to requests the Collector fetched from the origin, answered with the reference's status,
    while this proxy's Collector port saw no request at all (0 when it saw one, or when lab.json names
    no port for it: then nothing says where its requests would have arrived). URLs are compared as the
    Collector logs them (without their query when it strips them)."""
    direct = usage.get("direct")
    if direct is None or not direct.origin_urls or name not in usage or usage[name].requests:
        return 0
    tables.keep_rows("origin_urls", {"url": "VARCHAR"}, [(url,) for url in sorted(direct.origin_urls)])
    try:
        return tables.value(f"""
            SELECT count(*) FROM {_with_reference(tables)}
            WHERE p.name = ? AND {DELIVERED} AND p.status = c.ref_status AND p.status < 500
                  AND {logged_url("p.url", strip_query_terms)} IN (SELECT url FROM origin_urls)""", [name])
    finally:
        tables.drop("origin_urls")


def logged_url(url: str, strip_query_terms: bool) -> str:
    """The SQL of a record's URL as the Collector's access.log shows it (spe_tools.rundir.access_log.as_logged:
    cut after its '?' when the Collector strips queries)."""
    if not strip_query_terms:
        return url
    return f"CASE WHEN contains({url}, '?') THEN left({url}, strpos({url}, '?')) ELSE {url} END"


def find_bypasses(tables: ReplyQueries, names: list[str], usage: dict[str, PortUsage] | None,
                  strip_query_terms: bool = False) -> dict[str, dict]:
    """Per proxy with evidence of a bypass: the counts and what to tell the user."""
    found = {}
    stamps = stamp_evidence(tables)
    for name in names:
        unstamped, checked = stamps.get(name, (0, 0))
        silent = silent_port_evidence(tables, name, usage, strip_query_terms) if usage else 0
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
    found = find_bypasses(run.tables, run.records.proxies, run.usage, strips_query_terms(run.lab))
    withhold_cache_figures(run.rows, found)
    for row in run.rows[1:]:
        evidence = found.get(row["name"], {})
        row["bypassed_replies"] = max(evidence.get("unstamped", 0), evidence.get("silent_port_replies", 0))
    return found


SECTION = Section(
    NAME, "Proxies that bypassed their Collector port", question=TRUST, columns=("bypassed_replies",),
    compute=_withhold_bypassed, applies=lambda rep: bool(of(rep)), verdict_text=lambda rep: bypass_lines(of(rep)),
    template="sections/bypass.html.j2", summary=lambda rep, rows: {"bypass": of(rep)})
