"""The per-proxy table as DuckDB queries over a run's `results` view (analysis/readers/engine.py), either engine's,
in memory that does not grow with the run. What its figures mean (ROPE's Tables 1 and 2 and what the paper lacked;
also in docs/report.md):
- requests: client requests the row had to answer; responses: replies that arrived complete
  (a status and no leg error; mismatching replies count, they were delivered).
- match %: OK results / requests. Each result class likewise, as a % of requests (the classes are the log
  contract's: spe_tools/rundir/records.py).
- latency: total time (request start to last byte) of the responses, in ms; percentiles use
  linear interpolation between order statistics; the 95 % confidence interval of the mean is
  mean ± 1.96·s/√n, that of the median the order statistics at n/2 ∓ 0.98·√n (rank-based).

Counts, shares, means, standard deviations and sums are one aggregate per reply source. The percentiles, the
medians and the median's confidence interval are order statistics: each is the value at its exact rank
(analysis/order_statistics.py: two aggregates, as a sort would give it), not from a sample and not from an
aggregate that holds every value in memory; the linear interpolation between two ranks is done here, as
spe_tools/summary_stats.py's percentile does it.
"""

from __future__ import annotations

from analysis.order_statistics import ranked_values
from analysis.readers.engine import ReplyQueries
from analysis.readers.records import COLLECTOR
from spe_tools.rundir.records import RESULT_CLASSES
from spe_tools.summary_stats import mean_ci_of, median_ci_ranks, quantile_ranks

# Microseconds to milliseconds as polars converts them (a column divided by a number is multiplied by its reciprocal:
# the two differ in the last bit), for the queries that read what polars computed before them
# (analysis/sections/paired.py, figures.py): a median of two values at a tie of the report's last digit (-1.725)
# then rounds as it did.
MS_PER_US = 1 / 1000

DELIVERED = "status IS NOT NULL AND error IS NULL"
TIMED = f"{DELIVERED} AND total_us IS NOT NULL"  # a delivered reply with its response time
# The values whose order statistics the table shows: (what, its value in the row's unit, which replies).
ORDERED = {
    "latency": ("total_us::DOUBLE / 1000", DELIVERED),
    "ttfb": ("ttfb_us::DOUBLE", DELIVERED),
    "queued": ("queued_us::DOUBLE / 1000", f"name <> '{COLLECTOR}'"),
}
QUANTILES = {"latency": (0.5, 0.9, 0.99), "ttfb": (0.5,), "queued": (0.5, 0.99)}


def _aggregates(tables: ReplyQueries, source: str) -> dict[str, dict]:
    """Per source: the counts, means, spreads and sums of the table, and how many values each ORDERED has."""
    counted = ", ".join(f"count({value}) FILTER ({where}) AS n_{what}" for what, (value, where) in ORDERED.items())
    rows = tables.dicts(f"""
        SELECT name, count(*) AS requests, count(*) FILTER ({DELIVERED}) AS responses,
               avg(total_us::DOUBLE / 1000) FILTER ({DELIVERED}) AS latency_mean_ms,
               stddev_samp(total_us::DOUBLE / 1000) FILTER ({DELIVERED}) AS latency_sd_ms,
               avg(connect_us) / 1000 AS connect_mean_ms, avg(ttfb_us) FILTER ({DELIVERED}) / 1000 AS ttfb_mean_ms,
               sum(bytes) FILTER ({DELIVERED}) AS body_bytes, {counted}
        FROM {source} GROUP BY name""")
    return {row["name"]: row for row in rows}


def _result_counts(tables: ReplyQueries, source: str) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for name, result, n in tables.rows(f"SELECT name, result, count(*) FROM {source} GROUP BY ALL"):
        counts.setdefault(name, {})[result] = n
    return counts


def _wanted_ranks(what: str, n: int) -> set[int]:
    ranks = {rank for q in QUANTILES[what] for rank in quantile_ranks(n, q)[:2]}
    return ranks | (set(median_ci_ranks(n)) if what == "latency" and n >= 3 else set())


def _order_statistics(tables: ReplyQueries, counts: dict[str, dict],
                      source: str) -> dict[tuple[str, str], dict[int, float]]:
    """(what, source) -> rank -> value, for the ranks the table needs (analysis/order_statistics.py)."""
    values = " UNION ALL ".join(f"SELECT '{what}' AS what, name, {value} AS x FROM {source} WHERE {where}"
                                for what, (value, where) in ORDERED.items())
    return ranked_values(tables, values, ("what", "name"),
                         lambda group, n: _wanted_ranks(group[0], n) if group[1] in counts else set())


def values_at_ranks(tables: ReplyQueries, values: str, ranks: set[int]) -> dict[int, float]:
    """rank -> value of the order statistics of `values` (a query of one column `x`, nulls left out) at `ranks`
    (from 0, ascending), exact, in memory that does not grow with the values (analysis/order_statistics.py)."""
    return ranked_values(tables, values, (), lambda _, n: ranks).get((), {})


def quantile(values: dict[int, float], n: int, q: float) -> float | None:
    """The q-quantile of n values from their order statistics (`values`: rank -> value, the ranks quantile_ranks
    names), linear between the two, as summary_stats.percentile."""
    if not n:
        return None
    lo, hi, frac = quantile_ranks(n, q)
    return values[lo] + (values[hi] - values[lo]) * frac if hi != lo else values[lo]


def _row(name: str, agg: dict, classes: dict[str, int], ordered: dict) -> dict:
    """One source's row: the columns docs/report.md defines."""
    requests, n = agg["requests"], agg["n_latency"]
    row = {"name": name, "requests": requests, "responses": agg["responses"]}
    for cls in RESULT_CLASSES:
        row[f"{cls.lower()}_pct"] = None if name == COLLECTOR or not requests else 100 * classes.get(cls, 0) / requests
    latency = ordered.get(("latency", name), {})
    mean, sd = agg["latency_mean_ms"], agg["latency_sd_ms"]
    mean_ci = mean_ci_of(n, mean, sd)
    low, high = median_ci_ranks(n) if n >= 3 else (None, None)
    row.update({
        "latency_mean_ms": mean, "latency_median_ms": quantile(latency, n, 0.5),
        "latency_p90_ms": quantile(latency, n, 0.9), "latency_p99_ms": quantile(latency, n, 0.99),
        "latency_mean_ci_low_ms": mean_ci[0] if mean_ci else None,
        "latency_mean_ci_high_ms": mean_ci[1] if mean_ci else None,
        "latency_median_ci_low_ms": latency[low] if low is not None else None,
        "latency_median_ci_high_ms": latency[high] if high is not None else None,
    })
    ttfb_median = quantile(ordered.get(("ttfb", name), {}), agg["n_ttfb"], 0.5)
    row["connect_mean_ms"], row["ttfb_mean_ms"] = agg["connect_mean_ms"], agg["ttfb_mean_ms"]
    row["ttfb_median_ms"] = None if ttfb_median is None else ttfb_median / 1000
    row["body_bytes"] = int(agg["body_bytes"] or 0)
    queued = ordered.get(("queued", name), {})
    row["queued_median_ms"] = quantile(queued, agg["n_queued"], 0.5)
    row["queued_p99_ms"] = quantile(queued, agg["n_queued"], 0.99)
    return row


def proxy_table(tables: ReplyQueries, names: list[str], source: str = "results") -> list[dict]:
    """One row per reply source: the Collector first, then each proxy in `names` order; of the replies of `source`
    (a view or kept table with `results`' columns: the per-Multiplier tables read a part of it)."""
    aggregates = _aggregates(tables, source)
    classes = _result_counts(tables, source)
    ordered = _order_statistics(tables, aggregates, source)
    empty = {"requests": 0, "responses": 0, "latency_mean_ms": None, "latency_sd_ms": None, "connect_mean_ms": None,
             "ttfb_mean_ms": None, "body_bytes": 0, **{f"n_{what}": 0 for what in ORDERED}}
    return [_row(name, aggregates.get(name, empty), classes.get(name, {}), ordered) for name in [COLLECTOR, *names]]
