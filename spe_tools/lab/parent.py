"""The lab's Collector: the patched one through spe_tools.collector, or a stock-Squid stand-in.

Port names: "direct" is the Multiplier's; every proxy under test has one named after it. A name
ending in "@accel" asks for an accelerator port (origin-form requests with a Host header, for
Varnish and nginx); its Squid port name is the proxy name without the suffix.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
from pathlib import Path

from spe_tools.lab.model import CollectorSpec
from spe_tools.lab.procs import launch
from spe_tools.lab.render import render_file
from spe_tools.process import Child, ProcessGroup

ROOT = Path(__file__).resolve().parents[2]
STOCK_SQUID = Path("/usr/sbin/squid")
PATCHED_SQUID = ROOT / "build/collector/sbin/squid"


def collector_module_available() -> bool:
    return importlib.util.find_spec("spe_tools.collector") is not None


def collector_binary(kind: str) -> Path:
    return PATCHED_SQUID if kind == "spe" else STOCK_SQUID


def missing(spec: CollectorSpec) -> list[str]:
    """Why this Collector cannot start on this machine (empty if it can)."""
    binary = collector_binary(spec.kind)
    if spec.kind == "spe":
        problems = []
        if not binary.exists():
            problems.append(f"the patched Collector {binary.relative_to(ROOT)} is not built "
                            "(use [collector] kind = \"squid\" for Debian's stock Squid meanwhile)")
        if not collector_module_available():
            problems.append("spe_tools/collector.py (the patched Collector's starter) is not in this checkout yet")
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
    """Start the Collector with its stdout in directory/collector.out; logs in directory/collector/.

    `allowed_destinations` (the patched Collector only): hosts it may fetch from, all others refused."""
    # Stock Squid keeps the lab's own stand-in config until spe_tools.collector's "squid" kind is
    # settled; the patched Collector only exists through that module.
    if spec.kind == "spe":
        from spe_tools.collector import start_collector

        return start_collector(group, "collector", spec.kind, client_port, proxy_ports,
                               uncacheable_ttl_s=spec.uncacheable_ttl_s, replay_timing=spec.replay_timing,
                               cache_mb=spec.cache_mb, allowed_destinations=allowed_destinations)
    return _start_standin(group, directory / "collector", spec, client_port, proxy_ports)


def standin_config(directory: Path, spec: CollectorSpec, client_port: int, proxy_ports: dict[str, int],
                   as_root: bool) -> dict[str, object]:
    lines = []
    for name, port in proxy_ports.items():
        base, accel = (name[:-6], True) if name.endswith("@accel") else (name, False)
        lines.append(f"http_port 127.0.0.1:{port} {'accel vhost allow-direct ' if accel else ''}name={base}")
    return {"dir": directory, "direct_port": client_port, "proxy_ports": "\n".join(lines),
            "cache_mb": spec.cache_mb, "user_line": "cache_effective_user proxy" if as_root else ""}


def _start_standin(group: ProcessGroup, directory: Path, spec: CollectorSpec, client_port: int,
                   proxy_ports: dict[str, int]) -> Child:
    directory.mkdir(parents=True, exist_ok=True)
    as_root = os.geteuid() == 0
    conf = render_file("collector-standin", "squid.conf", directory / "squid.conf",
                       standin_config(directory, spec, client_port, proxy_ports, as_root))
    if as_root:
        user = pwd.getpwnam("proxy")
        for path in [directory, *directory.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
    service = ("spec" + re.sub(r"[^A-Za-z0-9]", "", str(os.getpid())))[:32]
    return launch(group, "collector", [str(STOCK_SQUID), "-n", service, "-N", "-d1", "-f", str(conf)],
                  cwd=directory, log=group.workdir / "collector.out", port=client_port, deadline_s=30)
