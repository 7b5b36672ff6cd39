"""A run's report as data: the per-proxy table, the run's counts and what each section computed.

analysis/report.py builds it and writes it out; the sections' hooks (analysis/section.py) read it. It imports
nothing of the analysis, so both can depend on it. The sections whose data other code reads by a name of its own
(summary.json's keys, the lab's printout, the comparison) take their names from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The names of the sections the properties below read (each section declares its own: Section.name).
MISMATCHES = "mismatches"  # analysis/mismatches.py
NOISE_FLOOR = "noise-floor"  # analysis/noise.py
BYPASS = "bypass"  # analysis/bypass.py
CACHE_RULES = "cache-rules"  # analysis/cache_rules.py
PAIRED = "paired"  # analysis/paired.py
FIGURES = "figures"  # analysis/plots.py


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
    https: dict = field(default_factory=dict)  # what went through CONNECT (analysis/records.py https_counts)
    bad_cache_lines: int = 0  # lines naming a `cache` object that could not be read
    bad_parts: int = 0  # Parquet part files (./spe logs compact) that could not be read, skipped
    data: dict[str, Any] = field(default_factory=dict)  # what each section computed, by its name

    # The sections' data under the names summary.json gives it.
    @property
    def noise(self) -> dict:
        """The noise floor SPE measured (analysis/noise.py)."""
        return self.data.get(NOISE_FLOOR, {})

    @property
    def bypass(self) -> dict:
        """Proxy -> evidence it bypassed its Collector port (analysis/bypass.py)."""
        return self.data.get(BYPASS, {})

    @property
    def cache_rules(self) -> list[dict]:
        """What the cache-rule judge found, per source (analysis/cache_rules.py); empty for a log without it."""
        return self.data.get(CACHE_RULES, [])

    @property
    def pairs(self) -> list[dict]:
        """Paired differences per pair of proxies (analysis/paired.py)."""
        return self.data.get(PAIRED, {}).get("pairs", [])

    @property
    def ranking(self) -> list[list[str]]:
        """Tiers, fastest first; a tier is a tie."""
        return self.data.get(PAIRED, {}).get("ranking", [])

    @property
    def mismatches(self) -> dict:
        return self.data[MISMATCHES]

    @property
    def figures(self) -> Mapping[str, bytes]:
        """PNG file name -> contents, each drawn when first read (analysis/plots.py Figures)."""
        return self.data.get(FIGURES, {})
