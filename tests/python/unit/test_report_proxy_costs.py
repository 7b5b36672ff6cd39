"""What each proxy cost (analysis/sections/proxy_costs.py), on hand-made run directories with a proxy-costs.json
whose right answers are worked out here: CPU seconds, the same per 1,000 requests answered (the per-proxy table's
`responses`), peak and mean memory, the disk its cache used; a run without the file says it has no samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_analysis import measure, proxy, record
from test_report_trust import topology, write_run

from analysis.report import build_report, html_report, summary_json, text_report
from analysis.sections import proxy_costs
from spe_tools.rundir.proxy_costs_json import COLLECTOR, MULTIPLIER, PROXY, RSS, ProcessCost, ProxyCosts

MB = 2**20


def four_requests(path: Path) -> Path:
    """4 client requests; squid answers all 4, nginx only 2 (two timeouts)."""
    records = [record(i, measure(), [proxy("squid"), proxy("nginx") if i <= 2 else
                                     proxy("nginx", result="NO_RESPONSE", status=None, error="timeout")])
               for i in range(1, 5)]
    path.mkdir(parents=True, exist_ok=True)
    return write_run(path, records, topology({"squid": "squid", "nginx": "nginx"}))


def costs(final: bool = True) -> ProxyCosts:
    return ProxyCosts(interval_s=1.0, elapsed_s=30.0, final=final, costs=[
        ProcessCost("squid", PROXY, "squid", ["squid"], cpu_s=2.0, cpu_user_s=1.5, cpu_system_s=0.5, pids=1,
                    samples=30, memory_peak_bytes=60 * MB, memory_mean_bytes=50 * MB),
        ProcessCost("nginx", PROXY, "nginx", ["nginx"], cpu_s=0.5, cpu_user_s=0.3, cpu_system_s=0.2, pids=3,
                    samples=30, memory_peak_bytes=12 * MB, memory_mean_bytes=10 * MB, memory=RSS,
                    cache_dir="proxies/nginx/cache", disk_bytes=3 * MB),
        ProcessCost("collector", COLLECTOR, processes=["collector"], cpu_s=1.0, pids=1, samples=30,
                    memory_peak_bytes=80 * MB, memory_mean_bytes=70 * MB),
        ProcessCost("multiplier", MULTIPLIER, processes=["multiplier"], cpu_s=0.8, pids=1, samples=30,
                    memory_peak_bytes=20 * MB, memory_mean_bytes=15 * MB),
    ])


@pytest.fixture
def sampled(tmp_path: Path) -> Path:
    run = four_requests(tmp_path / "run")
    costs().write(run)
    return run


def test_each_proxy_costs_cpu_per_request_answered_memory_and_disk(sampled):
    rep = build_report(sampled)
    rows = {row["name"]: row for row in proxy_costs.of(rep)["rows"]}
    assert list(rows) == ["squid", "nginx", "collector", "multiplier"]  # the proxies in the log's order first
    assert rows["squid"]["answered"] == 4 and rows["squid"]["cpu_s_per_1k"] == pytest.approx(500.0)
    assert rows["nginx"]["answered"] == 2 and rows["nginx"]["cpu_s_per_1k"] == pytest.approx(250.0)
    assert rows["collector"]["answered"] == 4  # the direct path's replies
    assert rows["multiplier"]["answered"] == 4 and rows["multiplier"]["cpu_s_per_1k"] == pytest.approx(200.0)
    assert rows["nginx"]["memory_peak_bytes"] == 12 * MB and rows["nginx"]["memory_mean_bytes"] == 10 * MB
    assert rows["nginx"]["disk_bytes"] == 3 * MB and rows["squid"]["disk_bytes"] is None
    text = text_report(rep)
    assert "What does each proxy cost?" in text
    line = next(line for line in text.splitlines() if line.strip().startswith("nginx") and "250.00" in line)
    assert line.split()[1:] == ["0.50", "250.00", "12.0", "10.0", "3.0", "(RSS)"], line
    squid = next(line for line in text.splitlines() if line.strip().startswith("squid") and "500.00" in line)
    assert squid.split()[-1] == "-"  # a memory-only cache has no disk
    # the verdict: the proxies, cheapest CPU per request answered first
    assert "CPU seconds per 1,000 requests answered: nginx 250.00 (peak 12.0 MB), squid 500.00 (peak 60.0 MB)" in text
    assert '<h2 id="proxy-costs">What does each proxy cost?</h2>' in html_report(rep)


def test_summary_json_has_the_costs_under_proxy_costs(sampled):
    summary = json.loads(json.dumps(summary_json(build_report(sampled)), default=str))
    costs_of = summary["proxy_costs"]
    assert costs_of["sampled_runs"] == 1 and costs_of["runs"] == 1 and costs_of["final"] is True
    nginx = next(row for row in costs_of["rows"] if row["name"] == "nginx")
    assert nginx == {**nginx, "role": "proxy", "kind": "nginx", "cpu_s": 0.5, "cpu_s_per_1k": 250.0, "memory": "rss",
                     "cache_dir": "proxies/nginx/cache", "disk_bytes": 3 * MB, "processes": ["nginx"]}


def test_a_run_without_cost_samples_says_so(tmp_path):
    rep = build_report(four_requests(tmp_path / "old"))
    assert proxy_costs.of(rep)["rows"] == []
    assert "this run has no cost samples" in text_report(rep)
    assert summary_json(rep)["proxy_costs"]["sampled_runs"] == 0


def test_a_file_written_before_the_stop_is_read_and_marked_so(tmp_path):
    run = four_requests(tmp_path / "killed")
    costs(final=False).write(run)
    rep = build_report(run)
    assert proxy_costs.of(rep)["final"] is False
    assert "before the lab stopped" in text_report(rep)


def test_an_unreadable_file_is_no_samples_not_a_failure(tmp_path):
    run = four_requests(tmp_path / "broken")
    (run / "proxy-costs.json").write_text('{"interval_s": 1, "costs": [')  # cut short
    assert "this run has no cost samples" in text_report(build_report(run))


def test_merged_runs_add_up_and_leave_per_request_out_when_one_has_no_samples(tmp_path):
    east, west, bare = (four_requests(tmp_path / name) for name in ("east", "west", "bare"))
    costs().write(east)
    costs().write(west)
    rows = {row["name"]: row for row in proxy_costs.of(build_report([east, west]))["rows"]}
    assert rows["squid"]["cpu_s"] == pytest.approx(4.0) and rows["squid"]["answered"] == 8
    assert rows["squid"]["cpu_s_per_1k"] == pytest.approx(500.0)
    assert rows["squid"]["memory_peak_bytes"] == 60 * MB and rows["squid"]["memory_mean_bytes"] == 50 * MB
    assert rows["nginx"]["disk_bytes"] == 6 * MB  # each run's proxy had its own cache
    partial = proxy_costs.of(build_report([east, bare]))
    assert (partial["sampled_runs"], partial["runs"]) == (1, 2)
    assert all(row["cpu_s_per_1k"] is None for row in partial["rows"])  # bare's requests had no cost measured


def test_a_run_directory_inside_a_sampled_run_is_covered_by_its_file(tmp_path):
    """A lab's other Multiplier writes its own run directory inside the run's (multipliers/NAME); the lab sampled
    every process of the run, so its requests count against the run's costs."""
    run = four_requests(tmp_path / "run")
    costs().write(run)
    other = four_requests(run / "multipliers" / "west")
    data = proxy_costs.of(build_report([run, other]))
    assert (data["sampled_runs"], data["runs"]) == (1, 1)
    squid = next(row for row in data["rows"] if row["name"] == "squid")
    assert squid["answered"] == 8 and squid["cpu_s_per_1k"] == pytest.approx(250.0)
