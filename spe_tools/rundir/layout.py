"""Where everything lives in a run directory: each name spelled once, here.

The lab (spe_tools/lab) creates these, the analysis, ./spe repro and the benchmarks read them. The
names relative to the run directory are also what lab.json records (its paths are relative, so a run
directory can be moved). A process the lab starts writes its output to <name>.out and, for a Squid,
keeps its files in the directory named after it (spe_tools.process.ProcessGroup, spe_tools.squid).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LAB_JSON = "lab.json"  # the topology as it ran (spe_tools.rundir.lab_json)
LAB_TOML = "lab.toml"  # the lab file as it ran, which ./spe lab run can start again
PIDS = "pids.json"  # every process while the lab runs, for ./spe lab down
STATUS_JSON = "status.json"  # the state of every process, rewritten each second while the lab runs (status_json)
PROXY_COSTS = "proxy-costs.json"  # each proxy's CPU, memory and disk, rewritten while the lab runs (proxy_costs_json)
MULTIPLIER_LOG = "multiplier.jsonl"  # the Multiplier's records (docs/log-format.md)
ROPE_LOG = "multiplier.rope.log"  # the same in ROPE's text format
PARQUET = "parquet"  # ./spe logs compact's Parquet copy of the records (spe_tools.rundir.parquet_log)
CAPTURES = "captures"  # the Multiplier's captures of mismatching replies
PROXIES = "proxies"  # one directory per proxy under test: its rendered config and its own logs
ORIGIN_TLS = "origin-tls"  # the synthetic origin's test CA and certificate ([origin] tls)
WORKLOAD_JSON = "workload.json"  # the load client's or the browser's summary
MULTIPLIERS = "multipliers"  # a lab's other Multipliers: multipliers/NAME/, each a run directory of its own
REPORT = "report"  # ./spe report's and ./spe lab run's output
REPRO = "repro"  # ./spe repro's cases: repro/<request id>-<proxy name>/ (repro_dir)
CASE_JSON = "case.json"  # a repro case's file, in the case's directory (here, or wherever --out put it)

# The processes whose names the layout depends on (their output and, for the Collector, its directory).
ORIGIN = "origin"
COLLECTOR = "collector"
MULTIPLIER = "multiplier"
WORKLOAD = "workload"
LAB = "lab"  # the lab itself, the first entry of pids.json
LIVE = "live"  # the live scorecard page's server ([live] enabled, analysis/live.py)

ACCESS_LOG = f"{COLLECTOR}/access.log"  # spe_tools.rundir.access_log reads it
CACHE_LOG = f"{COLLECTOR}/cache.log"
SQUID_CONF = "squid.conf"  # a Squid's configuration in its directory (spe_tools.squid.run_squid)
COLLECTOR_CONF = f"{COLLECTOR}/{SQUID_CONF}"
PREFETCH_AGENT_LOG = "prefetch.jsonl"  # in a squid-prefetch proxy's directory: its agent's fetches


def output_of(process: str) -> str:
    """A started process's stdout and stderr (spe_tools.process.ProcessGroup writes it)."""
    return f"{process}.out"


def multiplier_dir(name: str) -> str:
    """Where a lab's other Multiplier (not its first) writes its log, ROPE log, captures and workload summary."""
    return f"{MULTIPLIERS}/{name}"


def proxy_dir(name: str) -> str:
    return f"{PROXIES}/{name}"


def repro_dir(request_id: int, proxy: str) -> str:
    return f"{REPRO}/{request_id}-{proxy}"


def capture_file(request_id: int, proxy: str) -> str:
    """A mismatch capture's name in the captures directory (the Multiplier's --capture-dir writes it so)."""
    return f"{request_id:08d}-{proxy}.txt"


@dataclass(frozen=True)
class RunDir:
    """A run directory's paths. `RunDir(path).multiplier_log` and so on; nothing is created or checked."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    def __truediv__(self, relative: str) -> Path:
        return self.path / relative

    @property
    def lab_json(self) -> Path:
        return self.path / LAB_JSON

    @property
    def lab_toml(self) -> Path:
        return self.path / LAB_TOML

    @property
    def pids(self) -> Path:
        return self.path / PIDS

    @property
    def status(self) -> Path:
        return self.path / STATUS_JSON

    @property
    def proxy_costs(self) -> Path:
        return self.path / PROXY_COSTS

    @property
    def multiplier_log(self) -> Path:
        return self.path / MULTIPLIER_LOG

    @property
    def rope_log(self) -> Path:
        return self.path / ROPE_LOG

    @property
    def parquet(self) -> Path:
        return self.path / PARQUET

    @property
    def captures(self) -> Path:
        return self.path / CAPTURES

    @property
    def proxies(self) -> Path:
        return self.path / PROXIES

    @property
    def origin_tls(self) -> Path:
        return self.path / ORIGIN_TLS

    @property
    def access_log(self) -> Path:
        return self.path / ACCESS_LOG

    @property
    def cache_log(self) -> Path:
        return self.path / CACHE_LOG

    @property
    def collector_conf(self) -> Path:
        return self.path / COLLECTOR_CONF

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def workload_json(self) -> Path:
        return self.path / WORKLOAD_JSON

    def output(self, process: str) -> Path:
        return self.path / output_of(process)

    def proxy_dir(self, name: str) -> Path:
        return self.path / proxy_dir(name)

    def capture(self, request_id: int, proxy: str) -> Path:
        """The Multiplier's capture of a proxy's mismatching reply to a request (when it wrote one)."""
        return self.captures / capture_file(request_id, proxy)

    def repro(self, request_id: int, proxy: str) -> Path:
        """Where ./spe repro writes the case of a proxy's violation on a request, by default."""
        return self.path / repro_dir(request_id, proxy)

    def is_run(self) -> bool:
        """What ./spe lab down accepts: a directory the lab wrote lab.json or pids.json in."""
        return self.lab_json.exists() or self.pids.exists()
