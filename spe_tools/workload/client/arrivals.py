"""Request arrival times (pure): a Poisson stream at a constant mean rate after a linear ramp-up.

Polygraph's --launch_win starts robots over a window; here the rate itself rises linearly from 0
to R over `launch_win` seconds, then stays at R. Arrivals are a non-homogeneous Poisson process
made by mapping unit-rate arrivals through the inverse of the cumulative rate.
"""

from __future__ import annotations

import math
import random


def cumulative_rate_inverse(rate: float, launch_win: float, s: float) -> float:
    """The time t at which the expected number of arrivals reaches s."""
    if launch_win <= 0:
        return s / rate
    ramp_total = rate * launch_win / 2  # expected arrivals during the ramp
    if s <= ramp_total:
        return math.sqrt(2 * s * launch_win / rate)
    return launch_win + (s - ramp_total) / rate


def schedule(rate: float, duration: float, rng: random.Random, launch_win: float = 0.0,
             limit: int | None = None) -> list[float]:
    """Arrival offsets in seconds from the start, in order, all below `duration`."""
    if rate <= 0 or duration <= 0:
        return []
    times: list[float] = []
    s = 0.0
    while limit is None or len(times) < limit:
        s += rng.expovariate(1.0)
        t = cumulative_rate_inverse(rate, launch_win, s)
        if t >= duration:
            break
        times.append(t)
    return times
