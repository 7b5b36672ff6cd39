"""The statistics without polars (spe_tools/summary_stats.py) agree with the report's (analysis/stats.py); the
programs that need only them do not load polars (loopback/test_lean_imports.py)."""

from __future__ import annotations

import random

import pytest

from analysis import stats as report_stats
from spe_tools import summary_stats
from spe_tools.hostport import parse_hostport
from spe_tools.workload.stats import distribution


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_the_plain_statistics_are_the_reports(n):
    rng = random.Random(n)
    values = [rng.expovariate(1 / 80) for _ in range(n)] + [None]
    for q in (0, 0.1, 0.5, 0.9, 0.99, 1):
        assert summary_stats.percentile(values, q) == pytest.approx(report_stats.percentile(values, q))
    for name in ("median", "mean_ci", "median_ci"):
        plain, framed = getattr(summary_stats, name)(values), getattr(report_stats, name)(values)
        assert plain == (None if framed is None else pytest.approx(framed))


def test_a_distribution_of_no_values_and_of_some():
    assert distribution([]) == {"count": 0} and summary_stats.percentile([], 0.5) is None
    assert distribution([1, 2, 3, 4]) == {"count": 4, "mean": 2.5, "p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4}


def test_host_and_port():
    assert parse_hostport("127.0.0.1:3128") == ("127.0.0.1", 3128)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_hostport("3128")
