"""The throughput benchmark's pure parts: the ratios it prints, each pair of figures from the same round."""

from __future__ import annotations

from bench.throughput import median_ratio, verdicts


def run(rnd: int, scenario: str, rps: float, cpu_us: float) -> dict:
    return {"round": rnd, "scenario": scenario, "rps": rps, "cpu_us": cpu_us, "origin_us": 0.0, "foreign": 0.0,
            "errors": ""}


def test_the_cpu_ratio_pairs_each_round_and_says_whether_its_target_holds():
    runs = [run(0, "mult4", 10000, 50.0), run(0, "lua4", 9000, 80.0), run(0, "mirror4", 3000, 30.0),
            run(1, "mult4", 9000, 60.0), run(1, "lua4", 9000, 84.0), run(1, "mirror4", 3000, 30.0),
            run(0, "mult8", 6000, 90.0), run(0, "lua8", 5000, 180.0), run(0, "mirror8", 2000, 60.0)]
    assert median_ratio(runs, "lua4", "mult4", "cpu_us") == (80 / 50 + 84 / 60) / 2
    assert median_ratio(runs, "mult4", "lua4") == (10000 / 9000 + 1.0) / 2  # req/s, as before
    four, eight = verdicts(runs)
    assert "Lua's CPU per request / the Multiplier's **1.50×** (target ≥ 1.5×: met)" in four
    assert "Lua's CPU per request / the Multiplier's **2.00×** (target ≥ 1.5×: met)" in eight
    runs[1]["cpu_us"] = 70.0  # round 0 at 4-way: 70 / 50 = 1.4
    assert "(target ≥ 1.5×: NOT met)" in verdicts(runs)[0]
