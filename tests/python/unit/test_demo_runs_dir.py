"""Where ./spe demo puts its run: runs/ in the checkout, unless the proxies' own users could not reach it there (a
checkout in root's home, 0700 on Debian), when a first run would otherwise fail after its builds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conftest import ROOT

from spe_tools.lab.definition.model import load_lab
from spe_tools.lab.start import run_directory
from spe_tools.lab.start.run_directory import PASSABLE_RUNS, blocking_ancestor, demo_runs_dir

LAB = load_lab(ROOT / "configs/labs/default.toml")


def test_a_directory_others_cannot_pass_is_named(tmp_path):
    home = tmp_path / "root"
    (home / "spe").mkdir(parents=True)
    home.chmod(0o700)
    assert blocking_ancestor(home / "spe" / "runs" / "x") == home
    # Directories yet to be made are not in the way, nor are passable ones (/var/tmp on every Debian).
    assert blocking_ancestor(Path("/var/tmp/no-such-spe-checkout/runs/x")) is None


def test_runs_under_a_home_the_proxies_cannot_pass_go_to_var_tmp(tmp_path, monkeypatch):
    home = tmp_path / "root"
    (home / "spe").mkdir(parents=True)
    home.chmod(0o700)
    monkeypatch.setattr(run_directory, "DEFAULT_RUNS", home / "spe" / "runs")
    where, note = demo_runs_dir(None, LAB, as_root=True)
    assert where == PASSABLE_RUNS
    assert str(home) in note and str(PASSABLE_RUNS) in note
    # Not as root, every process is the user's own: runs/ as always.
    assert demo_runs_dir(None, LAB, as_root=False) == (None, None)


def test_a_runs_directory_asked_for_is_kept(tmp_path, monkeypatch):
    home = tmp_path / "root"
    (home / "spe").mkdir(parents=True)
    home.chmod(0o700)
    monkeypatch.setattr(run_directory, "DEFAULT_RUNS", home / "spe" / "runs")
    assert demo_runs_dir(Path("/somewhere"), LAB, as_root=True) == (Path("/somewhere"), None)
    lab = replace(LAB, runs_dir=Path("/elsewhere"))
    assert demo_runs_dir(None, lab, as_root=True) == (None, None)


def test_runs_the_proxies_can_reach_stay_in_the_checkout(monkeypatch):
    monkeypatch.setattr(run_directory, "DEFAULT_RUNS", Path("/var/tmp/no-such-spe-checkout/runs"))
    assert demo_runs_dir(None, LAB, as_root=True) == (None, None)
