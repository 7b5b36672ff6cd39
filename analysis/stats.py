"""Per-proxy statistics of a run (ROPE's Tables 1 and 2 and what the paper lacked), and each summary
statistic the project uses, on polars columns (the benchmarks import them from here; the load client, the
replayer and the prefetch agent use spe_tools/summary_stats.py, the same definitions on plain lists without
polars: tests/python/unit/test_summary_stats.py checks they agree).

Definitions (also in docs/report.md):
- requests: client requests the row had to answer; responses: replies that arrived complete
  (a status and no leg error; mismatching replies count, they were delivered).
- match %: OK results / requests. Each result class likewise, as a % of requests.
- latency: total time (request start to last byte) of the responses, in ms; percentiles use
  linear interpolation between order statistics; the 95 % confidence interval of the mean is
  mean ± 1.96·s/√n, that of the median the order statistics at n/2 ∓ 0.98·√n (rank-based).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import polars as pl

from analysis.records import COLLECTOR

# REPLAY_REFUSED: the proxy's copy of an unsafe request did not match the client's (kept from the origin).
# OTHER_FETCH: a faithful copy of another origin fetch than the client's, differing only by what differs between
# the two fetches: no mismatch (NOT_MISMATCHES), so neither a proxy's mismatch rate nor the noise floor counts it.
# NOT_SENT legs (unsafe requests withheld from the proxies) are no result: analysis/records.py drops them.
RESULT_CLASSES = ["OK", "STATUS_CODE_MISMATCH", "HEADER_MISMATCH", "BODY_MISMATCH", "NO_RESPONSE", "PROTOCOL_ERROR",
                  "REPLAY_REFUSED", "OTHER_FETCH"]
NOT_MISMATCHES = ("OK", "OTHER_FETCH")

Values = pl.Series | Iterable[float]

# Microseconds to milliseconds as polars converts them (a column divided by a number is multiplied by its reciprocal:
# the two differ in the last bit), for the queries that read what polars computed before them (analysis/paired.py,
# plots.py): a median of two values at a tie of the report's last digit (-1.725) then rounds as it did.
MS_PER_US = 1 / 1000


def as_series(values: Values) -> pl.Series:
    """The non-null values as a Float64 series (callers pass a column or a plain list)."""
    series = values if isinstance(values, pl.Series) else pl.Series(list(values), dtype=pl.Float64)
    return series.cast(pl.Float64).drop_nulls()


def percentile(values: Values, q: float) -> float | None:
    """The q-quantile (0..1) of the values, linear between order statistics; None for no values."""
    series = as_series(values)
    return series.quantile(q, interpolation="linear") if len(series) else None


def median(values: Values) -> float | None:
    return percentile(values, 0.5)


def mean_ci(values: Values) -> tuple[float, float] | None:
    """95 % confidence interval of the mean (normal approximation); None below 2 values."""
    series = as_series(values)
    return mean_ci_of(len(series), series.mean(), series.std())


def mean_ci_of(n: int, mean: float | None, sd: float | None) -> tuple[float, float] | None:
    """mean_ci from the aggregates a query returns (count, avg, stddev_samp); None below 2 values."""
    if n < 2 or sd is None:
        return None
    half = 1.96 * sd / math.sqrt(n)
    return mean - half, mean + half


def median_ci(values: Values) -> tuple[float, float] | None:
    """95 % confidence interval of the median from order statistics; None below 3 values."""
    ordered = as_series(values).sort()
    n = len(ordered)
    if n < 3:
        return None
    lo, hi = median_ci_ranks(n)
    return ordered[lo], ordered[hi]


def median_ci_ranks(n: int) -> tuple[int, int]:
    """The ranks (from 0, in ascending order) of the order statistics that bound the median's 95 % interval,
    n/2 -/+ 0.98·√n, for n >= 3 values."""
    half = 0.98 * math.sqrt(n)
    return max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half) - 1)


def quantile_ranks(n: int, q: float) -> tuple[int, int, float]:
    """The q-quantile of n sorted values, linear between order statistics: the ranks (from 0) of the two it
    lies between, and how far from the first to the second (0..1)."""
    position = (n - 1) * q
    return math.floor(position), math.ceil(position), position - math.floor(position)


def _latency_columns(times_ms: pl.Series) -> dict:
    mci, dci = mean_ci(times_ms), median_ci(times_ms)
    return {
        "latency_mean_ms": times_ms.mean(), "latency_median_ms": median(times_ms),
        "latency_p90_ms": percentile(times_ms, 0.9), "latency_p99_ms": percentile(times_ms, 0.99),
        "latency_mean_ci_low_ms": mci[0] if mci else None, "latency_mean_ci_high_ms": mci[1] if mci else None,
        "latency_median_ci_low_ms": dci[0] if dci else None, "latency_median_ci_high_ms": dci[1] if dci else None,
    }


def proxy_table(results: pl.DataFrame, names: list[str]) -> list[dict]:
    """One row per reply source: the Collector first, then each proxy in `names` order."""
    rows = []
    for name in [COLLECTOR, *names]:
        part = results.filter(pl.col("name") == name)
        requests = part.height
        delivered = part.filter(pl.col("status").is_not_null() & pl.col("error").is_null())
        row = {"name": name, "requests": requests, "responses": delivered.height}
        if name == COLLECTOR:
            for cls in RESULT_CLASSES:
                row[f"{cls.lower()}_pct"] = None
        else:
            counts = dict(part.group_by("result").len().iter_rows())
            for cls in RESULT_CLASSES:
                row[f"{cls.lower()}_pct"] = 100 * counts.get(cls, 0) / requests if requests else None
        row.update(_latency_columns(as_series(delivered["total_us"]) / 1000))
        row["connect_mean_ms"] = _ms(part["connect_us"].mean())
        row["ttfb_mean_ms"] = _ms(delivered["ttfb_us"].mean())
        row["ttfb_median_ms"] = _ms(median(delivered["ttfb_us"]))
        row["body_bytes"] = int(delivered["bytes"].sum() or 0)
        # SPE's own queueing before the leg went out (the proxy's turn): none of the times above include it.
        queued = as_series(part["queued_us"]) / 1000 if "queued_us" in part.columns and name != COLLECTOR else []
        row["queued_median_ms"], row["queued_p99_ms"] = median(queued), percentile(queued, 0.99)
        rows.append(row)
    return rows


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000
