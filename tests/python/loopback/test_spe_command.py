"""The front door's conventions (./spe itself, before any Python command runs): `--version` prints the checkout's
commit, and a command used wrongly exits 2 with what was wrong, before it installs or builds anything."""

from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT

from spe_tools.version import describe


def spe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), *args], capture_output=True, text=True, timeout=60)


def test_version_prints_the_commit():
    done = spe("--version")
    assert done.returncode == 0 and done.stdout == f"spe {describe()}\n"


@pytest.mark.parametrize(("args", "said"), [
    (("setup", "--fast"), "setup takes no arguments, got '--fast'"),
    (("lint", "all"), "lint takes no arguments, got 'all'"),
    (("build", "--debug"), "build: unknown argument '--debug'"),
    (("test", "--layr", "unit"), "test: unknown argument '--layr'"),
    (("test", "--layer", "units"), "no test layer 'units'"),
    (("bench",), "usage: ./spe bench NAME"),
    (("nope",), "unknown command 'nope'"),
    (("--version", "x"), "--version takes no arguments"),
])
def test_a_usage_error_exits_2_and_says_what(args, said):
    done = spe(*args)
    assert done.returncode == 2, (args, done.stderr)
    assert said in done.stderr


@pytest.mark.parametrize("command", [("demo",), ("origin",), ("origin", "--har", "x.har"), ("load",), ("replay",),
                                     ("browse",), ("report",), ("logs",), ("lab",), ("ca",), ("repro",),
                                     ("export",), ("bench", "soak")])
def test_help_names_the_command_as_typed(command):
    """`./spe X --help` says `./spe X`, not the module behind it, and prints at once (no set-up first)."""
    done = spe(*command, "--help")
    name = " ".join(c for c in command if not c.startswith("-") and not c.endswith(".har"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: ./spe {name} "), done.stdout[:200]
    assert "python -m" not in done.stdout and "building" not in done.stderr
