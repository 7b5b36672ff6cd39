"""./spe logs compact RUN: the run's multiplier.jsonl as Parquet files under RUN/parquet/, partitioned by hour,
for `./spe report` to read in bounded memory (spe_tools/rundir/parquet_log.py, docs/log-format.md). Incremental:
run it again (or while the run goes on) and it adds what the log gained since. A lab run with several Multipliers
has each other one's run directory compacted too (lab.json's other_multipliers)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.parquet_log import compact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./spe logs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    compact_cmd = commands.add_parser("compact", help="turn RUN/multiplier.jsonl into RUN/parquet/ (incremental)")
    compact_cmd.add_argument("run", type=Path, help="run directory")
    args = parser.parse_args(argv)
    lab = LabJson.read(args.run) if args.run.is_dir() else None
    for run in [args.run, *(lab.other_multiplier_runs(args.run) if lab else [])]:
        try:
            state, added, skipped = compact(run)
        except (FileNotFoundError, NotADirectoryError) as e:
            print(f"spe logs: {e}", file=sys.stderr)
            return 1
        print(f"compacted {added:,} records" + (f" ({skipped:,} unreadable lines skipped)" if skipped else "")
              + f" into {RunDir(run).parquet}/: {state.records:,} records in all, {state.bad_lines:,} unreadable "
              f"lines skipped, {state.offset:,} bytes of the log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
