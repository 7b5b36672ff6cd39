"""./spe's set-up steps stop at the first command that fails, in the background as in the foreground. Bash turns
errexit off inside a function called from an `||` (and inside everything it calls), so a step run that way goes
on after a failed command: a pip install that failed still stamped the venv as installed, and `./spe demo` went
on to a Python traceback instead of naming the step. The functions are ./spe's own, run by bash as ./spe runs
them (set -euo pipefail); nothing here reaches the network (pip is told to use no index)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SPE = (ROOT / "spe").read_text()


def function(name: str) -> str:
    """The definition of ./spe's shell function `name`, as written there (on one line or several)."""
    found = re.search(rf"^{name}\(\) {{( [^\n]*}}\n|\n.*?^}}\n)", SPE, re.S | re.M)
    assert found, f"./spe has no function {name}"
    return found.group(0)


def bash(tmp_path: Path, script: str, *functions: str) -> subprocess.CompletedProcess:
    prelude = "set -euo pipefail\n" + "".join(function(name) for name in ("log", "die", *functions))
    return subprocess.run(["bash", "-c", prelude + script], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_step_beside_the_others_stops_at_its_first_failed_command(tmp_path):
    steps = """
STEP_TIMES=()
two_commands() { false; touch went-on; }
beside "two commands" step.log two_commands
wait_beside
"""
    done = bash(tmp_path, steps, "beside", "wait_beside")
    assert done.returncode == 1
    assert "two commands failed" in done.stderr
    assert not (tmp_path / "went-on").exists()


def test_a_venv_whose_packages_did_not_install_is_not_stamped(tmp_path):
    (tmp_path / "requirements.txt").write_text("no-such-package-spe-test==1.0\n")
    script = f"""
VENV="$PWD/venv" SPE_ROOT="$PWD"
python3() {{ {sys.executable} "$@"; }}
export PIP_NO_INDEX=1 PIP_FIND_LINKS=
setup_venv requirements.txt || echo "failed as it should" >&2
"""
    done = bash(tmp_path, script, "setup_venv")
    assert not (tmp_path / "venv/.requirements.stamp").exists(), done.stderr
    assert "pip could not install requirements.txt" in done.stderr
