"""Debian Squid instances from a private directory: the Collector stand-in and proxies under test.

Each instance gets its own `-n` service name (Squid names its shared memory
after it, so several Squids coexist on one host), its own pid file, logs and
port on 127.0.0.1. Squid started as root drops to the `proxy` user, so the
directory is handed to that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
from pathlib import Path

from spe_tools.config_template import render_text
from spe_tools.process import Child, ProcessGroup
from spe_tools.rundir.access import hand_over
from spe_tools.rundir.access_log import SPE_LOGFORMAT
from spe_tools.rundir.layout import SQUID_CONF

SQUID = "/usr/sbin/squid"

COMMON = """\
visible_hostname {{name}}
http_port 127.0.0.1:{{port}}
{{extra_ports}}pid_filename {{dir}}/squid.pid
cache_log {{dir}}/cache.log
# Squid's native format plus the receiving port, the request size and tag (spe_tools/rundir/access_log.py)
logformat spe {{logformat}}
access_log stdio:{{dir}}/access.log spe
coredump_dir {{dir}}
netdb_filename none
strip_query_terms off
icp_port 0
htcp_port 0
pinger_enable off
shutdown_lifetime 1 seconds
cache_mem {{cache_mb}} MB
maximum_object_size_in_memory 4 MB
http_access allow localhost
http_access deny all
"""

CHILD = """\
cache_peer 127.0.0.1 parent {{parent_port}} 0 no-query no-digest default name=parent
never_direct allow all
"""


def squid_config(name: str, port: int, directory: Path, parent_port: int | None = None, cache_mb: int = 64,
                 extra_ports: dict[str, int] | None = None) -> str:
    """squid.conf text: a memory-only cache on 127.0.0.1:port, optionally a child of a parent.

    `extra_ports` adds one named port per client (a Collector gives each proxy under test its own,
    so its access.log tells them apart by `%>lp`).
    """
    extra = "".join(f"http_port 127.0.0.1:{p} name={n}\n" for n, p in (extra_ports or {}).items())
    text = render_text(COMMON, dict(name=name, port=port, dir=directory, cache_mb=cache_mb, extra_ports=extra,
                                    logformat=SPE_LOGFORMAT))
    if parent_port is not None:
        text += render_text(CHILD, dict(parent_port=parent_port))
    return text


def hand_to_proxy_user(directory: Path) -> None:
    """Started as root, Squid runs as `proxy`: it must reach and own its directory."""
    if os.geteuid() != 0:
        return
    try:
        user = pwd.getpwnam("proxy")
    except KeyError:
        return
    for ancestor in directory.resolve().parents:
        if not ancestor.stat().st_mode & stat.S_IXOTH:
            raise PermissionError(f"Squid runs as user 'proxy', which cannot reach {directory}: "
                                  f"{ancestor} is not searchable by others (chmod o+x, or use another directory)")
    hand_over(directory, user.pw_name)  # its own, 0700 (or the run's share group's: spe_tools/rundir/access.py)


def service_name(name: str) -> str:
    """Squid's -n service name: it names the shared memory segments, so it must be unique per
    running Squid on the host; letters and digits only."""
    return ("spe" + "".join(ch for ch in f"{os.getpid()}{name}" if ch.isalnum()))[:32]


def run_squid(group: ProcessGroup, name: str, exe: Path | str, conf_text: str, port: int,
              deadline_s: float = 15) -> Child:
    """Start a Squid build in the foreground with this configuration, in group.workdir/name (its own
    -n service name, the directory handed to `proxy`); ready once `port` answers, stopped with the group."""
    directory = group.workdir / name
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / SQUID_CONF
    conf.write_text(conf_text)
    hand_to_proxy_user(directory)
    return group.start(name, [str(exe), "-n", service_name(name), "-N", "-d1", "-f", str(conf)], port=port,
                       deadline_s=deadline_s)


def start_squid(group: ProcessGroup, name: str, port: int, parent_port: int | None = None,
                cache_mb: int = 64, extra_ports: dict[str, int] | None = None) -> Child:
    """Start one Debian Squid in group.workdir/name (foreground, stopped with the group)."""
    if shutil.which(SQUID) is None and not Path(SQUID).exists():
        raise FileNotFoundError(f"{SQUID} not found: install Debian's squid package (./spe setup does)")
    directory = group.workdir / name
    return run_squid(group, name, SQUID, squid_config(name, port, directory, parent_port, cache_mb, extra_ports),
                     port)
