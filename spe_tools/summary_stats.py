"""The summary statistics the project reports, defined once, on plain lists of numbers and with no dependency:
the load client, the replayer, the browser, the prefetch agent and the benchmarks use them as they are, and the
report (analysis/stats_sql.py, paired.py, prefetch.py) reads the same order statistics at the ranks named here
from DuckDB's sorts, and builds the same intervals from its aggregates.

Definitions (also in docs/report.md): percentiles use linear interpolation between order statistics; the
95 % confidence interval of the mean is mean ± 1.96·s/√n, that of the median the order statistics at
n/2 ∓ 0.98·√n (rank-based).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable


def _numbers(values: Iterable[float | None]) -> list[float]:
    """The values that are not None, as floats."""
    return [float(v) for v in values if v is not None]


def quantile_ranks(n: int, q: float) -> tuple[int, int, float]:
    """The q-quantile of n sorted values, linear between order statistics: the ranks (from 0) of the two it
    lies between, and how far from the first to the second (0..1)."""
    position = (n - 1) * q
    return math.floor(position), math.ceil(position), position - math.floor(position)


def median_ci_ranks(n: int) -> tuple[int, int]:
    """The ranks (from 0, in ascending order) of the order statistics that bound the median's 95 % interval,
    n/2 -/+ 0.98·√n, for n >= 3 values."""
    half = 0.98 * math.sqrt(n)
    return max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half) - 1)


def mean_ci_of(n: int, mean: float | None, sd: float | None) -> tuple[float, float] | None:
    """The 95 % confidence interval of the mean from its aggregates (count, mean, sample standard deviation), as
    a query returns them; None below 2 values."""
    if n < 2 or sd is None or mean is None:
        return None
    half = 1.96 * sd / math.sqrt(n)
    return mean - half, mean + half


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The q-quantile (0..1) of the values, linear between order statistics; None for no values."""
    ordered = sorted(_numbers(values))
    if not ordered:
        return None
    low, high, fraction = quantile_ranks(len(ordered), q)
    return ordered[low] + (ordered[high] - ordered[low]) * fraction if high != low else ordered[low]


def median(values: Iterable[float | None]) -> float | None:
    return percentile(values, 0.5)


def mean(values: Iterable[float | None]) -> float | None:
    numbers = _numbers(values)
    return math.fsum(numbers) / len(numbers) if numbers else None


def mean_ci(values: Iterable[float | None]) -> tuple[float, float] | None:
    """95 % confidence interval of the mean (normal approximation); None below 2 values."""
    numbers = _numbers(values)
    if len(numbers) < 2:
        return None
    return mean_ci_of(len(numbers), math.fsum(numbers) / len(numbers), statistics.stdev(numbers))


def median_ci(values: Iterable[float | None]) -> tuple[float, float] | None:
    """95 % confidence interval of the median from order statistics; None below 3 values."""
    ordered = sorted(_numbers(values))
    if len(ordered) < 3:
        return None
    low, high = median_ci_ranks(len(ordered))
    return ordered[low], ordered[high]
