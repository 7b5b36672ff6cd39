"""./spe lab: bring up a test bed described by a TOML lab file (reference: docs/lab-file.md).

  ./spe lab check LABFILE               validate the file and that every program it needs is installed
  ./spe lab up LABFILE                  start everything, print a status line per second, Ctrl-C stops
  ./spe lab run LABFILE [--duration D]  start, run the workload, stop, write the report
  ./spe lab down RUNDIR                 stop a lab that `up` or `run` started (from another shell)
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from spe_tools.duration import parse_duration
from spe_tools.lab import access
from spe_tools.lab.bypass import BypassWatch, CollectorPorts, static_warnings
from spe_tools.lab.model import Lab, LabFileError, load_lab
from spe_tools.lab.noise import noise_pairs
from spe_tools.lab.runner import (
    LabError,
    RunningLab,
    bring_up,
    check,
    check_workload,
    down,
    make_run_dir,
    start_workload,
    strip_query_terms,
)
from spe_tools.lab.status import StatusTracker, format_status
from spe_tools.process import ProcessError, ProcessGroup, describe_exit
from spe_tools.thresholds import CROSSED_EXIT, Threshold, parse_thresholds, threshold_lines, unknown_proxies


class Stop(Exception):  # noqa: N818 (a request to stop, not an error)
    """SIGTERM or SIGINT: leave the wait loop and stop everything."""


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop(signal.Signals(signum).name)


def say(text: str) -> None:
    print(text, flush=True)


def cmd_check(args: argparse.Namespace) -> int:
    lab = load_lab(args.labfile)
    problems = check(lab)
    for p in problems:
        print(f"spe lab check: {p}", file=sys.stderr)
    for w in static_warnings(lab):
        print(f"spe lab check: warning: {w}", file=sys.stderr)
    if problems:
        return 1
    say(f"spe lab check: {args.labfile}: lab {lab.name!r} is ready: Collector {lab.collector.kind}, origin "
        f"{lab.origin.kind}, workload {lab.workload.kind}, proxies "
        + ", ".join(f"{p.name} ({p.kind})" for p in lab.proxies) + _noise_note(lab))
    return 0


def _noise_note(lab: Lab) -> str:
    """What will measure SPE's own noise floor in this lab (analysis/noise.py)."""
    pairs = [" = ".join(pair) for pair in noise_pairs(lab)]
    dummies = [p.name for p in lab.proxies if p.kind == "dummy"]
    if not pairs and not dummies:
        return "; no dummy and no noise pair: the noise floor will not be measured"
    return "; noise floor measured by " + ", ".join([*dummies, *(f"noise pair {p}" for p in pairs)])


def _bypass_watch(run: RunningLab) -> BypassWatch:
    """Watches the Collector's access.log per port, named as in lab.json."""
    names = {run.ports.direct: "direct", **{port: name for name, port in run.ports.collector.items()}}
    return BypassWatch(CollectorPorts(run.rundir / "collector" / "access.log", names,
                                      strip_query_terms=strip_query_terms(run.lab)))


# Without these the run measures nothing: the lab stops when one of them dies.
CORE = ("origin", "collector", "multiplier")


def _status_loop(run: RunningLab, until: float | None, workload=None) -> None:
    """One status line per second until `until` (monotonic), the workload ends, or a signal.

    A proxy under test that dies is reported once and the run goes on: the Multiplier measures its
    failures, which is what an evaluation should record (ROPE lost a proxy mid-run too). If the
    Collector, the origin or the Multiplier dies, the lab stops with an error naming it."""
    tracker = StatusTracker(run.rundir / "multiplier.jsonl", watch=_bypass_watch(run))
    names = [p.name for p in run.lab.proxies]
    started = time.monotonic()
    previous = 0
    down: set[str] = set()
    bypass: set[str] = set()
    while until is None or time.monotonic() < until:
        time.sleep(1)
        tracker.update()
        elapsed = time.monotonic() - started
        say(format_status(elapsed, tracker.requests, previous, tracker.results, names, down,
                          tracker.watch.bypassing))
        for name in sorted(tracker.watch.bypassing - bypass):
            say(f"spe lab: proxy {name!r} BYPASS: its replies do not come through its Collector port; its hit "
                "ratio and bandwidth will not be computed (docs/report.md)")
        bypass = tracker.watch.bypassing
        previous = tracker.requests
        # how each dead one ended, e.g. "killed by SIGKILL"
        dead = {c.name: describe_exit(c.popen.returncode) for c in run.group.children
                if c.name != "workload" and not c.alive()}
        core = [name for name in dead if name in CORE]
        if core:
            ended = "; ".join(f"{name} {dead[name]}" for name in core)
            raise LabError(f"{', '.join(core)} stopped unexpectedly after {elapsed:.0f} s ({ended}); the lab stops "
                           f"(see {run.rundir}/{core[0]}.out" + (f" and {run.rundir}/collector/cache.log"
                                                                   if "collector" in core else "") + ")")
        for name in sorted(set(dead) - down):
            if name in names:
                say(f"spe lab: proxy {name!r} stopped unexpectedly after {elapsed:.0f} s ({dead[name]}); the run goes "
                    f"on and counts its requests as failures (see {run.rundir}/{name}.out)")
            else:  # a companion (kinds.Companion: a prefetch agent, a cache cleaner): its proxy runs on without it
                say(f"spe lab: {name!r} stopped unexpectedly after {elapsed:.0f} s ({dead[name]}); its proxy runs on "
                    f"without it (see {run.rundir}/{name}.out)")
            down.add(name)
        if workload is not None and not workload.alive():
            return


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
        say(f"spe lab: Multiplier on {lab.multiplier.host}:{run.ports.multiplier} (use it as the HTTP proxy); "
            f"stop with Ctrl-C or ./spe lab down {rundir}")
        for warning in static_warnings(lab):
            say(f"spe lab: warning: {warning}")
        if duration is None:
            _status_loop(run, None)
        else:
            workload = start_workload(run, duration)
            # The project's workloads end by themselves at the duration (a minute's grace); a user's
            # command is stopped there, or ends the run earlier by ending.
            command = lab.workload.kind == "command"
            _status_loop(run, time.monotonic() + duration + (60 if workload and not command else 0), workload)
            if workload is not None:
                check_workload(workload, rundir, command)
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
        left = (run or RunningLab(lab, rundir, group)).stop()
        if group.children:
            say("spe lab: how they ended: " + ", ".join(f"{c.name} {c.ending}" for c in group.children))
        if left:
            say(f"spe lab: processes {', '.join(map(str, left))} did not stop; they stay listed in "
                f"{rundir}/pids.json for ./spe lab down {rundir}")
        say(f"spe lab: stopped; logs in {rundir}")
        for s, handler in old.items():
            signal.signal(s, handler)


def with_share_group(lab: Lab, share_group: str | None) -> Lab:
    """--share-group overrides the lab file's share_group."""
    return replace(lab, share_group=share_group) if share_group else lab


def cmd_up(args: argparse.Namespace) -> int:
    return run_lab(with_share_group(load_lab(args.labfile), args.share_group), None, args.runs_dir)[0]


def cmd_run(args: argparse.Namespace) -> int:
    lab = with_share_group(load_lab(args.labfile), args.share_group)
    if args.fail_on and args.no_report:
        raise LabFileError("--fail-on checks the report: it cannot go with --no-report")
    if unknown := unknown_proxies(args.fail_on, [p.name for p in lab.proxies]):
        raise LabFileError(f"--fail-on names proxies {args.labfile} does not have: {', '.join(unknown)}")
    duration = args.duration if args.duration is not None else lab.workload.duration_s
    rc, rundir = run_lab(lab, duration, args.runs_dir)
    if rc == 0 and not args.no_report:
        rc = write_report(rundir, args.fail_on)
    return rc


def write_report(rundir: Path, fail_on: list[Threshold] = ()) -> int:
    """Writes the report and prints its short form (the per-proxy table and the verdict of every section:
    analysis/sections); the exit code is CROSSED_EXIT when a --fail-on threshold is crossed (each crossing
    printed), else 0."""
    try:
        from analysis.report import build_report, short_report
        from analysis.report import write_report as write
    except ImportError as e:  # the analysis needs the project venv (polars, matplotlib)
        print(f"spe lab: no report ({e}); run ./spe report {rundir}", file=sys.stderr)
        return 1 if fail_on else 0  # thresholds that cannot be checked must not pass a CI job
    report = build_report(rundir)
    with access.umask(access.is_shared(rundir)):  # as private as the run it reports on
        written = write(report, rundir / "report", {"html", "csv", "json", "text"})
    for line in short_report(report):
        say(line)
    say(f"spe lab: report {written[-1]}")
    rc, lines = threshold_lines(list(fail_on), report.rows, report.noise)
    for line in lines:
        say(f"spe lab: {line}")
    return rc


def cmd_down(args: argparse.Namespace) -> int:
    if not (Path(args.rundir) / "lab.json").exists() and not (Path(args.rundir) / "pids.json").exists():
        print(f"spe lab down: {args.rundir} is not a lab run directory", file=sys.stderr)
        return 1
    stopped = down(Path(args.rundir))
    say(f"spe lab down: stopped {', '.join(stopped)}" if stopped else "spe lab down: nothing was running")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="validate a lab file and the programs it needs")
    c.add_argument("labfile", type=Path)
    c.set_defaults(func=cmd_check)
    for name, func, text in (("up", cmd_up, "start everything until Ctrl-C"),
                             ("run", cmd_run, "start, run the workload, stop")):
        s = sub.add_parser(name, help=text)
        s.add_argument("labfile", type=Path)
        s.add_argument("--runs-dir", type=Path, help="where to create the run directory (default: runs/)")
        s.add_argument("--share-group", metavar="GROUP",
                       help="let this group read the run directory (default: the lab file's share_group; without "
                            "one only you can)")
        s.set_defaults(func=func)
    r = sub.choices["run"]
    r.add_argument("--duration", type=parse_duration,
                   help="workload duration, e.g. 45s, 10m (default: [workload].duration_s)")
    r.add_argument("--no-report", action="store_true", help="do not write the report")
    r.add_argument("--fail-on", type=parse_thresholds, default=[], metavar="THRESHOLDS",
                   help=f"exit {CROSSED_EXIT} when the report crosses one, e.g. violations>0,mismatches>1%%,noise>0,"
                        "violations[squid]>=3 (docs/report.md)")
    d = sub.add_parser("down", help="stop a running lab")
    d.add_argument("rundir", type=Path)
    d.set_defaults(func=cmd_down)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except LabFileError as e:
        print(f"spe lab: {e}", file=sys.stderr)
        return 2
    except LabError as e:  # before the run directory exists (e.g. a share group that cannot be used)
        print(f"spe lab: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
