"""Summaries shared by the load client and the replayer (pure)."""

from __future__ import annotations

import math


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; NaN for no values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def distribution(values: list[float]) -> dict:
    """count, mean, p50, p90, p99, max of `values` (rounded for reports)."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}
    return {"count": len(ordered), "mean": round(sum(ordered) / len(ordered), 3),
            "p50": round(percentile(ordered, 50), 3), "p90": round(percentile(ordered, 90), 3),
            "p99": round(percentile(ordered, 99), 3), "max": round(ordered[-1], 3)}


def fmt_ms(dist: dict) -> str:
    if not dist.get("count"):
        return "-"
    return f"mean {dist['mean']:.1f} p50 {dist['p50']:.1f} p90 {dist['p90']:.1f} p99 {dist['p99']:.1f} " \
           f"max {dist['max']:.1f} ms"


def parse_hostport(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)
