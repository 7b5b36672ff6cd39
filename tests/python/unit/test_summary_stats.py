"""The summary statistics, defined once (spe_tools/summary_stats.py) on plain lists, and the report's reading of
them from DuckDB's sorts at the ranks they name (analysis/stats_sql.py) agree; the programs that need only them
do not load polars (loopback/test_lean_imports.py)."""

from __future__ import annotations

import random
import statistics

import duckdb
import pytest

from analysis import stats_sql
from analysis.readers.engine import ReplyQueries
from spe_tools import summary_stats
from spe_tools.hostport import parse_hostport
from spe_tools.workload.client.stats import distribution


class Values(ReplyQueries):
    """One column `x` as a DuckDB table, queried as the report queries a run."""

    def __init__(self, values: list[float | None]):
        self.con = duckdb.connect()
        self.con.execute("CREATE TABLE t (x DOUBLE)")
        self.con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_the_reports_order_statistics_are_the_plain_ones(n):
    rng = random.Random(n)
    values = [rng.expovariate(1 / 80) for _ in range(n)] + [None]
    quantiles = (0, 0.1, 0.5, 0.9, 0.99, 1)
    ranks = {r for q in quantiles for r in summary_stats.quantile_ranks(n, q)[:2]}
    if n >= 3:
        ranks |= set(summary_stats.median_ci_ranks(n))
    with Values(values) as table:
        at = stats_sql.values_at_ranks(table, "SELECT x FROM t", ranks)
    for q in quantiles:
        assert stats_sql.quantile(at, n, q) == pytest.approx(summary_stats.percentile(values, q))
    if n >= 3:
        low, high = summary_stats.median_ci_ranks(n)
        assert (at[low], at[high]) == summary_stats.median_ci(values)


@pytest.mark.parametrize("kind", ["ties", "zeros", "signed", "wide"])
def test_order_statistics_hold_with_ties_zeros_signs_and_wide_ranges(kind):
    """Values found by counting per bucket, then per distinct value (analysis/order_statistics.py), are those of
    a sort at every rank: many equal values (a queue's zero wait), both signs (paired differences), and values
    from microseconds to an hour."""
    rng = random.Random(kind)
    values = {"ties": [float(rng.choice((1, 2, 2, 3, 250))) for _ in range(3000)],
              "zeros": [0.0] * 2000 + [rng.expovariate(1 / 0.3) for _ in range(500)],
              "signed": [rng.gauss(0, 40) for _ in range(2500)],
              "wide": [10 ** rng.uniform(-3, 6.5) for _ in range(2500)]}[kind]
    ordered = sorted(values)
    ranks = set(range(0, len(values), 7)) | {len(values) - 1}
    with Values(values) as table:
        assert stats_sql.values_at_ranks(table, "SELECT x FROM t", ranks) == {r: ordered[r] for r in ranks}


def test_the_definitions():
    values = [4.0, 1.0, 3.0, None, 2.0]
    assert summary_stats.percentile(values, 0.9) == pytest.approx(3.7)  # linear between ranks 2 and 3
    assert summary_stats.median(values) == 2.5 and summary_stats.mean(values) == 2.5
    half = 1.96 * statistics.stdev([1, 2, 3, 4]) / 2
    assert summary_stats.mean_ci(values) == pytest.approx((2.5 - half, 2.5 + half))
    assert summary_stats.median_ci(values) == (1.0, 4.0)  # ranks n/2 -/+ 0.98 sqrt(n), clamped
    assert summary_stats.mean_ci([1.0]) is None and summary_stats.median_ci([1.0, 2.0]) is None


def test_a_distribution_of_no_values_and_of_some():
    assert distribution([]) == {"count": 0} and summary_stats.percentile([], 0.5) is None
    assert distribution([1, 2, 3, 4]) == {"count": 4, "mean": 2.5, "p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4}


def test_host_and_port():
    assert parse_hostport("127.0.0.1:3128") == ("127.0.0.1", 3128)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_hostport("3128")
