"""./spe demo: run the default lab (configs/labs/default.toml) and print its report.

The default lab puts Squid (twice: a noise pair), Traffic Server (passive, and with prefetching),
Varnish, Apache, nginx and the dummy side by side behind the patched Collector, with the synthetic origin and the
load client (spe_tools.workload.load) for about two minutes (--duration to change). Until the patched Collector is
built, Debian's stock Squid stands in for it (the report says so). Everything stays in one run
directory under runs/ (see --runs-dir), which is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from spe_tools import collector
from spe_tools.duration import parse_duration
from spe_tools.lab.cli import write_report
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import Lab, LabFileError, load_lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.run_directory import demo_runs_dir
from spe_tools.lab.watch.run_loop import run_lab, say, with_share_group

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LAB = ROOT / "configs/labs/default.toml"


def adapt(lab: Lab) -> tuple[Lab, list[str]]:
    """The lab this machine can run: stock Squid for a missing patched Collector, no proxy whose package is missing."""
    notes = []
    if lab.collector.kind == "spe" and collector.missing(lab.collector.kind):
        lab = replace(lab, collector=replace(lab.collector, kind="squid"))
        notes.append("the patched Collector is not available yet: Debian's stock Squid stands in (no timing replay,"
                     " uncacheable replies not shared, so uncacheable objects differ for every proxy)")
    kept = []
    for p in lab.proxies:
        problems = KINDS[p.kind].missing()
        if problems:
            notes.append(f"proxy {p.name!r} left out: {'; '.join(problems)}")
        else:
            kept.append(p)
    return replace(lab, proxies=tuple(kept)), notes


def main() -> int:
    parser = argparse.ArgumentParser(prog="./spe demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab", type=Path, default=DEFAULT_LAB, help="lab file (default: configs/labs/default.toml)")
    parser.add_argument("--duration", type=parse_duration,
                        help="workload duration, e.g. 45s, 10m (default: the lab file's, 120 s)")
    parser.add_argument("--runs-dir", type=Path,
                        help="where to create the run directory (default: runs/, or /var/tmp/spe-runs when the "
                        "proxies' users cannot pass through the checkout's path, as in root's home)")
    parser.add_argument("--share-group", metavar="GROUP",
                        help="let this group read the run directory (default: only you can)")
    args = parser.parse_args()
    try:
        lab, notes = adapt(with_share_group(load_lab(args.lab), args.share_group))
    except LabFileError as e:
        print(f"spe demo: {e}", file=sys.stderr)
        return 2
    for note in notes:
        say(f"spe demo: note: {note}")
    runs_dir, note = demo_runs_dir(args.runs_dir, lab, os.geteuid() == 0)
    if note:
        notes.append(note)
        say(f"spe demo: note: {note}")
    duration = args.duration if args.duration is not None else lab.workload.duration_s
    try:
        rc, rundir = run_lab(lab, duration, runs_dir)
    except LabError as e:  # before the run directory exists (e.g. a share group that cannot be used)
        print(f"spe demo: error: {e}", file=sys.stderr)
        return 1
    if rc != 0:
        print(f"spe demo: the lab failed; its logs are in {rundir}", file=sys.stderr)
        return rc
    rc = write_report(rundir)
    say(f"spe demo: run directory {rundir}")
    say("spe demo: logs: multiplier.jsonl (JSON Lines), multiplier.rope.log (ROPE text), collector/access.log, "
        "proxies/<name>/ (each proxy's config and logs), <component>.out (stdout/stderr); lab.json (topology)")
    for note in notes:
        say(f"spe demo: note: {note}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
