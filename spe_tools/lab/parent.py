"""The lab's Collector, patched or Debian's stock Squid, started through spe_tools.collector.

Port names: "direct" is the Multiplier's; every proxy under test has one named after it. A name
ending in "@accel" asks for an accelerator port (origin-form requests with a Host header, for
Varnish and nginx); its Squid port name is the proxy name without the suffix.
"""

from __future__ import annotations

import re
from pathlib import Path

from spe_tools.collector import BINARIES, start_collector
from spe_tools.lab.model import CollectorSpec
from spe_tools.process import Child, ProcessGroup

ROOT = Path(__file__).resolve().parents[2]


def collector_binary(kind: str) -> Path:
    return BINARIES[kind]


def missing(spec: CollectorSpec) -> list[str]:
    """Why this Collector cannot start on this machine (empty if it can)."""
    binary = collector_binary(spec.kind)
    if spec.kind == "spe":
        problems = []
        if not binary.exists():
            problems.append(f"the patched Collector {binary.relative_to(ROOT)} is not built "
                            "(use [collector] kind = \"squid\" for Debian's stock Squid meanwhile)")
        return problems
    if not binary.exists():
        return [f"{binary} is not installed (Debian package squid; ./spe setup installs it)"]
    return []


def version(kind: str) -> str:
    import subprocess

    try:
        out = subprocess.run([str(collector_binary(kind)), "-v"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else "unknown"


def start(group: ProcessGroup, directory: Path, spec: CollectorSpec, client_port: int,
          proxy_ports: dict[str, int], allowed_destinations: tuple[str, ...] = ()) -> Child:
    """Start the Collector (patched or stock, spe_tools.collector); its logs in directory/collector/.

    `allowed_destinations`: hosts it may fetch from, all others refused (the patched Collector only;
    stock Squid keeps its own rules)."""
    return start_collector(group, "collector", spec.kind, client_port, proxy_ports,
                           uncacheable_ttl_s=spec.uncacheable_ttl_s, replay_timing=spec.replay_timing,
                           cache_mb=spec.cache_mb,
                           allowed_destinations=allowed_destinations if spec.kind == "spe" else ())
