"""[workload] kind = "command": a user's own load generator driven by the lab. It starts once the
Multiplier answers, gets the addresses as {placeholders} and SPE_* variables (and http_proxy), keeps its
output in the run directory, ends the run by ending, is stopped at the duration, and fails the run when
it fails (the lab file's checks of it: unit/test_lab_model.py)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import multiplier_binary
from parts import require

from spe_tools import collector
from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.watch import run_loop

BASE = '[[proxy]]\nname = "dummy"\nkind = "dummy"\n[origin]\nthink_mean_ms = 0\n'

# Five requests through the proxy the environment names (urllib honours http_proxy), then a line.
CLIENT = """\
import os, sys, urllib.request
origin = sys.argv[1]
for i in range(5):
    with urllib.request.urlopen("%s/obj/cmd-%d?size=300" % (origin, i), timeout=20) as reply:
        assert reply.status == 200
print("done 5 via", os.environ["SPE_PROXY"], "argv proxy", sys.argv[2], flush=True)
"""


def command(*words: str) -> str:
    return "[workload]\nkind = \"command\"\ncommand = " + json.dumps(list(words)) + "\n"


@pytest.fixture
def runs():
    require(collector.missing("spe"), "the patched Collector")
    multiplier_binary()  # skips when it is not built
    directory = Path(tempfile.mkdtemp(prefix="spe-command-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def run(lab_text: str, runs: Path, duration: float) -> tuple[int, Path, float]:
    start = time.monotonic()
    rc, rundir = run_loop.run_lab(parse_lab(lab_text), duration, runs)
    return rc, rundir, time.monotonic() - start


def test_a_command_gets_the_addresses_and_its_end_ends_the_run(runs):
    rc, rundir, took = run(command(sys.executable, "-c", CLIENT, "{origin_url}", "{proxy}") + BASE, runs, 60)
    assert rc == 0
    assert took < 45  # it ended the run long before the duration
    out = (rundir / "workload.out").read_text()
    assert "done 5 via 127.0.0.1:" in out
    proxy = out.split("done 5 via ")[1].split()[0]
    assert f"argv proxy {proxy}" in out  # {proxy} and SPE_PROXY agree
    records = [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()]
    assert sorted(r["url"].rsplit("/", 1)[1] for r in records) == [f"cmd-{i}?size=300" for i in range(5)]
    assert all(p["result"] == "OK" for r in records for p in r["proxies"])


def test_a_command_still_running_at_the_duration_is_stopped_and_the_run_is_fine(runs):
    rc, rundir, took = run(command(sys.executable, "-c", "import time; print('started', flush=True); "
                                   "time.sleep(600)") + BASE, runs, 3)
    assert rc == 0 and took < 40
    assert "started" in (rundir / "workload.out").read_text()


def test_a_failing_command_fails_the_run_with_its_output(runs, capsys):
    rc, rundir, _ = run(command(sys.executable, "-c", "import sys; print('bad flag'); sys.exit(3)") + BASE, runs, 30)
    assert rc == 1
    assert "exit code 3" in capsys.readouterr().err
