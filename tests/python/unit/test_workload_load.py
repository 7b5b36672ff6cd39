"""The load client's parts: arrival schedule, popularity, request mix and its bounded tally (a run through a
real Squid: loopback/test_workload_load_through_squid.py)."""

from __future__ import annotations

import random
import tracemalloc
from collections import Counter

import pytest

from spe_tools.workload.client.arrivals import schedule
from spe_tools.workload.client.connections import Exchange
from spe_tools.workload.client.popularity import History, parse_popularity, zipf_index
from spe_tools.workload.client.stats import distribution
from spe_tools.workload.content import model as cm
from spe_tools.workload.load import Mix, Planner, RobotState, Tally


def exchange(rng: random.Random, error: str = "") -> Exchange:
    ex = Exchange(scheduled=0.0, sent=rng.uniform(0, 0.002), status=200, length=100, error=error)
    ex.first_byte = ex.sent + rng.expovariate(200)
    ex.done = ex.first_byte + rng.expovariate(50)
    return ex


def test_the_tally_keeps_a_bounded_summary_with_the_exact_one_s_fields():
    rng, tally, exchanges = random.Random(7), Tally(), []
    for i in range(20_000):
        exchanges.append(exchange(rng, error="timeout" if i % 1000 == 0 else ""))
        tally.add(exchanges[-1])
    assert (tally.completed, tally.errors, dict(tally.error_kinds)) == (19_980, 20, {"timeout": 20})
    assert dict(tally.statuses) == {200: 19_980} and tally.bytes == 19_980 * 100
    exact = {"response_ms": distribution([ex.response_ms for ex in exchanges if not ex.error]),
             "late_ms": distribution([ex.late_ms for ex in exchanges])}
    for name, want in exact.items():
        got = getattr(tally, name).summary()
        assert got.keys() == want.keys()
        assert (got["count"], got["mean"], got["max"]) == (want["count"], want["mean"], want["max"])
        for p in ("p50", "p90", "p99"):  # HdrHistogram at three significant digits
            assert got[p] == pytest.approx(want[p], rel=1e-3, abs=1e-3), (name, p)


def test_the_tally_does_not_grow_with_the_exchanges():
    rng, tally = random.Random(8), Tally()
    tracemalloc.start()
    try:
        for _ in range(1000):
            tally.add(exchange(rng))
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20_000):  # under tracemalloc each costs ~40 us
            tally.add(exchange(rng))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024  # a list of the exchanges would be megabytes; even one of their statuses, 170 kB


def test_poisson_schedule_has_the_rate_and_exponential_gaps():
    times = schedule(100, 60, random.Random(1))
    assert abs(len(times) - 6000) < 6000 * 0.04
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    mean = sum(gaps) / len(gaps)
    assert abs(mean - 0.01) < 0.0005
    # exponential gaps: about e^-1 of them are longer than the mean
    assert abs(sum(g > mean for g in gaps) / len(gaps) - 0.3679) < 0.02
    assert times == sorted(times) and times[-1] < 60


def test_launch_window_ramps_the_rate_up_linearly():
    times = schedule(200, 40, random.Random(2), launch_win=20)
    first_half = sum(1 for t in times if t < 10)  # expected 200 * 10^2 / (2 * 20) = 500
    second_half = sum(1 for t in times if 10 <= t < 20)  # expected 1500
    steady = sum(1 for t in times if 20 <= t < 40)  # expected 4000
    assert abs(first_half - 500) < 80 and abs(second_half - 1500) < 150 and abs(steady - 4000) < 250
    assert len(schedule(10, 100, random.Random(3), limit=7)) == 7


def test_zipf_popularity_favours_the_first_objects():
    rng = random.Random(4)
    counts = Counter(zipf_index(1000, 1.0, rng.random()) for _ in range(20000))
    assert counts[0] > counts[9] * 4 > 0
    assert counts.most_common(1)[0][0] == 0
    assert all(0 <= k < 1000 for k in counts)
    h = History(*parse_popularity("uniform"))
    for i in range(10):
        h.add(f"/obj/{i}")
    h.add("/obj/3")
    assert len(h) == 10
    picks = Counter(h.pick(rng) for _ in range(10000))
    assert min(picks.values()) > 800
    with pytest.raises(ValueError):
        parse_popularity("pareto")


def test_request_mix_follows_the_shares():
    history = History()
    planner = Planner(cm.Model(), Mix(hit_ratio=0.5, ims=0.1, reload=0.05, head=0.1, post=0.05, page=0.1, seq=0.1),
                      history, "w", random.Random(5))
    robot = RobotState()
    plans = []
    for _ in range(20000):
        plan = planner.next(robot)
        plans.append(plan)
        if plan.category == "new" and plan.method == "GET" and plan.spec.cacheable:
            history.add(plan.path)
    n = len(plans)
    categories = Counter(p.category for p in plans)
    assert abs((categories["repeat"] + categories["ims"]) / n - 0.5) < 0.015
    assert abs(categories["ims"] / n - 0.1) < 0.01
    assert abs(categories["reload"] / n - 0.05) < 0.01 and abs(categories["post"] / n - 0.05) < 0.01
    assert abs(sum(p.method == "HEAD" for p in plans) / n - 0.1 * 0.95) < 0.01
    new = [p for p in plans if p.category == "new"]
    assert abs(sum(p.path.startswith("/page/") for p in new) / len(new) - 0.1) < 0.015
    seqs = [p.path for p in new if p.path.startswith("/seq/")]
    assert seqs[:3] == [seqs[0], seqs[0][:-5] + "1.jpg", seqs[0][:-5] + "2.jpg"]  # a robot walks its sequence
    assert all(p.spec.cacheable for p in plans if p.category in ("repeat", "ims", "reload"))
    assert all("If-Modified-Since" in p.headers for p in plans if p.category == "ims")
    with pytest.raises(ValueError):
        Mix(hit_ratio=0.9, post=0.2).validate()
