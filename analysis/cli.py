"""./spe report RUNDIR [--out DIR] [--format html,csv,json,text,png] [--fail-on THRESHOLDS] [--engine E]
   [--spark-master URL]
   ./spe report RUNDIR RUNDIR ... [--out DIR] [...]   (one report of several runs, merged)
   ./spe report s3a://BUCKET/PREFIX/ --engine spark [--spark-conf KEY=VALUE ...] [...]   (runs in object storage)
   ./spe report --compare RUNDIR RUNDIR ... [--out DIR]

Turns a run directory (the Multiplier's multiplier.jsonl or multiplier.rope.log, and when
present lab.json, the Collector's access.log and captures/) into report.html, summary.csv,
summary.json, report.txt and PNG figures (--format picks some: the figures are drawn only for html and
png). A log file may be given instead of a directory.
Several runs without --compare are merged into one report: runs of one evaluation taken by Multipliers on
different hosts (or client groups), each proxy's figures over all of them and per Multiplier (each record's
`multiplier`; a run's name for logs without it), the hit ratios from every run's Collector added up; each request
is named by its run and id (default --out: ./spe-report).
With --compare, the same proxies across runs side by side (compare.txt/.csv/.json).
With --fail-on (e.g. violations>0,mismatches>1%,noise>0), exits 3 when a threshold is crossed
(spe_tools/thresholds.py, docs/report.md). With --lab-summary, every format is written and the short form
is printed instead of the whole text: what `./spe lab run` ends with (the lab runs this as a program of its
own, so nothing of the lab imports the analysis).
The records are read through DuckDB (analysis/readers/engine.py): from RUN/parquet/ once `./spe logs compact RUN` has
run (and the lines written since, from the log), else from the JSON Lines; --engine memory parses the whole log
into memory as before; --engine spark [--spark-master URL] runs the same queries on Apache Spark over the run's
Parquet files (analysis/readers/spark_engine.py), also in object storage: an s3a:// prefix holding one compacted
run directory or several under run=NAME/ folders, merged (analysis/readers/object_store.py, docs/scale.md).
--spark-conf KEY=VALUE (repeatable, as spark-submit's --conf) sets the Spark session's settings: the S3 endpoint
(spark.hadoop.fs.s3a.endpoint), a cluster's memory...; the credentials come from the AWS environment variables or
provider chain.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.compare import compare_rows, compare_text, compared_report, write_compare
from analysis.readers.object_store import SCHEME, is_url
from analysis.readers.records import find_log, is_rope
from analysis.report import ENGINES, FORMATS, Progress, build_report, short_report, text_report, write_report
from analysis.report_data import Report
from analysis.sections import noise
from spe_tools.rundir.layout import RunDir
from spe_tools.thresholds import Threshold, parse_thresholds, threshold_lines, unknown_proxies


def fail_on_lines(fail_on: list[Threshold], rep: Report) -> tuple[int, list[str]]:
    """--fail-on's verdict on a report. The one section the command reads by name: the `noise` threshold is the
    noise section's floor, a number no per-proxy row holds; every other section reaches the output through the
    registry."""
    return threshold_lines(fail_on, rep.rows, noise.of(rep))


def _big(run: Path) -> bool:
    """Large enough (over 50 MB of log) that progress lines are worth printing."""
    files = [run] if run.is_file() else list(run.glob("*.jsonl"))
    return sum(f.stat().st_size for f in files if f.exists()) > 50_000_000


def _rope(parser: argparse.ArgumentParser, run: Path) -> bool:
    """Whether the run's log is ROPE's text log (a run without a log is the parser's error)."""
    try:
        return is_rope(find_log(run))
    except FileNotFoundError as e:
        parser.error(str(e))


def checked_formats(parser: argparse.ArgumentParser, args: argparse.Namespace) -> set[str]:
    """The formats asked for, once the arguments are known to go together (else the parser's error, exit 2)."""
    formats = {f.strip() for f in args.format.split(",") if f.strip()}
    if not formats <= FORMATS:
        parser.error(f"unknown format(s): {', '.join(sorted(formats - FORMATS))}")
    local = [run for run in args.run if isinstance(run, Path)]  # not the s3a:// prefixes (checked_urls)
    for run in local:
        if not run.exists():
            parser.error(f"{run} does not exist")
    if args.compare and (args.fail_on or args.lab_summary):
        parser.error("--fail-on and --lab-summary take one run, not a comparison")
    if len(args.run) > 1 and args.engine == "memory":
        parser.error("several runs are merged through DuckDB or Spark: --engine duckdb (the default) or spark")
    if len(args.run) > 1 and args.lab_summary:
        parser.error("--lab-summary takes one run")
    if len(local) > 1 and not args.compare and any(_rope(parser, run) for run in local):
        parser.error("a ROPE text log cannot be merged with other runs (it has no judge's verdicts to add up)")
    return formats


def spark_setting(text: str) -> tuple[str, str]:
    """--spark-conf's KEY=VALUE."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def checked_urls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The s3a:// prefixes given (none: local runs, as Paths from here on), once they go with the other
    arguments (else the parser's error, exit 2)."""
    urls = [run for run in args.run if is_url(run)]
    if not urls:
        args.run = [Path(run) for run in args.run]
        return []
    if wrong := [url for url in urls if not url.startswith(SCHEME)]:
        parser.error(f"{wrong[0]}: object storage is read through Hadoop's S3A filesystem, as {SCHEME}BUCKET/PREFIX/")
    if args.engine != "spark":
        parser.error(f"{urls[0]} is read by Spark: add --engine spark (with --spark-conf for the endpoint; "
                     "docs/report.md)")
    if len(urls) < len(args.run):
        parser.error("give either local run directories or s3a:// prefixes, not both")
    if args.compare or args.lab_summary:
        parser.error("--compare and --lab-summary read local runs; an s3a:// prefix gives one report of its runs")
    return urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./spe report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", nargs="+",
                        help="run directory or Multiplier log file; several are merged into one report, or "
                             "compared with --compare; with --engine spark, an s3a:// prefix of compacted runs")
    parser.add_argument("--compare", action="store_true", help="compare the runs given, proxy by proxy")
    parser.add_argument("--out", type=Path, help="where to write (default: RUN/report)")
    parser.add_argument("--format", default="html,csv,json,text,png",
                        help="comma-separated: html, csv, json, text, png (the figures)")
    parser.add_argument("--fail-on", type=parse_thresholds, default=[], metavar="THRESHOLDS",
                        help="exit 3 when one is crossed, e.g. violations>0,mismatches>1%%,noise>0,"
                             "violations[squid]>=3 (docs/report.md)")
    parser.add_argument("--engine", choices=ENGINES, default="duckdb",
                        help="read the records through DuckDB (default: RUN/parquet/ and what the log gained since, or "
                             "the JSON Lines), parse the whole log into memory, or run the same queries on Apache "
                             "Spark over RUN/parquet/ (compacted first when the log has more; docs/report.md)")
    parser.add_argument("--spark-master", metavar="URL",
                        help="with --engine spark: the cluster, e.g. spark://host:7077 (default: local[*], this "
                             "machine's cores)")
    parser.add_argument("--spark-conf", type=spark_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="with --engine spark, repeatable: a Spark setting, as spark-submit's --conf (e.g. "
                             "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000)")
    parser.add_argument("--lab-summary", action="store_true",
                        help="write every format and print the short form `./spe lab run` ends with")
    args = parser.parse_args(argv)
    urls = checked_urls(parser, args)
    formats = checked_formats(parser, args)
    if args.spark_master and args.engine != "spark":
        parser.error("--spark-master goes with --engine spark")
    if args.spark_conf and args.engine != "spark":
        parser.error("--spark-conf goes with --engine spark")
    if args.engine == "spark" and args.compare:
        parser.error("--compare reads its runs through DuckDB; --engine spark takes one run")
    reports = read_reports(args, urls)
    if reports is None:
        return 1
    if args.compare:
        rows = compare_rows(reports)
        out = args.out or Path("spe-compare")
        write_compare(rows, out)
        print(compare_text(rows))
        print(f"Comparison written to {out}/")
        return 0
    rep, run = reports[0], args.run[0]
    if unknown := unknown_proxies(args.fail_on, [row["name"] for row in rep.rows[1:]]):
        parser.error(f"--fail-on names proxies this run does not have: {', '.join(unknown)}")
    local = RunDir(run if run.is_dir() else run.parent).report if not (urls or rep.merged) else None
    out = args.out or local or Path("spe-report")
    if args.lab_summary:
        return lab_summary(rep, out, args.fail_on)
    write_report(rep, out, formats)
    print(text_report(rep))
    print(f"Report written to {out}/" + (" (open report.html)" if "html" in formats else ""))
    rc, lines = fail_on_lines(args.fail_on, rep)
    for line in lines:
        print(f"spe report: {line}", file=sys.stderr if rc else sys.stdout)
    return rc


def read_reports(args: argparse.Namespace, urls: list[str]) -> list | None:
    """Each run read (compared_report's with --compare); None when one could not be, said on stderr."""
    conf = dict(args.spark_conf)
    try:
        if args.compare:
            return [compared_report(run, Progress(sys.stderr.isatty() or _big(run)), args.engine) for run in args.run]
        if urls:
            from analysis.stored_report import build_stored_report  # the JVM only when asked for

            return [build_stored_report(urls, Progress(sys.stderr.isatty()), args.spark_master, conf)]
        big = any(_big(run) for run in args.run)
        return [build_report(args.run, Progress(sys.stderr.isatty() or big), args.engine,
                             spark_master=args.spark_master, spark_conf=conf)]
    except FileNotFoundError as e:
        print(f"spe report: {e}", file=sys.stderr)
        return None
    except Exception as e:
        # the Spark engine's and the object store's own errors, without importing them here
        if type(e).__name__ not in ("SparkUnavailableError", "StoreError"):
            raise
        print(f"spe report: error: {e}", file=sys.stderr)
        return None


def lab_summary(rep, out: Path, fail_on: list) -> int:
    """What `./spe lab run` prints at the end of a run: the short report, where the report is, the thresholds."""
    written = write_report(rep, out, FORMATS)
    for line in short_report(rep):
        print(line)
    print(f"spe lab: report {written[-1]}")
    rc, lines = fail_on_lines(list(fail_on), rep)
    for line in lines:
        print(f"spe lab: {line}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
