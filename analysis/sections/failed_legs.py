"""Legs without a complete reply, per proxy and why: the Multiplier's `error` of each leg that delivered no
complete reply (timeout, refused, reset, closed, busy, body too large...: docs/log-format.md).

The per-proxy table's latencies, hit ratios and bandwidth count complete replies only (`responses`), so a
proxy that lost legs is measured on fewer requests than the others: how many, and why, says how far to trust
its row. A section added through the registry alone: this module and one line in analysis/sections/__init__.py.
"""

from __future__ import annotations

from analysis.readers.records import COLLECTOR
from analysis.section import TRUST, RunData, Section


def count_failed_legs(run: RunData) -> dict[str, dict[str, int]]:
    """Per proxy with failed legs: error -> legs, most frequent first; each proxy row gains `failed_legs` (how
    many) and `failed_leg_errors` ("error n; error n")."""
    counts = run.tables.rows("""
        SELECT name, coalesce(error, 'no reply') AS error, count(*) AS n FROM results
        WHERE name <> ? AND (status IS NULL OR error IS NOT NULL)
        GROUP BY ALL ORDER BY name, n DESC, error""", [COLLECTOR])
    by_proxy: dict[str, dict[str, int]] = {}
    for name, error, n in counts:
        by_proxy.setdefault(name, {})[error] = n
    for row in run.rows[1:]:
        errors = by_proxy.get(row["name"], {})
        row.update(failed_legs=sum(errors.values()), failed_leg_errors="; ".join(f"{e} {n}" for e, n in errors.items()))
    return by_proxy


def _failed_rows(rep) -> list[dict]:
    return [row for row in rep.rows[1:] if row.get("failed_legs")]


def verdict(rep) -> list[str]:
    failed = ", ".join(f"{row['name']} {row['failed_legs']:,} of {row['requests']:,}" for row in _failed_rows(rep))
    return [f"Legs without a complete reply (left out of the latency and cache columns): {failed}"]


def details(rep) -> list[str]:
    rows = _failed_rows(rep)
    width = max(len(row["name"]) for row in rows) + 2
    return ["Legs without a complete reply, by the Multiplier's error (docs/log-format.md):",
            *(f"  {row['name']:{width}}{row['failed_legs']:>7,}  {row['failed_leg_errors']}" for row in rows)]


SECTION = Section("failed-legs", "Legs without a complete reply", question=TRUST,
                  columns=("failed_legs", "failed_leg_errors"), compute=count_failed_legs,
                  applies=lambda rep: bool(_failed_rows(rep)), verdict_text=verdict, details_text=details,
                  summary=lambda rep, rows: {"failed_legs": rep.data["failed-legs"]})
