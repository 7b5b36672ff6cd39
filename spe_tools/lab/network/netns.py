"""Hosts of their own on one machine: a Linux network namespace per piece of the lab, joined to the machine's by
a veth pair, as a proxy on a host of its own is joined to the Multiplier's and the Collector's by a link.

Each host gets a /30 from the lab's subnet: its own address inside the namespace, the machine's end of the link
(its gateway: where it reaches its Collector port, and the address the Multiplier's connections come from)
outside. Nothing is routed beyond them: the namespace has no default route and the machine forwards nothing
the lab sets up, so a proxy that tries to reach the origin past its parent gets no answer. Creating them needs
root (CAP_NET_ADMIN). Every namespace is recorded in the run directory's netns.json as it is made, so that a
set-up that fails half way, `./spe lab down` from another shell, or a later run can remove what was made.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from spe_tools.lab.errors import LabError

LOCK = Path("/run/spe-netns.lock")  # labs started side by side pick their subnets in turn
RECORD = "netns.json"  # in the run directory: the namespaces this run made
PREFIX = "spe"  # every namespace and link the lab makes starts with it (`ip netns list | grep spe`)


@dataclass(frozen=True)
class Host:
    """One piece of the lab in a namespace of its own."""

    piece: str  # the proxy's name, or "origin"
    namespace: str  # `ip netns` name
    link: str  # the veth end on the machine's side
    address: str  # its own address, inside the namespace
    gateway: str  # the machine's end of its link

    def argv(self, argv: list[str]) -> list[str]:
        """argv run inside the namespace: `ip netns exec` enters it and execs argv, so the PID is argv's own (the
        lab stops it by PID as any other process)."""
        return ["ip", "netns", "exec", self.namespace, *argv]


def missing_privilege() -> str | None:
    """Why this process cannot make namespaces (None when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN): run the lab as root, or set [network] to loopback"
    if not Path("/usr/sbin/ip").exists() and not Path("/sbin/ip").exists():
        return "network namespaces need iproute2's ip (Debian package iproute2)"
    return None


def make_hosts(pieces: Iterable[str], subnet: str, rundir: Path) -> list[Host]:
    """A namespace for each piece, addressed from `subnet`; raises LabError after removing whatever it made."""
    if problem := missing_privilege():
        raise LabError(problem)
    made: list[Host] = []
    try:
        with _lock():
            blocks = _free_blocks(ipaddress.ip_network(subnet))
            for piece in pieces:
                host = next((_host(piece, block) for block in blocks), None)
                if host is None:
                    raise LabError(f"[network].subnet {subnet}: no free /30 left for {piece!r}")
                _record(rundir, [*made, host])  # first: a failure in _make still leaves it to remove
                made.append(host)
                _make(host)
    except (LabError, subprocess.CalledProcessError, OSError) as e:
        remove_hosts(rundir)
        if isinstance(e, subprocess.CalledProcessError):
            raise LabError(f"network namespaces: {' '.join(e.cmd)} failed: {(e.stderr or '').strip()}") from e
        raise
    return made


def recorded_hosts(rundir: Path) -> list[Host]:
    try:
        return [Host(**entry) for entry in json.loads((rundir / RECORD).read_text())]
    except (OSError, ValueError, TypeError):
        return []


def remove_hosts(rundir: Path) -> list[str]:
    """Remove the namespaces (and their links) the run recorded; returns what was removed. Deleting a namespace
    takes its end of the link with it, and the link's other end with that; the explicit `link del` covers a
    namespace that was never made."""
    removed = []
    for host in recorded_hosts(rundir):
        gone = _ip("netns", "del", host.namespace) | _ip("link", "del", host.link)
        if gone:
            removed.append(host.namespace)
    with contextlib.suppress(OSError):
        (rundir / RECORD).unlink()
    return removed


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _free_blocks(subnet: ipaddress.IPv4Network | ipaddress.IPv6Network) -> Iterator[ipaddress.IPv4Network]:
    """The subnet's /30s that no address on this machine falls in (another lab's, or the machine's own) and whose
    link name no link has (the names repeat every 65,536 blocks)."""
    if subnet.version != 4 or subnet.prefixlen > 30:
        raise LabError(f"[network].subnet {subnet}: give an IPv4 network of /30 or larger")
    used = [ipaddress.ip_interface(a).ip for a in _ip_lines("-4", "addr", "show", field=3)]
    links = {name.split("@")[0].rstrip(":") for name in _ip_lines("link", "show", field=1)}
    for block in subnet.subnets(new_prefix=30):
        if not any(address in block for address in used) and _host("", block).link not in links:
            yield block


def _ip_lines(*argv: str, field: int) -> list[str]:
    """One field of each line of `ip -o argv` (its one-line output)."""
    out = subprocess.run(["ip", "-o", *argv], capture_output=True, text=True, check=True).stdout
    return [line.split()[field] for line in out.splitlines() if len(line.split()) > field]


def _host(piece: str, block: ipaddress.IPv4Network) -> Host:
    """Names from the block's number: unique while the block is taken, and short enough for a link (15 bytes)."""
    number = int(block.network_address) >> 2 & 0xFFFF
    gateway, address = list(block.hosts())
    return Host(piece=piece, namespace=f"{PREFIX}{number}-{piece}", link=f"{PREFIX}{number}h",
                address=str(address), gateway=str(gateway))


def _make(host: Host) -> None:
    inner = f"{host.link[:-1]}n"
    for argv in (["netns", "add", host.namespace],
                 ["link", "add", host.link, "type", "veth", "peer", "name", inner],
                 ["link", "set", inner, "netns", host.namespace],
                 ["addr", "add", f"{host.gateway}/30", "dev", host.link],
                 ["link", "set", host.link, "up"],
                 ["-n", host.namespace, "addr", "add", f"{host.address}/30", "dev", inner],
                 ["-n", host.namespace, "link", "set", inner, "up"],
                 ["-n", host.namespace, "link", "set", "lo", "up"]):
        subprocess.run(["ip", *argv], capture_output=True, text=True, check=True)


def _record(rundir: Path, hosts: list[Host]) -> None:
    path = rundir / RECORD
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps([asdict(h) for h in hosts], indent=2))
    tmp.replace(path)


def _ip(*argv: str) -> bool:
    """Run `ip argv`; whether it did something (an already removed namespace or link is no error here)."""
    return subprocess.run(["ip", *argv], capture_output=True).returncode == 0
