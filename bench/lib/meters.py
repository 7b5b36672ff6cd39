"""CPU and memory readings of processes and of the whole machine, taken before and after a measured run."""

from __future__ import annotations

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
