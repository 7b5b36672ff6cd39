"""One run of a lab, from its run directory to its last process stopped: bring it up, run the workload (or
wait for a signal) while the status loop watches, stop everything, and say how each piece ended. Behind
`./spe lab up`, `./spe lab run` and `./spe demo`."""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from spe_tools.lab.definition.model import Lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.bring_up import bring_up
from spe_tools.lab.start.multipliers import lab_multipliers
from spe_tools.lab.start.run_directory import make_run_dir
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.lab.start.workload import check_workload, start_workloads
from spe_tools.lab.watch.bypass_watch import static_warnings
from spe_tools.lab.watch.status_loop import status_loop
from spe_tools.process import ProcessError, ProcessGroup
from spe_tools.rundir import access
from spe_tools.rundir.layout import RunDir


class Stop(Exception):  # noqa: N818 (a request to stop, not an error)
    """SIGTERM or SIGINT: leave the wait loop and stop everything."""


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop(signal.Signals(signum).name)


def say(text: str) -> None:
    print(text, flush=True)


def with_share_group(lab: Lab, share_group: str | None) -> Lab:
    """--share-group overrides the lab file's share_group."""
    return replace(lab, share_group=share_group) if share_group else lab


def run_lab(lab: Lab, duration: float | None, runs_dir: Path | None = None) -> tuple[int, Path]:
    """Bring the lab up; with a duration, run the workload that long, else until a signal. Stops everything.
    Everything written meanwhile, by the lab and the processes it starts, is private (or its share group's).

    Returns (exit code, run directory).
    """
    with access.umask(lab.share_group):
        return _run_lab(lab, duration, runs_dir)


def _run_lab(lab: Lab, duration: float | None, runs_dir: Path | None) -> tuple[int, Path]:
    rundir = make_run_dir(lab, runs_dir)
    say(f"spe lab: run directory {rundir}")
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    group = ProcessGroup(rundir)
    run: RunningLab | None = None
    try:
        run = bring_up(lab, rundir, group, say=say)
        _run(run, duration)
        return 0, rundir
    except Stop as e:
        say(f"spe lab: {e}: stopping")
        return (0 if duration is None else 1), rundir
    except (LabError, ProcessError, OSError) as e:
        print(f"spe lab: error: {e}", file=sys.stderr)
        return 1, rundir
    finally:
        # Stopping must not be interrupted by a second Ctrl-C: ignore the signals from here on.
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        # A bring-up that failed part way has no RunningLab yet, but what it started is in the group.
        _say_how_it_ended(group, (run or RunningLab(lab, rundir, group)).stop(), rundir)
        for s, handler in old.items():
            signal.signal(s, handler)


def _run(run: RunningLab, duration: float | None) -> None:
    """The lab is up: until a signal, or the workload for `duration` seconds."""
    lab, rundir = run.lab, run.rundir
    for m in lab_multipliers(lab, run.ports, rundir):
        named = f" {m.spec.name!r}" if lab.other_multipliers else ""
        say(f"spe lab: Multiplier{named} on {m.spec.host}:{m.ports.listen} (use it as the HTTP proxy)"
            + (f", its records in {m.rundir}" if m.index else ""))
    say(f"spe lab: stop with Ctrl-C or ./spe lab down {rundir}")
    if metrics := lab.multiplier.metrics_address:
        say(f"spe lab: live counters at http://{metrics[0]}:{run.ports.metrics}/metrics (Prometheus text format)")
    if run.ports.prometheus:
        say(f"spe lab: Prometheus at http://127.0.0.1:{run.ports.prometheus} (its data in {rundir}/prometheus)")
    for warning in static_warnings(lab):
        say(f"spe lab: warning: {warning}")
    if duration is None:
        status_loop(run, None, say)
        return
    workloads = start_workloads(run, duration)
    # The project's workloads end by themselves at the duration (a minute's grace); a user's
    # command is stopped there, or ends the run earlier by ending.
    command = lab.workload.kind == "command"
    status_loop(run, time.monotonic() + duration + (60 if workloads and not command else 0), say,
                [child for _, child in workloads])
    for which, workload in workloads:
        check_workload(workload, which.rundir, command)


def _say_how_it_ended(group: ProcessGroup, left: list[int], rundir: Path) -> None:
    """The summary once everything is stopped: how each process ended, which did not stop, where the logs are."""
    if group.children:
        say("spe lab: how they ended: " + ", ".join(f"{c.name} {c.ending}" for c in group.children))
    if left:
        say(f"spe lab: processes {', '.join(map(str, left))} did not stop; they stay listed in "
            f"{RunDir(rundir).pids} for ./spe lab down {rundir}")
    say(f"spe lab: stopped; logs in {rundir}")
