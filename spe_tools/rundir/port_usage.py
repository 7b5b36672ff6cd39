"""What arrived on each Collector port (the Collector's access.log, per port name): what each proxy pulled.

Counted the same way by the report (analysis/sections/hit_ratios.py) and by the lab while it runs
(spe_tools/lab/watch/bypass_watch.py). Lines that do not parse are counted, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.rundir.access_log import AccessRecord, BadLineError, parse_line, read_access_log


@dataclass
class PortUsage:
    """What arrived on one Collector port."""

    requests: int = 0
    hits: int = 0
    bytes_to_client: int = 0  # reply bytes the Collector sent (headers and body): the proxy's "received"
    bytes_from_client: int = 0  # request bytes the Collector received: the proxy's "sent"
    codes: dict[str, int] = field(default_factory=dict)
    # URLs this port's requests had fetched from the origin (hierarchy HIER_DIRECT). On the direct port: what
    # a proxy answering them had to get from somewhere, its own Collector port if it used it (bypass.py).
    origin_urls: set[str] = field(default_factory=set)
    # Requests (and reply bytes) tagged with a client request whose leg at this proxy delivered no response (no
    # reply, or a read that failed: a refused PUT, a timeout): neither a hit nor a miss of a response it delivered.
    failed_leg_requests: int = 0
    failed_leg_bytes: int = 0

    @property
    def misses(self) -> int:
        return self.requests - self.hits


def add_usage(runs: list[dict[str, PortUsage]]) -> dict[str, PortUsage]:
    """The usage of several runs' Collectors, port name by port name: what a merged report counts (each run had
    a Collector of its own, so nothing is counted twice)."""
    total: dict[str, PortUsage] = {}
    for usage in runs:
        for name, port in usage.items():
            into = total.setdefault(name, PortUsage())
            into.requests += port.requests
            into.hits += port.hits
            into.bytes_to_client += port.bytes_to_client
            into.bytes_from_client += port.bytes_from_client
            for code, n in port.codes.items():
                into.codes[code] = into.codes.get(code, 0) + n
            into.origin_urls |= port.origin_urls
            into.failed_leg_requests += port.failed_leg_requests
            into.failed_leg_bytes += port.failed_leg_bytes
    return total


def add_access_line(usage: dict[str, PortUsage], line: str, port_names: dict[int, str],
                    failed_legs: dict[str, set[str]] | None = None) -> bool | None:
    """Counts one access.log line into the usage of its port (by name; unnamed ports by number).
    `failed_legs`: per port name, the tags of the client requests whose leg there delivered no response.
    True: counted; None: nothing to count (a blank line, a connection that sent no request, e.g. a
    readiness probe); False: the line does not parse."""
    try:
        record = parse_line(line)
    except BadLineError:
        return False
    if record is None:
        return None
    add_record(usage, record, port_names, failed_legs)
    return True


def add_record(usage: dict[str, PortUsage], record: AccessRecord, port_names: dict[int, str],
               failed_legs: dict[str, set[str]] | None = None) -> None:
    name = port_names.get(record.port, str(record.port))
    u = usage.setdefault(name, PortUsage())
    u.requests += 1
    u.hits += "HIT" in record.code
    u.bytes_to_client += record.bytes_sent
    u.bytes_from_client += record.bytes_received
    u.codes[record.code] = u.codes.get(record.code, 0) + 1
    if failed_legs and record.request_tag is not None and record.request_tag in failed_legs.get(name, ()):
        u.failed_leg_requests += 1
        u.failed_leg_bytes += record.bytes_sent
    if record.from_origin:
        u.origin_urls.add(record.url)


def parse_access_log(path: Path, port_names: dict[int, str],
                     failed_legs: dict[str, set[str]] | None = None) -> tuple[dict[str, PortUsage], int]:
    """Usage per port name (ports not in `port_names` are grouped under their number). Every named port
    is listed, one that saw no request too: a proxy that bypassed its Collector port shows there.
    `failed_legs`: as add_access_line's. Also returns how many lines did not parse."""
    usage: dict[str, PortUsage] = {name: PortUsage() for name in port_names.values()}
    bad = 0
    for record in read_access_log(path):
        if isinstance(record, BadLineError):
            bad += 1
        else:
            add_record(usage, record, port_names, failed_legs)
    return usage, bad
