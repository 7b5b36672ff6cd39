"""What each proxy under test costs while the lab runs, beside its hit ratio and latency: the CPU seconds its
processes used, the memory they held, the disk its cache took; the Collector and the Multiplier the same way,
as reference rows. The status loop (spe_tools/lab/watch/status_loop.py) samples once a second and the file,
proxy-costs.json (spe_tools/rundir/proxy_costs_json.py), is rewritten every few seconds and once more at the
stop, so a run killed midway keeps its costs so far.

A proxy is every process its start and its companions' (a prefetch agent, a cache cleaner) forked: Squid's
helpers, Traffic Server's crash logger, Varnish's child, Apache's and nginx's workers (spe_tools/process.py
ProcessTable.family). psutil cannot see the CPU of a process that has exited (it went to a parent's
counters only if that parent waited for it, and would then count twice), so each process keeps the CPU it
had when last sampled: a worker that exits loses at most the last second of its own.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.start.multipliers import is_multiplier
from spe_tools.lab.start.proxies import proxy_context
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.process import Child, ProcessTable, Usage, usage
from spe_tools.rundir import layout
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.proxy_costs_json import COLLECTOR, MULTIPLIER, PROXY, RSS, ProcessCost, ProxyCosts

WRITE_EVERY_S = 5.0  # a run killed midway loses at most this much of its costs
# du walks every file of a disk cache (an Apache cache holds one or two per object): at the end, and now and
# then for a run that is killed, not each time the file is written.
DISK_EVERY_S = 30.0


def disk_usage(path: Path) -> int | None:
    """The bytes `path` takes on disk, as du counts them (allocated blocks, a hard-linked file once, no symbolic
    link followed); None if it does not exist."""
    if not path.is_dir():
        return None
    seen: set[tuple[int, int]] = set()
    total = path.lstat().st_blocks * 512  # the directory itself, as du
    for directory, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            with contextlib.suppress(OSError):  # a file the proxy removed meanwhile
                st = os.lstat(os.path.join(directory, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


@dataclass
class Piece:
    """One row of proxy-costs.json being sampled: its lab processes (each the root of a tree), and what every
    process of their trees used."""

    cost: ProcessCost
    children: list[Child]
    cache_dir: Path | None = None  # absolute; cost.cache_dir is the same relative to the run directory
    live: dict[tuple[int, float], Usage] = field(default_factory=dict)  # (pid, start) -> its last sample
    # What the processes that have exited used, as last sampled: folded in, so that a long run whose proxy starts
    # many short-lived processes (Apache's cache cleaner every 5 s) keeps no record of each.
    exited_user_s: float = 0.0
    exited_system_s: float = 0.0
    exited: int = 0
    memory_sum: int = 0  # over the samples, for the mean

    def sample(self, table: ProcessTable) -> None:
        """Add one sample: the CPU of every process in the trees now, the memory they hold together."""
        pids = set().union(*(table.family(c.pid, with_descendants=c.alive()) for c in self.children))
        now = {(u.pid, u.started): u for pid in sorted(pids) if (u := usage(pid)) is not None}
        if not now:
            return  # stopped or died: what it used so far stays
        for gone in [self.live[key] for key in set(self.live) - set(now)]:
            self.exited_user_s += gone.user_s
            self.exited_system_s += gone.system_s
            self.exited += 1
        self.live = now
        self._add_memory(list(now.values()))
        c = self.cost
        c.cpu_user_s = self.exited_user_s + sum(u.user_s for u in now.values())
        c.cpu_system_s = self.exited_system_s + sum(u.system_s for u in now.values())
        c.cpu_s = c.cpu_user_s + c.cpu_system_s
        c.pids = self.exited + len(now)

    def _add_memory(self, live: list[Usage]) -> None:
        held = sum(u.memory_bytes for u in live)
        c = self.cost
        c.samples += 1
        self.memory_sum += held
        c.memory_peak_bytes = max(held, c.memory_peak_bytes or 0)
        c.memory_mean_bytes = self.memory_sum // c.samples
        if not all(u.pss for u in live):
            c.memory = RSS  # shared pages counted in each process that maps them, for this piece as a whole

    def measure_disk(self) -> None:
        if self.cache_dir is not None:
            self.cost.disk_bytes = disk_usage(self.cache_dir)


class CostSampler:
    """Samples every piece once per tick and writes proxy-costs.json in `rundir` now and then, and at the end."""

    def __init__(self, rundir: Path, pieces: list[Piece], interval_s: float = 1.0):
        self.rundir, self.pieces, self.interval_s = rundir, pieces, interval_s
        self.first: float | None = None  # monotonic, of the first and the last sample
        self.last: float | None = None
        self.written = self.disk_measured = float("-inf")  # at the first tick: a run killed early has a file

    def sample(self) -> None:
        table = ProcessTable.read()
        for piece in self.pieces:
            piece.sample(table)
        self.last = time.monotonic()
        self.first = self.first if self.first is not None else self.last

    def tick(self) -> None:
        """One sample; the file when it is due."""
        self.sample()
        if self.last - self.written >= WRITE_EVERY_S:
            self.write(final=False, disk=self.last - self.disk_measured >= DISK_EVERY_S)

    def finish(self) -> None:
        """A last sample, the disk measured, the file written final: at the stop, before the processes are
        stopped. A file that cannot be written is not worth hiding why the run ended: no error is raised."""
        with contextlib.suppress(OSError):
            self.sample()
            self.write(final=True, disk=True)

    def write(self, final: bool, disk: bool) -> None:
        if disk:
            for piece in self.pieces:
                piece.measure_disk()
            self.disk_measured = time.monotonic()
        elapsed = (self.last - self.first) if self.first is not None else 0.0
        ProxyCosts(self.interval_s, round(elapsed, 3), final, [p.cost for p in self.pieces]).write(self.rundir)
        self.written = time.monotonic()


def lab_pieces(run: RunningLab) -> list[Piece]:
    """Each proxy the lab started (its companions with it), in the lab's order, then the Collector and the
    Multipliers (one row for all: SPE's own cost per client request). An external proxy runs elsewhere, as the
    user's: nothing of it to sample."""
    started = {c.name: c for c in run.group.children}
    pieces = []
    for spec in run.lab.proxies:
        if spec.kind == "external":
            continue
        kind = KINDS[spec.kind]
        names = [spec.name, *(c.name for c in kind.companions(proxy_context(run, spec.name)))]
        relative = f"{layout.proxy_dir(spec.name)}/{kind.cache_dir}" if kind.cache_dir else None
        pieces.append(Piece(ProcessCost(spec.name, PROXY, spec.kind, names, cache_dir=relative),
                            [started[n] for n in names if n in started],
                            RunDir(run.rundir) / relative if relative else None))
    if layout.COLLECTOR in started:
        pieces.append(Piece(ProcessCost(layout.COLLECTOR, COLLECTOR, processes=[layout.COLLECTOR]),
                            [started[layout.COLLECTOR]]))
    multipliers = [c for c in run.group.children if is_multiplier(c.name)]
    if multipliers:
        pieces.append(Piece(ProcessCost(layout.MULTIPLIER, MULTIPLIER, processes=[c.name for c in multipliers]),
                            multipliers))
    return pieces


def lab_sampler(run: RunningLab) -> CostSampler:
    return CostSampler(run.rundir, lab_pieces(run))
