"""Helpers shared by the benchmarks: the machine line and the results file."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs/benchmarks.md"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def machine() -> str:
    """'2 vCPU <CPU model>, Linux <kernel>' of this machine."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} vCPU {model}, Linux {platform.release()}"


def append_result(text: str) -> None:
    """Appends a result section to docs/benchmarks.md (created with its header if missing)."""
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmarks\n\nEach section was appended by the command it names.\n")
    with RESULTS.open("a") as f:
        f.write(text)


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (e.g. an nginx master and its workers)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes, in seconds (processes that are gone count 0)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / CLK_TCK


def busy_seconds() -> float:
    """CPU time used by everything on the machine (all cores): /proc/stat minus idle and iowait."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / CLK_TCK
