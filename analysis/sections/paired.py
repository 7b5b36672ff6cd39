"""Paired comparison of the proxies under test: each answered the same client requests, so they are
compared request by request. The paired difference (A's latency minus B's on the same request) removes
the spread between requests (a 1 MB miss and a small hit), which swamps any difference between proxies
in an unpaired table. Each pair gets the mean and the median difference with 95 % confidence
intervals, and the ranking orders proxies only where the difference is significant: the rest are ties.
The report shows the ranking as its answer to "which proxy is best", and the pairs as a matrix, one cell per pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.readers.records import COLLECTOR
from analysis.section import BEST, RunData, Section
from analysis.stats_sql import MS_PER_US, quantile, values_at_ranks
from spe_tools.summary_stats import mean_ci_of, median_ci_ranks, quantile_ranks

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "paired"  # the section's name: its anchor, and the key of its data in Report.data


def pairs_of(report: Report) -> list[dict]:
    """Paired differences per pair of proxies (this section's data)."""
    return report.data.get(NAME, {}).get("pairs", [])


def ranking_of(report: Report) -> list[list[str]]:
    """Tiers, fastest first; a tier is a tie (this section's data)."""
    return report.data.get(NAME, {}).get("ranking", [])


def latency_by_request(tables: ReplyQueries, names: list[str]) -> dict[str, str]:
    """A temporary table `paired`: one row per request (run, id), one column per proxy of `names`, its response time in
    ms (null where it failed; the first reply in the log's order where it answered twice). Returns each proxy's
    column."""
    columns = {name: f"c{i}" for i, name in enumerate(names)}
    # The struct keeps a null time in the running (arg_min skips a null argument; arg_min_null has no Spark name).
    pivot = ", ".join(f"(arg_min(struct_pack(ms := ms), o) FILTER (name = ?)).ms AS {column}"
                      for column in columns.values())
    tables.keep("paired", f"""
        SELECT run, id, {pivot or "NULL AS none"} FROM (
            SELECT run, id, name, total_us * {MS_PER_US}::DOUBLE AS ms, {tables.log_order} AS o FROM results
            WHERE name <> '{COLLECTOR}' AND status IS NOT NULL AND error IS NULL)
        GROUP BY run, id""", list(columns))
    return columns


def pair(tables: ReplyQueries, columns: dict[str, str], a: str, b: str) -> dict:
    """A's latency minus B's over the requests both answered: n, mean and median with 95 % CIs (the median's and
    its interval's exact order statistics). Significant when the mean's interval excludes 0; `faster` names the
    faster proxy then, else None."""
    out = {"a": a, "b": b, "n": 0, "mean_ms": None, "mean_ci_low_ms": None, "mean_ci_high_ms": None,
           "median_ms": None, "median_ci_low_ms": None, "median_ci_high_ms": None, "significant": False,
           "faster": None}
    differences = f"SELECT {columns[a]} - {columns[b]} AS x FROM paired"
    n, mean, sd = tables.row(f"SELECT count(x), avg(x), stddev_samp(x) FROM ({differences})")
    out["n"] = n
    if n == 0:
        return out
    median_ranks = set(quantile_ranks(n, 0.5)[:2])
    ci_ranks = median_ci_ranks(n) if n >= 3 else None
    ordered = values_at_ranks(tables, differences, median_ranks | set(ci_ranks or ()))
    mci = mean_ci_of(n, mean, sd)
    out.update(mean_ms=mean, median_ms=quantile(ordered, n, 0.5),
               mean_ci_low_ms=mci[0] if mci else None, mean_ci_high_ms=mci[1] if mci else None,
               median_ci_low_ms=ordered[ci_ranks[0]] if ci_ranks else None,
               median_ci_high_ms=ordered[ci_ranks[1]] if ci_ranks else None)
    if mci and (mci[0] > 0 or mci[1] < 0):
        out["significant"] = True
        out["faster"] = a if mci[1] < 0 else b
    return out


def pairs(tables: ReplyQueries, names: list[str]) -> list[dict]:
    """Every unordered pair of proxies once, in the log's order (A before B)."""
    if len(names) < 2:
        return []
    columns = latency_by_request(tables, names)
    try:
        return [pair(tables, columns, a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    finally:
        tables.drop("paired")


def ranking(rows: list[dict], pair_list: list[dict]) -> list[list[str]]:
    """Tiers of proxies, fastest first, such that every proxy of a tier was significantly faster than
    every proxy of each later tier on the same requests; proxies the run could not tell apart share a
    tier (a tie). Taken by mean latency: a proxy that some member of a tier does not significantly beat
    joins that tier, and the tiers after it join too."""
    by_pair = {(p["a"], p["b"]): p for p in pair_list}

    def beats(x: str, y: str) -> bool:
        p = by_pair.get((x, y)) or by_pair.get((y, x))
        return bool(p and p["faster"] == x)

    proxies = sorted((r for r in rows if r["name"] != COLLECTOR and r.get("latency_mean_ms") is not None),
                     key=lambda r: r["latency_mean_ms"])
    tiers: list[list[str]] = []
    for name in (r["name"] for r in proxies):
        tie = next((i for i, tier in enumerate(tiers) if not all(beats(other, name) for other in tier)), None)
        if tie is None:
            tiers.append([name])
        else:
            tiers[tie:] = [[n for tier in tiers[tie:] for n in tier] + [name]]
    return tiers


def _ci(low: float | None, high: float | None) -> str:
    return f"[{low:+.2f}, {high:+.2f}]" if low is not None and high is not None else "[-]"


def ranking_line(tiers: list[list[str]]) -> str:
    return "Ranking (paired, 95 %; '=' a tie the run cannot split): " + " > ".join(" = ".join(t) for t in tiers)


def pairs_text(pair_list: list[dict], tiers: list[list[str]]) -> list[str]:
    """Every pair, one line each, under the ranking."""
    if not pair_list:
        return []
    out = ["Paired comparison (the same requests; A - B response time, ms, with 95 % intervals):",
           "  " + ranking_line(tiers)]
    for p in pair_list:
        if not p["n"]:
            out.append(f"  {p['a']} - {p['b']}: no request both answered")
            continue
        verdict = f"{p['faster']} faster" if p["significant"] else "no significant difference"
        out.append(f"  {p['a']} - {p['b']}: mean {p['mean_ms']:+.2f} {_ci(p['mean_ci_low_ms'], p['mean_ci_high_ms'])}, "
                   f"median {p['median_ms']:+.2f} {_ci(p['median_ci_low_ms'], p['median_ci_high_ms'])}, "
                   f"n {p['n']:,}: {verdict}")
    return out


def ranked_names(tiers: list[list[str]], names: list[str]) -> list[str]:
    """The proxies fastest first (the ranking's order), then those it could not rank, in the log's order."""
    ranked = [name for tier in tiers for name in tier]
    return ranked + [name for name in names if name not in ranked]


def _negated(value: float | None) -> float | None:
    return None if value is None else -value


def mirrored(p: dict) -> dict:
    """B minus A from A minus B: every difference changes sign and each interval's ends swap."""
    return {**p, "a": p["b"], "b": p["a"], "mean_ms": _negated(p["mean_ms"]), "median_ms": _negated(p["median_ms"]),
            "mean_ci_low_ms": _negated(p["mean_ci_high_ms"]), "mean_ci_high_ms": _negated(p["mean_ci_low_ms"]),
            "median_ci_low_ms": _negated(p["median_ci_high_ms"]), "median_ci_high_ms": _negated(p["median_ci_low_ms"])}


def _cell(p: dict | None) -> dict | None:
    """A pair seen from its A, with `verdict`: "faster" (A significantly faster), "slower", "tie", or "none"
    (no request both answered)."""
    if p is None:
        return None
    verdict = ("none" if not p["n"] else "tie" if not p["significant"] else
               "faster" if p["faster"] == p["a"] else "slower")
    return {**p, "verdict": verdict}


def matrix(pair_list: list[dict], tiers: list[list[str]]) -> tuple[list[str], list[list[dict | None]]]:
    """The proxies in ranking order, and per proxy a row of cells: its pair with each proxy, seen from it
    (its latency minus the other's); None on the diagonal."""
    seen = {(p["a"], p["b"]): p for p in pair_list} | {(p["b"], p["a"]): mirrored(p) for p in pair_list}
    names = ranked_names(tiers, list(dict.fromkeys(name for p in pair_list for name in (p["a"], p["b"]))))
    return names, [[_cell(seen.get((a, b))) for b in names] for a in names]


def matrix_text(pair_list: list[dict], tiers: list[list[str]]) -> list[str]:
    """The matrix as text: row minus column, mean ms, '*' where the difference is significant."""
    names, rows = matrix(pair_list, tiers)
    width = max(len(n) for n in names) + 2
    column = max(width, 11)
    out = [f"  {'':{width}}" + "".join(f"{n:>{column}}" for n in names)]
    for name, cells in zip(names, rows, strict=True):
        text = [". " if c is None else "- " if c["mean_ms"] is None else
                f"{c['mean_ms']:+.2f}" + ("*" if c["significant"] else " ") for c in cells]
        out.append(f"  {name:{width}}" + "".join(f"{t:>{column}}" for t in text))
    return out


def pairs_details(rep) -> list[str]:
    """report.txt's paired comparison: the ranking, the matrix, then every pair with its intervals."""
    lines = pairs_text(pairs_of(rep), ranking_of(rep))
    return [*lines[:2], "  Row minus column, mean ms ('*': significant at 95 %):",
            *matrix_text(pairs_of(rep), ranking_of(rep)), "  Each pair:", *lines[2:]]


def _matrix_context(rep) -> dict:
    names, cells = matrix(pairs_of(rep), ranking_of(rep))
    return {"names": names, "cells": cells, "ranking": ranking_line(ranking_of(rep)) if ranking_of(rep) else "",
            "mean_ms": {r["name"]: r.get("latency_mean_ms") for r in rep.rows}}


def _pairs_and_ranking(run: RunData) -> dict:
    pair_list = pairs(run.tables, run.records.proxies)
    return {"pairs": pair_list, "ranking": ranking(run.rows, pair_list)}


SECTION = Section(
    NAME, "Paired comparison", question=BEST, compute=_pairs_and_ranking, applies=lambda rep: bool(pairs_of(rep)),
    verdict_text=lambda rep: [ranking_line(ranking_of(rep))] if ranking_of(rep) else [], details_text=pairs_details,
    template="sections/paired.html.j2", context=_matrix_context,
    summary=lambda rep, rows: {"pairs": pairs_of(rep), "ranking": ranking_of(rep)})
