"""Each proxy's figures per Multiplier, beside the overall table: in a report of several Multipliers' runs (`./spe
report RUN1 RUN2 ...`, client groups behind different uplinks or on different hosts), whether a proxy's standing
holds for every group of clients or only on average. The same definitions as the per-proxy table (analysis/
stats_sql.py), over each Multiplier's replies (the records' `multiplier`, else their run's name)."""

from __future__ import annotations

from analysis.section import BEST, RunData, Section, fmt
from analysis.stats_sql import proxy_table

NAME = "per-multiplier"
# What the table shows of each (Multiplier, proxy): the per-proxy table's columns a comparison across client
# groups reads first.
COLUMNS = (("requests", "requests"), ("responses", "responses"), ("ok_pct", "match %"),
           ("latency_median_ms", "median ms"), ("latency_p90_ms", "p90 ms"), ("latency_mean_ms", "mean ms"))


def per_multiplier(run: RunData) -> dict[str, list[dict]]:
    """Multiplier name -> its per-proxy rows (the Collector's first), when the replies name more than one."""
    names = [m for (m,) in run.tables.rows("SELECT multiplier FROM results WHERE multiplier IS NOT NULL "
                                           f"GROUP BY multiplier ORDER BY min({run.tables.log_order})")]
    if len(names) < 2:
        return {}
    tables: dict[str, list[dict]] = {}
    try:
        for name in names:
            run.tables.keep("multiplier_results", "SELECT * FROM results WHERE multiplier = ?", [name])
            rows = proxy_table(run.tables, run.records.proxies, "multiplier_results")
            tables[name] = [{"name": row["name"], **{key: row[key] for key, _ in COLUMNS}} for row in rows]
    finally:
        run.tables.drop("multiplier_results")
    return tables


def of(rep) -> dict[str, list[dict]]:
    return rep.data.get(NAME) or {}


def verdict(rep) -> list[str]:
    """Who is fastest (median) at each Multiplier: a ranking that changes from one client group to another is
    worth knowing before the overall one is believed."""
    fastest = []
    for multiplier, rows in of(rep).items():
        timed = [row for row in rows[1:] if row["latency_median_ms"] is not None]
        if timed:
            best = min(timed, key=lambda row: row["latency_median_ms"])
            fastest.append(f"{multiplier}: {best['name']} ({fmt(best['latency_median_ms'])} ms)")
    return [f"Lowest median latency per Multiplier: {'; '.join(fastest)}"] if fastest else []


def details(rep) -> list[str]:
    out = [f"Per Multiplier ({len(of(rep))}): each proxy's figures over its clients' requests"]
    for multiplier, rows in of(rep).items():
        width = max(len(row["name"]) for row in rows) + 2
        out += [f"  {multiplier}:", "    " + " " * width + "".join(f"{label:>12}" for _, label in COLUMNS),
                *("    " + f"{row['name']:{width}}" + "".join(f"{fmt(row[key]):>12}" for key, _ in COLUMNS)
                  for row in rows)]
    return out


SECTION = Section(NAME, "Per Multiplier", question=BEST, compute=per_multiplier, applies=lambda rep: bool(of(rep)),
                  verdict_text=verdict, details_text=details,
                  summary=lambda rep, rows: {"per_multiplier": of(rep)})
