"""SPE's own noise floor, measured on a real lab: the patched Collector, two identical Squids (a noise pair
the lab recognises by itself), the dummy and the load client for 10 s, through `./spe lab run`. Part of the
load is the conformance mix (/c/<case>/<id>: no-store, Vary, Range, PUT, Authorization, ...), whose replies
are fixed per URL like the rest, so it must not raise the floor either.

The run-level goal is a floor of 0: the dummy (no cache) never differs from the Collector and the two
identical Squids never disagree. `test_the_noise_floor_is_zero` (marker `noise_floor`) asserts exactly
that and fails, naming what differed, while the Collector or the comparison still adds noise: that is
its job; do not relax it. The other tests check that the floor is measured and reported, and that no
proxy is wrongly named as bypassing its Collector port.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import multiplier_binary
from labsupport import run_lab_file
from parts import require

from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS

LAB = """
name = "noise"
[collector]
kind = "spe"
[workload]
kind = "load"
duration_s = 10
conformance = 0.3
[[proxy]]
name = "squid"
kind = "squid"
cache_mb = 16
[[proxy]]
name = "squid-twin"
kind = "squid"
cache_mb = 16
[[proxy]]
name = "dummy"
kind = "dummy"
"""


@pytest.fixture(scope="module")
def noise_run():
    """One 10-second `./spe lab run`: its output, run directory, lab.json and report summary."""
    multiplier_binary()
    require(collector.missing("spe"), "the patched Collector")
    require(KINDS["squid"].missing(), "Debian's Squid")
    runs = Path(tempfile.mkdtemp(prefix="spe-noise-"))
    runs.chmod(0o755)  # Squid drops to user proxy
    done = run_lab_file(runs, "noise", LAB)
    try:
        assert done.returncode == 0, done.stdout[-3000:]
        (rundir,) = runs.glob("*-noise")
        yield {"out": done.stdout, "rundir": rundir, "lab": json.loads((rundir / "lab.json").read_text()),
               "summary": json.loads((rundir / "report/summary.json").read_text())}
    finally:
        shutil.rmtree(runs, ignore_errors=True)


def test_the_lab_recognises_the_twins_and_the_report_states_the_floor(noise_run):
    assert noise_run["lab"]["noise_pairs"] == [["squid", "squid-twin"]]
    floor = noise_run["summary"]["noise_floor"]
    assert floor["measured"]
    (pair,) = floor["pairs"]
    (dummy,) = floor["dummies"]
    requests = noise_run["summary"]["requests"]
    assert requests >= 100 and dummy["requests"] == requests and pair["both_answered"] >= requests * 0.9
    floor_lines = [line for line in noise_run["out"].splitlines() if line.startswith("Noise floor: ")]
    assert len(floor_lines) == 1, noise_run["out"][-3000:]


def test_no_proxy_is_wrongly_named_as_bypassing_its_collector_port(noise_run):
    assert noise_run["summary"]["bypass"] == {}
    assert " BYPASS" not in noise_run["out"]
    rows = {r["name"]: r for r in noise_run["summary"]["proxies"]}
    assert rows["squid"]["hit_ratio"] is not None and rows["squid-twin"]["hit_ratio"] is not None


def test_the_run_has_what_each_proxy_cost(noise_run):
    """The lab sampled every proxy's processes (proxy-costs.json, final at the stop) and the report shows it."""
    costs = json.loads((noise_run["rundir"] / "proxy-costs.json").read_text())
    cpu = {c["name"]: c["cpu_s"] for c in costs["costs"]}
    assert costs["final"] and all(cpu.get(name, 0) > 0 for name in ("squid", "squid-twin", "dummy")), cpu
    rows = {r["name"]: r for r in noise_run["summary"]["proxy_costs"]["rows"]}
    assert rows["squid"]["cpu_s_per_1k"] > 0 and rows["squid"]["memory_peak_bytes"] > 0, rows["squid"]


@pytest.mark.noise_floor
def test_the_noise_floor_is_zero(noise_run):
    """The run-level goal: 0 dummy mismatches and 0 noise-pair disagreements. May fail until the Collector's
    sources of noise are fixed; the message names what differed (see report/report.txt for examples)."""
    floor = noise_run["summary"]["noise_floor"]
    mismatches = noise_run["summary"]["mismatches"]["by_proxy"]
    assert floor["zero"] and floor["floor_pct"] == 0, (
        f"{[line for line in noise_run['out'].splitlines() if line.startswith('Noise floor')]}; "
        f"mismatches by proxy: {mismatches}; headers differing most: {noise_run['summary']['mismatches']['headers']}; "
        f"URLs: {noise_run['summary']['mismatches']['urls'][:5]}")
