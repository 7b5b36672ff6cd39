"""A run's report as data: the per-proxy table, the run's counts and what each section computed.

analysis/report.py builds it and writes it out; the sections' hooks (analysis/section.py) read it. It imports
nothing of the analysis, so both can depend on it. It knows no section by name: what a section computed is
`data[its name]`, and the section's own module reads it for others (`noise.of(report)`, `paired.ranking_of(report)`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Report:
    run: Path
    rows: list[dict]
    requests: int
    bad_lines: int
    bad_collector_lines: int
    collector_ports: dict  # port name -> PortUsage (empty without lab.json / access.log)
    skipped: dict = field(default_factory=dict)  # requests with no fan-out, by reason (the records' note)
    held: dict = field(default_factory=dict)  # the client held back for the slowest proxy (records.client_holds)
    https: dict = field(default_factory=dict)  # what went through CONNECT (analysis/readers/records.py https_counts)
    bad_cache_lines: int = 0  # lines naming a `cache` object that could not be read
    bad_parts: int = 0  # Parquet part files (./spe logs compact) that could not be read, skipped
    data: dict[str, Any] = field(default_factory=dict)  # what each section computed, by its name
    spe_version: str | None = None  # the SPE that ran it (lab.json's spe_version); None: a bare log, an older run
    # Every run read by its `run` label, its directory or log (one; several for a merged report, `run` the first)
    runs: dict[str, Path] = field(default_factory=dict)
    # What the report could not read and goes without (a stored run's lab.json or access.log not found), said in
    # every format
    notes: list[str] = field(default_factory=list)

    @property
    def merged(self) -> bool:
        return len(self.runs) > 1
