"""`./spe lab run --fail-on` on a real short lab: the thresholds the report crossed are printed per proxy and the
run exits 3; a malformed threshold, or a proxy the lab file does not have, is a usage error (exit 2) before
anything starts (the grammar and `./spe report`'s exit codes: test_report_fail_on.py)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import multiplier_binary
from labsupport import run_lab_file
from parts import require

from spe_tools import collector

LAB = """
name = "failon"
[collector]
kind = "spe"
[workload]
kind = "load"
duration_s = 4
rate = 10
[[proxy]]
name = "dummy"
kind = "dummy"
"""


def lab_run(runs: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_lab_file(runs, "failon", LAB, *args, timeout=timeout)


@pytest.fixture
def runs():
    path = Path(tempfile.mkdtemp(prefix="spe-failon-"))
    path.chmod(0o755)  # Squid drops to user proxy
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


@pytest.mark.parametrize(("fail_on", "message"), [
    ("violations=0", "expected thresholds like violations>0"),
    ("violations[squid]>0", "--fail-on names proxies"),
])
def test_a_bad_threshold_stops_the_lab_before_it_starts(runs, fail_on, message):
    done = lab_run(runs, "--fail-on", fail_on, timeout=60)
    assert done.returncode == 2, done.stdout[-2000:]
    assert message in done.stdout
    assert not list(runs.glob("*-failon")), "a run directory was made: the lab started"


def test_a_lab_run_exits_3_naming_the_thresholds_it_crossed(runs):
    multiplier_binary()
    require(collector.missing("spe"), "the patched Collector")
    # The dummy (no cache, a pass-through) has no mismatch: `mismatches>=0` is crossed by any run, `>0` is not.
    done = lab_run(runs, "--duration", "4s", "--fail-on", "mismatches[dummy]>=0,mismatches>0,noise>50%")
    assert done.returncode == 3, done.stdout[-3000:]
    lines = [line for line in done.stdout.splitlines() if "threshold" in line]
    assert lines[0] == "spe lab: threshold crossed: mismatches[dummy]>=0: dummy 0 mismatches", lines
    assert lines[-1] == ("spe lab: 1 threshold(s) crossed (--fail-on mismatches[dummy]>=0,mismatches>0,noise>50%): "
                         "exit 3"), lines
    assert len(lines) == 2, lines
    (rundir,) = runs.glob("*-failon")
    assert (rundir / "report" / "summary.json").exists()
