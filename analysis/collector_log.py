"""The Collector's Squid access.log, per Collector port: what each proxy under test pulled.

Reads Squid's native format, optionally followed by the receiving port and the request size,
as the `spe` logformat writes them (SPE_LOGFORMAT: the one definition, which the Collector's
squid.conf and spe_tools.squid's write).
Lines that do not parse are counted, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.rundir.lab_json import LabJson

# The last field is the Multiplier's request tag (X-SPE-Request, "-" without one): which client
# request a proxy's request came from (analysis/prefetch.py).
SPE_LOGFORMAT = "%ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt %>lp %>st %{X-SPE-Request}>h"


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


def as_logged(url: str, strip_query_terms: bool) -> str:
    """A URL as the Collector's access.log shows it. With strip_query_terms on (a lab on live traffic,
    lab.json's collector.strip_query_terms) Squid logs it cut after its '?': `http://h/p?a=1` as `http://h/p?`.
    Whoever joins the Multiplier's URLs with the log's compares this form: URLs that differ only in their
    query are then one."""
    if strip_query_terms and "?" in url:
        return url[:url.index("?") + 1]
    return url


def strips_query_terms(lab_json: LabJson | None) -> bool:
    """Whether the run's Collector logged URLs without their query (lab.json; older runs: no)."""
    return lab_json is not None and lab_json.collector.strips_query_terms()


def sent_no_request(fields: list[str]) -> bool:
    """A connection that sent no request (status 000 and no method: a readiness probe, a client gone)."""
    return fields[3].endswith("/000") and fields[5] in ("-", "NONE")


def add_access_line(usage: dict[str, PortUsage], line: str, port_names: dict[int, str],
                    failed_legs: dict[str, set[str]] | None = None) -> bool | None:
    """Counts one access.log line into the usage of its port (by name; unnamed ports by number).
    `failed_legs`: per port name, the tags of the client requests whose leg there delivered no response.
    True: counted; None: nothing to count (a blank line, a connection that sent no request, e.g. a
    readiness probe); False: the line does not parse."""
    fields = line.split()
    if len(fields) < 12:
        return False if line.strip() else None
    if sent_no_request(fields):
        return None
    try:
        code = fields[3].split("/")[0]
        sent = int(fields[4])
        port = int(fields[10])
        received = int(fields[11])
    except (ValueError, IndexError):
        return False
    u = usage.setdefault(port_names.get(port, str(port)), PortUsage())
    u.requests += 1
    u.hits += "HIT" in code
    u.bytes_to_client += sent
    u.bytes_from_client += received
    u.codes[code] = u.codes.get(code, 0) + 1
    if failed_legs and len(fields) > 12 and fields[12] in failed_legs.get(port_names.get(port, str(port)), ()):
        u.failed_leg_requests += 1
        u.failed_leg_bytes += sent
    if fields[8].startswith("HIER_DIRECT"):
        u.origin_urls.add(fields[6])
    return True


def parse_access_log(path: Path, port_names: dict[int, str],
                     failed_legs: dict[str, set[str]] | None = None) -> tuple[dict[str, PortUsage], int]:
    """Usage per port name (ports not in `port_names` are grouped under their number). Every named port
    is listed, one that saw no request too: a proxy that bypassed its Collector port shows there.
    `failed_legs`: as add_access_line's."""
    usage: dict[str, PortUsage] = {name: PortUsage() for name in port_names.values()}
    bad = 0
    for line in Path(path).read_text(errors="replace").splitlines():
        if add_access_line(usage, line, port_names, failed_legs) is False:
            bad += 1
    return usage, bad
