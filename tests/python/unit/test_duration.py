"""One duration syntax for every command: spe_tools.duration.parse_duration and the options that use it."""

from __future__ import annotations

import runpy
import sys
import warnings

import pytest

from spe_tools.duration import parse_duration


@pytest.mark.parametrize(("text", "seconds"), [("500ms", 0.5), ("2s", 2), ("1.5s", 1.5), ("10m", 600), ("1h", 3600),
                                               ("2.5", 2.5), ("0", 0), (" 30s ", 30)])
def test_the_forms(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "2x", "2 s", "2sec", "-1", "-1s", "nan", "inf", "1e3", "ms"])
def test_anything_else_is_refused_with_the_forms_named(text):
    with pytest.raises(ValueError, match="500ms, 2s, 10m, 1h or a number of seconds"):
        parse_duration(text)


# Every duration option of every command, given in the unit forms: argparse converts each value before it
# reaches --help, so the command exits 0 if it takes them and 2 (an argparse error) if it refuses one. Each runs
# as `python -m MODULE` runs it (runpy), in this process.
DURATION_OPTIONS = [
    ("spe_tools.lab", ["run", "lab.toml", "--duration", "45s"]),
    ("spe_tools.demo", ["--duration", "2m"]),
    ("spe_tools.workload.load", ["--duration", "30s", "--launch-win", "500ms", "--timeout", "2s",
                                 "--report-every", "1m"]),
    ("spe_tools.workload.replay", ["--timeout", "2s", "--report-every", "500ms", "--duration", "1m"]),
    ("spe_tools.workload.browse", ["--timeout", "1m", "--think-s", "500ms"]),
    ("bench.tail_isolation", ["--timeout", "2s"]),
    ("bench.soak", ["--duration", "1h", "--every", "10s"]),
    ("bench.overhead", ["--seconds", "2s"]),
    ("bench.cpu_breakdown", ["--seconds", "8s", "--trace-seconds", "4s", "--callgrind-seconds", "1m"]),
    ("bench.throughput", ["--seconds", "8s"]),
    ("bench.fidelity", ["--seconds", "30s"]),
    ("bench.scaling", ["--seconds", "15s"]),
    ("bench.connections", ["--hold", "20s"]),
    ("bench.workload_throughput", ["--seconds", "20s"]),
]


@pytest.mark.parametrize(("module", "args"), DURATION_OPTIONS, ids=[m for m, _ in DURATION_OPTIONS])
def test_every_duration_option_takes_the_forms(module, args, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [module, *args, "--help"])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as done:
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: another test imported the module already
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    assert done.value.code == 0, capsys.readouterr().err
