"""The summary statistics the project reports, on plain lists of numbers, with no dependency: the load
client, the replayer, the browser and the prefetch agent use them without loading polars.

analysis/stats.py computes the same ones on polars columns for the report (a test checks they agree).
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


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The q-quantile (0..1) of the values, linear between order statistics; None for no values."""
    ordered = sorted(_numbers(values))
    if not ordered:
        return None
    rank = q * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


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
    centre, half = math.fsum(numbers) / len(numbers), 1.96 * statistics.stdev(numbers) / math.sqrt(len(numbers))
    return centre - half, centre + half


def median_ci(values: Iterable[float | None]) -> tuple[float, float] | None:
    """95 % confidence interval of the median from order statistics; None below 3 values."""
    ordered = sorted(_numbers(values))
    n = len(ordered)
    if n < 3:
        return None
    half = 0.98 * math.sqrt(n)
    return ordered[max(0, math.floor(n / 2 - half))], ordered[min(n - 1, math.ceil(n / 2 + half) - 1)]
