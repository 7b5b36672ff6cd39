"""Summaries shared by the load client, the replayer and the browser (no polars): exact ones of a list
(spe_tools/summary_stats.py definitions) and a bounded histogram for long runs."""

from __future__ import annotations

import math

from hdrh.histogram import HdrHistogram

from spe_tools.summary_stats import percentile

HIGHEST_US = 3_600_000_000  # an hour: longer than any request's deadline


def distribution(values: list[float]) -> dict:
    """count, mean, p50, p90, p99, max of `values` (rounded for reports)."""
    numbers = [float(v) for v in values if v is not None]
    if not numbers:
        return {"count": 0}
    return _rounded(len(numbers), math.fsum(numbers) / len(numbers), max(numbers), lambda q: percentile(numbers, q))


class Histogram:
    """A bounded distribution of ms values for a long run: HdrHistogram counts (1 µs .. 1 h, three
    significant digits, so a percentile is within 0.1 %) and the exact count, mean and max. Its
    memory does not grow with the values recorded."""

    def __init__(self) -> None:
        self._counts = HdrHistogram(1, HIGHEST_US, 3)
        self.count, self.total, self.max = 0, 0.0, -math.inf

    def add(self, ms: float) -> None:
        self.count += 1
        self.total += ms
        self.max = max(self.max, ms)
        self._counts.record_value(min(max(round(ms * 1000), 1), HIGHEST_US))

    def percentile(self, q: float) -> float:
        """The q-quantile (0..1): the upper end of its histogram bucket, at most the exact max."""
        return min(self._counts.get_value_at_percentile(q * 100) / 1000, self.max)

    def summary(self) -> dict:
        """The fields of distribution()."""
        if not self.count:
            return {"count": 0}
        return _rounded(self.count, self.total / self.count, self.max, self.percentile)


def _rounded(count: int, mean: float, top: float, quantile) -> dict:
    return {"count": count, "mean": round(mean, 3), "p50": round(quantile(0.5), 3), "p90": round(quantile(0.9), 3),
            "p99": round(quantile(0.99), 3), "max": round(top, 3)}


def fmt_ms(dist: dict) -> str:
    if not dist.get("count"):
        return "-"
    return f"mean {dist['mean']:.1f} p50 {dist['p50']:.1f} p90 {dist['p90']:.1f} p99 {dist['p99']:.1f} " \
           f"max {dist['max']:.1f} ms"

