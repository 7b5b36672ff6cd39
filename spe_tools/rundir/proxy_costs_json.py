"""proxy-costs.json, typed: what each proxy under test cost while the lab ran (CPU seconds, memory, the disk its
cache used), with the Collector and the Multiplier as reference rows. The lab's status loop samples it each second
(spe_tools/lab/watch/proxy_costs.py) and rewrites it every few seconds and once more at the stop, so a run killed midway
still has its costs so far; the report reads it (analysis/sections/proxy_costs.py). Written atomically (a
temporary file renamed over it); reading never fails: a missing or unreadable file reads as None (an older run,
or one the lab did not take)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Self

from spe_tools.rundir.layout import RunDir

PROXY = "proxy"
COLLECTOR = "collector"
MULTIPLIER = "multiplier"
PSS, RSS = "pss", "rss"  # how memory was measured (PSS shares a page among the processes that map it)


@dataclass
class ProcessCost:
    """One proxy (its processes and their companions') or reference piece, over the samples taken."""

    name: str  # the proxy's name in the lab, or the Collector's or the Multiplier's process name
    role: str  # PROXY, COLLECTOR or MULTIPLIER
    kind: str | None = None  # the proxy's kind (None for the reference rows)
    processes: list[str] = field(default_factory=list)  # the lab's processes counted: the proxy and its companions
    cpu_s: float = 0.0  # user + system, every process of its trees (one that exited: as last sampled)
    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0
    pids: int = 0  # processes seen in its trees, workers that came and went included
    samples: int = 0  # samples in which it had a live process
    memory: str = PSS  # PSS, or RSS when PSS could not be read for one of its processes (shared pages then count twice)
    memory_peak_bytes: int | None = None  # summed over its trees, the largest sample
    memory_mean_bytes: int | None = None  # summed over its trees, the mean of the samples
    cache_dir: str | None = None  # its disk cache, relative to the run directory; None: in RAM, or no cache
    disk_bytes: int | None = None  # what cache_dir used on disk (allocated blocks, as du) when last measured


@dataclass
class ProxyCosts:
    interval_s: float  # between samples
    elapsed_s: float  # from the first sample to the last
    final: bool  # written at the stop; False: the lab was still running (or was killed before its stop)
    costs: list[ProcessCost] = field(default_factory=list)  # the proxies in the lab's order, then the reference rows
    updated: float = field(default_factory=time.time)  # seconds since the epoch

    def write(self, run: Path) -> None:
        path = RunDir(run).proxy_costs
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(path)

    @classmethod
    def read(cls, run: Path) -> Self | None:
        try:
            data = json.loads(RunDir(run).proxy_costs.read_text())
            known = {f.name for f in fields(ProcessCost)}
            costs = [ProcessCost(**{k: v for k, v in c.items() if k in known}) for c in data["costs"]]
            return cls(interval_s=float(data["interval_s"]), elapsed_s=float(data["elapsed_s"]),
                       final=bool(data["final"]), costs=costs, updated=float(data.get("updated", 0)))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
