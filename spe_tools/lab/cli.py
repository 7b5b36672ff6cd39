"""./spe lab: bring up a test bed described by a TOML lab file (reference: docs/lab-file.md).

  ./spe lab check LABFILE               validate the file and that every program it needs is installed
  ./spe lab up LABFILE                  start everything, print a status line per second, Ctrl-C stops
  ./spe lab run LABFILE [--duration D]  start, run the workload, stop, write the report
  ./spe lab down RUNDIR                 stop a lab that `up` or `run` started (from another shell)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from spe_tools.duration import parse_duration
from spe_tools.lab.definition.model import Lab, LabFileError, load_lab
from spe_tools.lab.definition.noise_pairs import noise_pairs
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.checks import check
from spe_tools.lab.start.running_lab import ROOT, down
from spe_tools.lab.watch.bypass_watch import static_warnings
from spe_tools.lab.watch.run_loop import run_lab, say, with_share_group
from spe_tools.rundir import access
from spe_tools.rundir.layout import RunDir
from spe_tools.thresholds import CROSSED_EXIT, Threshold, parse_thresholds, unknown_proxies


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
    """What will measure SPE's own noise floor in this lab (analysis/sections/noise.py)."""
    pairs = [" = ".join(pair) for pair in noise_pairs(lab)]
    dummies = [p.name for p in lab.proxies if p.kind == "dummy"]
    if not pairs and not dummies:
        return "; no dummy and no noise pair: the noise floor will not be measured"
    return "; noise floor measured by " + ", ".join([*dummies, *(f"noise pair {p}" for p in pairs)])


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
    printed), else 0. The analysis runs as its own program (`./spe report RUN --lab-summary`), as a user would
    run it: the lab that writes a run directory imports nothing of what reads it (docs/architecture.md)."""
    argv = [sys.executable, "-m", "analysis.cli", str(rundir), "--lab-summary"]
    if fail_on:
        argv += ["--fail-on", ",".join(str(t) for t in fail_on)]
    sys.stdout.flush()
    with access.umask(access.is_shared(rundir)):  # as private as the run it reports on (inherited)
        done = subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    if done.returncode not in (0, CROSSED_EXIT):
        print(f"spe lab: no report (exit {done.returncode}); run ./spe report {rundir}", file=sys.stderr)
        return 1 if fail_on else 0  # thresholds that cannot be checked must not pass a CI job
    return done.returncode


def cmd_down(args: argparse.Namespace) -> int:
    if not RunDir(args.rundir).is_run():
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
