"""The README's tour works as written: its block of commands, run as a user pastes it into a shell (stopping at the
first that fails), on a checkout `./spe setup` has set up. Every process it starts is stopped by the end, however
the test ends: the lab stops its own, and the tour's own background origin is in the shell's process group."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from conftest import ROOT

TOUR_DIR = Path("/tmp/spe-tour")  # where the tour keeps its runs, as written in the README


def tour_commands() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## A tour\n", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_tour_of_the_readme_runs_as_written():
    commands = tour_commands()
    assert "./spe lab run" in commands and "./spe report" in commands
    shutil.rmtree(TOUR_DIR, ignore_errors=True)
    # The output goes to a file, not a pipe: a tour that stops before its `kill` leaves the origin holding the
    # pipe open, and reading it to its end would wait for the timeout instead of failing at once.
    with tempfile.TemporaryFile("w+") as output:
        shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", commands], cwd=ROOT, stdout=output,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            shell.wait(timeout=600)
        finally:
            try:
                os.killpg(shell.pid, signal.SIGKILL)  # the tour's origin, if the tour stopped before its `kill`
            except ProcessLookupError:
                pass
        output.seek(0)
        out = output.read()
    try:
        assert shell.returncode == 0, out[-4000:]
        assert "no threshold crossed" in out
        assert "load: " in out and " 0 errors" in out
        (run,) = TOUR_DIR.glob("*-small")
        assert (run / "report/summary.json").is_file() and (TOUR_DIR / "run.har").stat().st_size > 0
        assert any(run.glob("parquet/**/*.parquet")), sorted(p.name for p in run.iterdir())
    finally:
        shutil.rmtree(TOUR_DIR, ignore_errors=True)
