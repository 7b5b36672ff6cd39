"""./spe report RUNDIR [--out DIR] [--format html,csv,json,text]

Turns a run directory (the Multiplier's multiplier.jsonl or multiplier.rope.log, and when
present lab.json, the Collector's access.log and captures/) into report.html, summary.csv,
summary.json, report.txt and PNG figures. A log file may be given instead of a directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.report import build_report, text_report, write_report

FORMATS = {"html", "csv", "json", "text"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spe report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="run directory or Multiplier log file")
    parser.add_argument("--out", type=Path, help="where to write (default: RUN/report)")
    parser.add_argument("--format", default="html,csv,json,text", help="comma-separated: html, csv, json, text")
    args = parser.parse_args(argv)
    formats = {f.strip() for f in args.format.split(",") if f.strip()}
    if not formats <= FORMATS:
        parser.error(f"unknown format(s): {', '.join(sorted(formats - FORMATS))}")
    if not args.run.exists():
        parser.error(f"{args.run} does not exist")
    try:
        rep = build_report(args.run)
    except FileNotFoundError as e:
        print(f"spe report: {e}", file=sys.stderr)
        return 1
    out = args.out or (args.run / "report" if args.run.is_dir() else args.run.parent / "report")
    write_report(rep, out, formats)
    print(text_report(rep))
    print(f"Report written to {out}/" + (" (open report.html)" if "html" in formats else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
