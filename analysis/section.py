"""What a report section declares: one analysis module's part of the report, from its data to its text and HTML.

A module declares its section once, as mitmproxy addons declare their options, and
analysis/sections/__init__.py registers it once. The report (analysis/report.py) and the lab's printout
only iterate the registry, so adding a section touches no other file (docs/report.md, "Adding a section").

Every hook is optional. The report calls them in this order:
- `rows(run)` once per run, in registry order, before any section computes: adds the section's `columns` to the
  per-proxy rows (`run.rows`) that other sections read (the hit ratios leave the prefetch counts out).
- `compute(run)` once per run, in registry order: the section's data, kept in `Report.data[name]`
  (analysis/report_data.py); it may add its `columns` to the per-proxy rows (`run.rows`).
- `applies(report)`: whether the run has anything for it to show; a section that does not apply shows nothing.
- `verdict_text(report)` and the template's `verdict()` macro: its answer to its `question`, on the first
  screen of report.html, at the top of report.txt and in what `./spe lab run` and `./spe demo` print.
- `details_text(report)` and the template's `details()` macro: its part of the details, below the per-proxy
  table, grouped by question like the verdict.
- `summary(report, rows)`: its keys of summary.json (it may add to the rows, the `proxies` list).
- `files(report)`: the files it writes beside the report (the figures' PNG files, `--formats png`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.readers.records import Records
    from analysis.report_data import Report
    from spe_tools.rundir.lab_json import LabJson
    from spe_tools.rundir.port_usage import PortUsage

# The questions the report's first screen answers, in its order; a section's verdict answers one of them.
BEST, BUGS, TRUST = "best", "bugs", "trust"
QUESTIONS = {BEST: "Which proxy is best?", BUGS: "Which bugs does each have?", TRUST: "Can I trust this run?"}
FIRST, LATEST = "first", "latest"  # RunData.examples


@dataclass(frozen=True)
class RunFiles:
    """One run a report reads: its directory (or the log file given instead), its Multiplier's log, its captures/
    (the Multiplier's --capture-dir) when it has one."""

    path: Path
    log: Path
    capture_dir: Path | None


@dataclass
class RunData:
    """What a section's `compute` may read: the run as the report has read it."""

    run: Path  # the run directory, or the log file given instead
    log: Path  # the Multiplier's log
    records: Records  # the run's counts and its proxies (in the log's order); no section reads its `results`
    tables: ReplyQueries  # every reply and verdict as SQL (the views `results`, `verdicts`), on either engine
    lab: LabJson | None  # lab.json: the run's topology; None for a bare log
    usage: dict[str, PortUsage] | None  # the Collector's access.log per port name; None without lab.json or log
    capture_dir: Path | None  # the run's captures/ (the Multiplier's --capture-dir), when it has one
    rows: list[dict]  # the per-proxy table: the Collector's row, then one per proxy; a section adds its columns
    # Which request a finding's example is: FIRST (the report: stable, and inside the Multiplier's capture budget,
    # which fills early in a long run) or LATEST (the live scorecard: what the proxies do now).
    examples: str = FIRST
    # Every run read, by its `run` label (the column of the views): one, or several merged (`./spe report RUN1
    # RUN2 ...`), whose requests are told apart by (run, id). `run`, `log` and `capture_dir` above are the first's.
    runs: dict[str, RunFiles] = field(default_factory=dict)

    @property
    def merged(self) -> bool:
        return len(self.runs) > 1


def always(report: Report) -> bool:
    return True


def fmt(value: object, digits: int = 2) -> str:
    """A value as the report prints it: '-' for none, floats with `digits` decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


@dataclass(frozen=True)
class Section:
    name: str  # its id: the HTML anchor of its details, the key of its data in Report.data
    title: str  # the heading of its details
    question: str | None = None  # BEST, BUGS or TRUST: the question its verdict answers (None: details only)
    columns: tuple[str, ...] = ()  # the per-proxy columns it adds to summary.csv / summary.json, in order
    rows: Callable[[RunData], None] | None = None
    compute: Callable[[RunData], Any] | None = None
    applies: Callable[[Report], bool] = always
    verdict_text: Callable[[Report], list[str]] | None = None
    details_text: Callable[[Report], list[str]] | None = None
    # Its HTML: a template under analysis/templates/ defining the macros verdict() and/or details(); without
    # one (or without a macro), verdict_text's lines become paragraphs and details_text's a <pre>.
    template: str | None = None
    context: Callable[[Report], dict] | None = None  # more variables for its template
    summary: Callable[[Report, list[dict]], dict] | None = None
    # The files it writes beside the report (name -> contents; `--formats png`): the figures' PNG files.
    files: Callable[[Report], Mapping[str, bytes]] | None = None

    def verdict_lines(self, report: Report) -> list[str]:
        return self.verdict_text(report) if self.verdict_text else []

    def details_lines(self, report: Report) -> list[str]:
        return self.details_text(report) if self.details_text else []
