"""CPU and memory readings of processes and of the whole machine, taken before and after a measured run."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

from spe_tools.process import cpu_times, rss_kb


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes, in seconds (processes that are gone count 0)."""
    return sum(cpu_times(pids))


def busy_seconds() -> float:
    """CPU time used by everything on the machine (all cores): /proc/stat's times minus idle and iowait
    (guest time is already counted in user)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + t.steal


def rss_and_peak_kb(pid: int) -> tuple[int, int]:
    """(RSS, peak RSS) of a process in KB. psutil has no peak (VmHWM): that one is read from /proc."""
    peak = next((int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                 if line.startswith("VmHWM:")), 0)
    return rss_kb(pid), peak


# Runs argv[2:] and writes the peak RSS (KB) of that child, the only one it has, to argv[1]: a process's peak can
# only be read while it runs (VmHWM) or, once it ended, by the parent that waited for it.
_PEAK = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
         "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)")


def run_with_peak_rss(argv: list[str], env: dict[str, str], timeout: float) -> tuple[subprocess.CompletedProcess, int]:
    """Run a command to its end: its outcome (output captured as text) and its peak RSS in KB."""
    with tempfile.TemporaryDirectory(prefix="spe-peak-") as scratch:
        peak_file = Path(scratch) / "peak"
        run = subprocess.run([sys.executable, "-c", _PEAK, str(peak_file), *argv], env=env, capture_output=True,
                             text=True, timeout=timeout)
        return run, int(peak_file.read_text() or 0) if peak_file.exists() else 0
