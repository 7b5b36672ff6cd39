"""Legs sent out of the client's order, per proxy: each proxy gets a client's requests in the order the client
caused, but a leg waits for the proxy's earlier legs only --order-wait (2 s by default; --max-queued-legs when a
burst fills the queue), then goes on another connection and records the earlier requests it overtook
(`overtook`: docs/log-format.md). Without this one hung leg cost every later request of its client; with it, the
hung leg costs only itself, and the legs that overtook it are counted here.

Such a leg is measured like any other (its latency, hit or miss, its comparison); the cache-rule judge only leaves
out what reads the proxy's earlier exchanges when the leg overtook a request for the same URL or an unsafe one
(docs/cache-judge.md), which the section counts apart: overtaking a request for another URL leaves nothing in a
cache that the later one reads. Many here mean the proxy hung or fell far behind the client: its row is measured on
traffic in another order than the client's. A section added through the registry alone: this module and one line
in analysis/sections/__init__.py.
"""

from __future__ import annotations

from analysis.readers.records import COLLECTOR
from analysis.section import TRUST, RunData, Section

# Methods whose success does not invalidate (RFC 9111 4.4; the Multiplier's is_unsafe_method).
SAFE = "('GET', 'HEAD', 'OPTIONS', 'TRACE')"


def count_out_of_order(run: RunData) -> dict[str, dict[str, int]]:
    """Per proxy with such legs: how many legs, how many of them overtook a request for their own URL or an
    unsafe one (`related`: the ones whose cache state may differ from the client's; an overtaken request missing
    from the log counts as such), and how many distinct earlier requests they overtook; each proxy row gains
    `out_of_order_legs`."""
    counts = run.tables.rows(f"""
        WITH o AS (SELECT name, run, id, url, unnest(overtook) AS earlier FROM results
                   WHERE name <> ? AND overtook IS NOT NULL AND array_length(overtook) > 0),
             r AS (SELECT run, id, url, method FROM results WHERE name = ?)
        SELECT o.name, count(DISTINCT [o.run, o.id::VARCHAR]) AS legs,
               count(DISTINCT CASE WHEN r.id IS NULL OR r.url = o.url OR r.method NOT IN {SAFE}
                                   THEN [o.run, o.id::VARCHAR] END),
               count(DISTINCT [o.run, o.earlier::VARCHAR]) AS overtaken
        FROM o LEFT JOIN r ON r.run = o.run AND r.id = o.earlier
        GROUP BY o.name ORDER BY o.name""", [COLLECTOR, COLLECTOR])
    by_proxy = {name: {"legs": legs, "related": related, "overtaken": overtaken}
                for name, legs, related, overtaken in counts}
    for row in run.rows[1:]:
        row["out_of_order_legs"] = by_proxy.get(row["name"], {}).get("legs", 0)
    return by_proxy


def _rows(rep) -> list[dict]:
    return [row for row in rep.rows[1:] if row.get("out_of_order_legs")]


def verdict(rep) -> list[str]:
    data = rep.data["out-of-order"]
    legs = ", ".join(f"{row['name']} {row['out_of_order_legs']:,} of {row['requests']:,} (past "
                     f"{data[row['name']]['overtaken']:,} request(s) it was still answering; "
                     f"{data[row['name']]['related']:,} past one for the same URL or an unsafe one)"
                     for row in _rows(rep))
    return [f"Legs sent out of the client's order (an earlier leg still out after --order-wait): {legs}"]


def details(rep) -> list[str]:
    data = rep.data["out-of-order"]
    rows = _rows(rep)
    width = max(len(row["name"]) for row in rows) + 2
    return ["Legs sent out of the client's order (a leg waits --order-wait for the proxy's earlier legs, then "
            "overtakes them on another connection): legs, those past a request for their URL or an unsafe one "
            "(the cache-rule judge leaves out what reads the cache's earlier exchanges), earlier requests overtaken",
            *(f"  {row['name']:{width}}{row['out_of_order_legs']:>7,}  {data[row['name']]['related']:>7,}"
              f"  {data[row['name']]['overtaken']:>7,}" for row in rows)]


SECTION = Section("out-of-order", "Legs sent out of the client's order", question=TRUST,
                  columns=("out_of_order_legs",), compute=count_out_of_order,
                  applies=lambda rep: bool(_rows(rep)), verdict_text=verdict, details_text=details,
                  summary=lambda rep, rows: {"out_of_order_legs": rep.data["out-of-order"]})
