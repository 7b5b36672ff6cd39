"""A run's report, as text, CSV, JSON and HTML: the per-proxy table and the sections analysis/sections registers.

report.html and report.txt open with the verdict, each section's answer to one of three questions (which proxy
is best, which bugs each has, can I trust this run: analysis/section.py QUESTIONS), then the per-proxy table,
then each section's details in the same order. `./spe lab run` and `./spe demo` print the table and the
verdict (short_report).
"""

from __future__ import annotations

import csv
import html
import json
import os
import sys
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from analysis import sections, stats_sql
from analysis.readers.engine import FrameTables, ReplyQueries, RunQueries, RunTables, run_labels
from analysis.readers.judge_records import load_judged_run
from analysis.readers.records import Records, find_log, is_rope
from analysis.readers.run_collector import collector_usage
from analysis.report_data import Report
from analysis.section import FIRST, QUESTIONS, RunData, RunFiles, Section, fmt
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.port_usage import PortUsage, add_usage
from spe_tools.rundir.records import RESULT_CLASSES

# The per-proxy table's columns of summary.csv / summary.json (documented in docs/report.md); each section's
# follow (summary_columns).
CORE_COLUMNS = ["name", "requests", "responses", "ok_pct", *[f"{c.lower()}_pct" for c in RESULT_CLASSES[1:]],
                "latency_mean_ms", "latency_mean_ci_low_ms", "latency_mean_ci_high_ms", "latency_median_ms",
                "latency_median_ci_low_ms", "latency_median_ci_high_ms", "latency_p90_ms", "latency_p99_ms",
                "connect_mean_ms", "ttfb_mean_ms", "ttfb_median_ms", "queued_median_ms", "queued_p99_ms",
                "body_bytes"]


# What write_report can write: report.html, summary.csv, summary.json, report.txt and the figures' PNG files.
FORMATS = frozenset({"html", "csv", "json", "text", "png"})


def summary_columns() -> list[str]:
    """summary.csv / summary.json columns, in order: the per-proxy table's, then each section's (how far to
    trust the row, what the cache-rule judge found, prefetching...)."""
    return [*CORE_COLUMNS, *sections.columns()]


class Progress:
    """Phase lines with elapsed time on stderr, for runs big enough to make a user wait."""

    def __init__(self, enabled: bool):
        self.enabled, self.start = enabled, time.perf_counter()

    def __call__(self, what: str) -> None:
        if self.enabled:
            print(f"spe report: {time.perf_counter() - self.start:6.1f} s  {what}", file=sys.stderr, flush=True)


def _log_size(run: Path) -> int:
    files = [run] if run.is_file() else [*run.glob("*.jsonl"), *run.glob("*.rope.log")]
    return sum(f.stat().st_size for f in files)


# How the report reads a run: "duckdb" (analysis/readers/engine.py: Parquet or JSON Lines through DuckDB) or
# "memory" (the whole log parsed by Arrow into polars, as before DuckDB, and a ROPE text log always); the same
# queries on either.
ENGINES = ("duckdb", "memory", "spark")


def read_run(logs: list[Path], engine: str, progress: Progress, spark_master: str | None = None,
             spark_conf: dict[str, str] | None = None) -> tuple[ReplyQueries, Records, int, list[dict], int]:
    """The queries the sections read the replies and verdicts through (open: the caller closes them), the runs'
    records, the lines naming an unreadable `cache` object, the per-proxy table and how many Parquet part files
    could not be read. A ROPE text log is always read into memory; several runs only through DuckDB or Spark."""
    if engine == "memory" or is_rope(logs[0]):
        if len(logs) > 1:
            raise ValueError("several runs are read through DuckDB or Spark (--engine duckdb or spark), and a ROPE "
                             "text log is not one of them")
        records, verdicts, bad_cache_lines = load_judged_run(logs[0])
        frames = FrameTables(records.results, verdicts, run_labels(logs)[0])
        return frames, records, bad_cache_lines, stats_sql.proxy_table(frames, records.proxies), 0
    if engine == "spark":
        from analysis.readers.spark_engine import DEFAULT_MASTER, SparkTables  # the JVM only when asked for

        return read_tables(SparkTables(logs, spark_master or DEFAULT_MASTER, spark_conf), progress)
    return read_tables(RunTables(logs), progress)


def read_tables(tables: RunQueries, progress: Progress) -> tuple[ReplyQueries, Records, int, list[dict], int]:
    """read_run's answer from the runs' tables, open (closed here when it fails)."""
    try:
        progress(f"{tables.requests:,} records from {tables.source} ({tables.bad_lines} unreadable lines); "
                 "computing tables")
        records = tables.records()
        table = stats_sql.proxy_table(tables, records.proxies)
        return tables, records, tables.bad_cache_lines(), table, tables.bad_parts
    except BaseException:
        tables.close()
        raise


def run_files(runs: list[Path]) -> dict[str, RunFiles]:
    """Each run given, by its `run` label (run_labels): its directory or log, its Multiplier's log, its captures."""
    logs = [find_log(run) for run in runs]
    captures = [RunDir(run).captures if run.is_dir() else None for run in runs]
    return {label: RunFiles(run, log, found if found is not None and found.is_dir() else None)
            for label, run, log, found in zip(run_labels(logs), runs, logs, captures, strict=True)}


def with_lab_multipliers(runs: list[Path]) -> tuple[list[Path], set[Path]]:
    """The runs, each followed by its lab's other Multipliers' run directories (a lab with several [[multiplier]]
    tables: lab.json's other_multipliers), and the set of those added: they share their run's Collector."""
    out: list[Path] = []
    shared: set[Path] = set()
    for run in runs:
        lab = LabJson.read(run) if run.is_dir() else None
        others = [d for d in lab.other_multiplier_runs(run) if find_log_or_none(d)] if lab else []
        out += [run, *others]
        shared.update(others)
    return out, shared


def find_log_or_none(run: Path) -> Path | None:
    try:
        return find_log(run)
    except FileNotFoundError:  # a Multiplier that never started wrote nothing
        return None


def merged_usage(runs: list[Path], tables: ReplyQueries,
                 shared: Collection[Path] = ()) -> tuple[dict[str, PortUsage] | None, int]:
    """The Collector's usage per port name (run_collector.collector_usage), summed over the runs, each of which had its
    own Collector (those in `shared` are read with the run whose Collector they shared); None when one of them has
    none to read (its hit ratios would be missing from the sum)."""
    read = [collector_usage(run, tables) if run.is_dir() else None for run in runs if run not in shared]
    if any(found is None for found in read):
        return None, sum(found[1] for found in read if found)
    return add_usage([usage for usage, _ in read]), sum(bad for _, bad in read)


def build_report(run: Path | Sequence[Path], progress: Progress | None = None, engine: str = "duckdb",
                 examples: str = FIRST, computed: Collection[str] | None = None,
                 spark_master: str | None = None, spark_conf: dict[str, str] | None = None) -> Report:
    """The run (or several runs, merged into one report) read once: the per-proxy table, then each registered
    section's data, in registry order. `examples`: FIRST or LATEST, which request of a finding a section shows
    (RunData.examples). `computed`: the names of the sections to compute (None: every one; `--compare` computes
    only those that change the rows it shows, analysis/compare.py)."""
    runs, shared = with_lab_multipliers([Path(run)] if isinstance(run, (str, Path)) else [Path(r) for r in run])
    progress = progress or Progress(False)
    progress(f"reading {sum(_log_size(r) for r in runs) / 1e6:,.0f} MB of Multiplier log")
    files = run_files(runs)
    read = read_run([f.log for f in files.values()], engine, progress, spark_master, spark_conf)
    return report_of(files, read, progress, examples, computed, shared)


def report_of(files: dict[str, RunFiles], read: tuple, progress: Progress, examples: str = FIRST,
              computed: Collection[str] | None = None, shared: Collection[Path] = (),
              shown: dict[str, str] | None = None) -> Report:
    """The report of the runs `files` (by label) whose records read_run has read (`read`, closed here): the
    sections' data in registry order. `shown`: what the report names each run by, when not its directory."""
    first = next(iter(files.values()))
    tables, records, bad_cache_lines, table, bad_parts = read
    with tables:
        usage, bad_collector_lines = merged_usage([f.path for f in files.values()], tables, shared)
        lab = LabJson.read(first.path) if first.path.is_dir() else None  # the topology: the first run's
        inputs = RunData(first.path, first.log, records, tables, lab, usage, first.capture_dir, table, examples,
                         runs=files)
        for section in sections.SECTIONS:
            if section.rows:
                section.rows(inputs)
        data = {}
        for section in sections.SECTIONS:
            if section.compute and (computed is None or section.name in computed):
                progress(f"section {section.name}")
                data[section.name] = section.compute(inputs)
    names = shown or {label: f.path for label, f in files.items()}
    return Report(next(iter(names.values())), table, records.requests, records.bad_lines, bad_collector_lines,
                  usage or {}, skipped=records.skipped, held=records.held, https=records.https,
                  bad_cache_lines=bad_cache_lines, bad_parts=bad_parts, data=data,
                  spe_version=lab.spe_version if lab else None, runs=names)


def skipped_text(rep: Report) -> str:
    """Why client requests outnumber each proxy's: the fan-outs that did not happen, by reason."""
    if not rep.skipped:
        return ""
    reasons = "; ".join(f"{n} {reason}" for reason, n in rep.skipped.items())
    return f"{sum(rep.skipped.values())} fan-outs skipped, so no proxy saw them ({reasons})"


def https_text(rep: Report) -> str:
    """HTTPS in the run, when it had CONNECTs: how much was read inside intercepted tunnels and multiplied."""
    h = rep.https
    if not h:
        return ""
    text = (f"HTTPS: {h['requests']:,} requests read inside {h['intercepted_tunnels']:,} intercepted TLS tunnels, "
            f"multiplied like HTTP; {h['opaque_tunnels']:,} CONNECT tunnels passed unread")
    return text + (f"; {h['failed_handshakes']:,} TLS handshakes failed" if h["failed_handshakes"] else "")


TEXT_COLUMNS = [("responses", "responses"), ("ok_pct", "match %"), ("latency_mean_ms", "mean ms"),
                ("latency_median_ms", "median ms"), ("latency_p90_ms", "p90 ms"), ("latency_p99_ms", "p99 ms"),
                ("hit_ratio", "hit ratio"), ("byte_hit_ratio", "byte hit"), ("rel_bandwidth_received", "rel. bw in"),
                ("rel_bandwidth_sent", "rel. bw out")]


def text_table(rows: list[dict]) -> str:
    width = max(len(r["name"]) for r in rows) + 2
    head = f"{'':{width}}" + "".join(f"{label:>12}" for _, label in TEXT_COLUMNS)
    lines = [head]
    for r in rows:
        lines.append(f"{r['name']:{width}}" + "".join(f"{fmt(r.get(k)):>12}" for k, _ in TEXT_COLUMNS))
    return "\n".join(lines)


def verdict_text(rep: Report) -> list[str]:
    """Each question, then the answers of the sections that give one (their verdict_text), in registry order."""
    out: list[str] = []
    shown = sections.shown(rep)
    for question, heading in QUESTIONS.items():
        lines = [line for s in shown if s.question == question for line in s.verdict_lines(rep)]
        if lines:
            out += [*([""] if out else []), heading, *lines]
    return out


def short_report(rep: Report) -> list[str]:
    """What `./spe lab run` and `./spe demo` print: how much went through TLS, the per-proxy table, the verdict."""
    verdict = verdict_text(rep)
    return [*([https_text(rep)] if rep.https else []), text_table(rep.rows), *([""] if verdict else []), *verdict]


def text_report(rep: Report) -> str:
    """report.txt: what the run was, the verdict, the per-proxy table, then each section's details."""
    out = [f"SPE report: {rep.run}" + (f" (run by SPE {rep.spe_version})" if rep.spe_version else ""),
           f"{rep.requests} client requests"
           + (f", {rep.bad_lines} unreadable log line(s) skipped" if rep.bad_lines else "")
           + (f", {rep.bad_parts} unreadable Parquet file(s) skipped" if rep.bad_parts else "")
           + (f"; {skipped_text(rep)}" if rep.skipped else ""), *([https_text(rep)] if rep.https else []),
           *(f"Not read: {note}" for note in rep.notes)]
    if verdict := verdict_text(rep):
        out += ["", *verdict]
    out += ["", "Per proxy (ROPE's Tables 1 and 2):", text_table(rep.rows)]
    for section in sections.shown(rep):
        if lines := section.details_lines(rep):
            out += ["", *lines]
    return "\n".join(out) + "\n"


def _escape(value: object) -> Markup:
    """Every value the page shows, escaped as html.escape does (the page's text has always been)."""
    return value if isinstance(value, Markup) else Markup(html.escape(str(value)))


HTML = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
                   undefined=StrictUndefined, finalize=_escape)


def _file_link(out: Path | None):
    """A file of the run (a capture, a repro case) as the page links it: relative to where the page is written,
    when known."""
    return lambda path: Path(os.path.relpath(path, out)).as_posix() if out else Path(path).resolve().as_uri()


def _lines_html(lines: list[str], tag: str) -> Markup:
    return Markup("").join(Markup(f"<{tag}>{{}}</{tag}>").format(line) for line in lines)


def section_html(section: Section, rep: Report, page: dict) -> tuple[Markup, Markup]:
    """A section's verdict and details on the page: its template's macros, else its text in <p> and <pre>."""
    macros = None
    if section.template:
        # `data`: what the section computed (Report.data[its name]), so its template names no section
        context = {**page, "data": rep.data.get(section.name), **(section.context(rep) if section.context else {})}
        macros = HTML.get_template(section.template).make_module(context)
    verdict = getattr(macros, "verdict", None)
    details = getattr(macros, "details", None)
    lines = section.details_lines(rep)
    return (Markup(verdict()) if verdict else _lines_html(section.verdict_lines(rep), "p"),
            Markup(details()) if details else _lines_html(["\n".join(lines)] if lines else [], "pre"))


def html_report(rep: Report, out: Path | None = None, live: str = "") -> str:
    """report.html: the verdict (an answer per question), a line of links, the per-proxy table, the details.
    `live`: what the live scorecard adds under the title (analysis/live.py); nothing in report.html."""
    page = {"rep": rep, "fmt": fmt, "file_link": _file_link(out)}
    shown = sections.shown(rep)
    parts = {s.name: section_html(s, rep, page) for s in shown}
    verdict = [(heading, [parts[s.name][0] for s in shown if s.question == question and parts[s.name][0]])
               for question, heading in QUESTIONS.items()]
    return HTML.get_template("report.html.j2").render(
        **page, live=Markup(live), columns=TEXT_COLUMNS, skipped=skipped_text(rep), https=https_text(rep),
        verdict=[(heading, answers) for heading, answers in verdict if answers],
        details=[(s, parts[s.name][1]) for s in shown if parts[s.name][1]])


def summary_json(rep: Report) -> dict:
    """summary.json: the run, the per-proxy rows (summary_columns) and each section's keys."""
    rows = [{c: r.get(c) for c in summary_columns()} for r in rep.rows]
    summary = {"run": str(rep.run), "spe_version": rep.spe_version, "requests": rep.requests,
               "bad_lines": rep.bad_lines, "bad_parquet_files": rep.bad_parts, "proxies": rows,
               "skipped_fanouts": rep.skipped, "client_held": rep.held, "https": rep.https}
    if rep.notes:
        summary["not_read"] = rep.notes
    for section in sections.SECTIONS:
        if section.summary:
            summary.update(section.summary(rep, rows))
    return summary


def write_report(rep: Report, out: Path, formats: set[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if "png" in formats:
        for section in sections.SECTIONS:
            for name, contents in (section.files(rep) if section.files else {}).items():
                (out / name).write_bytes(contents)
                written.append(out / name)
    if "csv" in formats:
        with (out / "summary.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=summary_columns(), extrasaction="ignore")
            w.writeheader()
            w.writerows(rep.rows)
        written.append(out / "summary.csv")
    if "json" in formats:
        (out / "summary.json").write_text(json.dumps(summary_json(rep), indent=2, default=str))
        written.append(out / "summary.json")
    if "text" in formats:
        (out / "report.txt").write_text(text_report(rep))
        written.append(out / "report.txt")
    if "html" in formats:
        (out / "report.html").write_text(html_report(rep, out))
        written.append(out / "report.html")
    return written
