"""Per-proxy statistics of a run: ROPE's Tables 1 and 2 and what the paper lacked.

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

import polars as pl

from analysis.records import COLLECTOR

RESULT_CLASSES = ["OK", "STATUS_CODE_MISMATCH", "HEADER_MISMATCH", "BODY_MISMATCH", "NO_RESPONSE", "PROTOCOL_ERROR"]


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) of ascending values, linear between order statistics."""
    if not sorted_values:
        return None
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def mean_ci(values: list[float]) -> tuple[float, float] | None:
    """95 % confidence interval of the mean (normal approximation); None below 2 values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = 1.96 * sd / math.sqrt(n)
    return mean - half, mean + half


def median_ci(sorted_values: list[float]) -> tuple[float, float] | None:
    """95 % confidence interval of the median from order statistics; None below 3 values."""
    n = len(sorted_values)
    if n < 3:
        return None
    half = 0.98 * math.sqrt(n)
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return sorted_values[lo], sorted_values[hi]


def _latency_columns(times_ms: list[float]) -> dict:
    times = sorted(times_ms)
    mean = sum(times) / len(times) if times else None
    mci, dci = mean_ci(times), median_ci(times)
    return {
        "latency_mean_ms": mean, "latency_median_ms": percentile(times, 0.5),
        "latency_p90_ms": percentile(times, 0.9), "latency_p99_ms": percentile(times, 0.99),
        "latency_mean_ci_low_ms": mci[0] if mci else None, "latency_mean_ci_high_ms": mci[1] if mci else None,
        "latency_median_ci_low_ms": dci[0] if dci else None, "latency_median_ci_high_ms": dci[1] if dci else None,
    }


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


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
        row.update(_latency_columns([t / 1000 for t in delivered["total_us"].drop_nulls().to_list()]))
        row["connect_mean_ms"] = _ms(_mean(part["connect_us"].to_list()))
        row["ttfb_mean_ms"] = _ms(_mean(delivered["ttfb_us"].to_list()))
        row["ttfb_median_ms"] = _ms(percentile(sorted(delivered["ttfb_us"].drop_nulls().to_list()), 0.5))
        row["body_bytes"] = int(delivered["bytes"].sum() or 0)
        rows.append(row)
    return rows


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000
