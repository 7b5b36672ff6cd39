"""Which Collector a run used, and how it logged, read from its directory: lab.json's "collector" (kind,
uncacheable_ttl_s, whether it stripped query terms), else the Collector's own squid.conf (only the patched one has
collector_* directives). Whether it shared uncacheable replies decides what a body mismatch on one means; whether
it logged URLs without their query, how its access.log's URLs are matched with the records'. And what it served on
each port (collector_usage), the hit ratios' input. The log's reader and the per-port counts are the run
directory's contract (spe_tools/rundir/access_log.py and port_usage.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from spe_tools.rundir.lab_json import DEFAULT_UNCACHEABLE_TTL_S, LabJson
from spe_tools.rundir.layout import ACCESS_LOG, RunDir
from spe_tools.rundir.port_usage import PortUsage, parse_access_log

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries

NAMES = {"spe": 'the patched Collector (kind "spe")', "squid": 'Debian\'s stock Squid as the Collector (kind "squid")'}


@dataclass(frozen=True)
class RunCollector:
    kind: str | None  # "spe" (patched), "squid" (stock); None: the run directory does not say
    uncacheable_ttl_s: int = 0  # how long the patched Collector shares an uncacheable reply (0: it does not)

    @property
    def shares_uncacheable(self) -> bool:
        """Every proxy gets the copy the direct path got, instead of a fetch of its own."""
        return self.kind == "spe" and self.uncacheable_ttl_s > 0

    @property
    def name(self) -> str:
        return NAMES.get(self.kind or "", f"a Collector of kind {self.kind!r}" if self.kind else "an unknown Collector")


def _from_squid_conf(conf: Path) -> RunCollector:
    ttl = re.search(r"^collector_uncacheable_ttl\s+(\d+)", conf.read_text(errors="replace"), re.M)
    return RunCollector("spe", int(ttl.group(1))) if ttl else RunCollector("squid")


def collector_of_run(run: Path | None) -> RunCollector:
    """The Collector of run directory `run` (kind None when it is not a directory or records nothing)."""
    if run is None or not Path(run).is_dir():
        return RunCollector(None)
    lab_json = LabJson.read(run)
    if lab_json is not None and lab_json.collector.kind:
        ttl = lab_json.collector.uncacheable_ttl_s
        return RunCollector(lab_json.collector.kind, int(DEFAULT_UNCACHEABLE_TTL_S if ttl is None else ttl))
    conf = RunDir(run).collector_conf
    return _from_squid_conf(conf) if conf.exists() else RunCollector(None)


def strips_query_terms(lab_json: LabJson | None) -> bool:
    """Whether the run's Collector logged URLs without their query (lab.json; older runs: no)."""
    return lab_json is not None and lab_json.collector.strips_query_terms()


def failed_legs(tables: ReplyQueries) -> dict[str, set[str]]:
    """Per proxy, the tags of the client requests whose leg there delivered no response (the rows
    cache_columns leaves out of the responses)."""
    return {name: set(tags) for name, tags in tables.rows(
        "SELECT name, list(DISTINCT tag) FROM results WHERE (status IS NULL OR error IS NOT NULL) AND tag IS NOT NULL "
        "GROUP BY name")}


def collector_usage(run: Path, tables: ReplyQueries | None = None) -> tuple[dict[str, PortUsage], int] | None:
    """Usage per port name from the run's lab.json and the Collector's access.log, if present (with the
    run's replies, `tables`, the requests of failed legs counted apart: failed_legs)."""
    lab_json = LabJson.read(run)
    if lab_json is None:
        return None
    log = Path(run) / (lab_json.collector.access_log or ACCESS_LOG)
    if not log.exists():
        return None
    return parse_access_log(log, lab_json.collector.port_names(), failed_legs(tables) if tables is not None else None)
