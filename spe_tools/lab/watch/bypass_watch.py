"""Proxies that do not fetch through their Collector port, noticed while the lab runs and, where the
lab file already shows it, before.

A proxy's hit ratio and bandwidth are what reached its own Collector port; a proxy that fetches
from the origin directly shows a perfect hit ratio, silently. The same two evidences as the report
(analysis/sections/bypass.py, docs/report.md), here on the live logs:
- the stamp: the Collector's replies carry `X-SPE-Fetch` (logged as `fetch`); a proxy's reply
  without it, where the Collector's reply to the same request had it, did not come through it;
- the Collector's access.log: the proxy's port saw no request at all while the proxy answered
  requests the Collector fetched from the origin for the direct path.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.lab.definition.model import Lab
from spe_tools.log_tail import LogTail
from spe_tools.rundir.access_log import as_logged
from spe_tools.rundir.port_usage import PortUsage, add_access_line


def unstamped(reference: dict, reply: dict) -> bool:
    """The reply lacks the Collector's stamp that the reference reply carries. A 304 (built from a
    short header list), a 1xx and the proxy's own 5xx errors prove nothing, nor does a missing reply."""
    status = reply.get("status")
    return (reference.get("fetch") is not None and reply.get("fetch") is None and reply.get("error") is None
            and isinstance(status, int) and 200 <= status < 500 and status != 304)


def same_answer(reference: dict, reply: dict) -> bool:
    """A complete reply with the reference's status, not an error of the proxy's own."""
    status = reply.get("status")
    return reply.get("error") is None and isinstance(status, int) and status < 500 and status == reference.get("status")


@dataclass
class CollectorPorts:
    """The Collector's access.log read incrementally, counted as the report counts it
    (spe_tools/rundir/port_usage.py): requests per port name, and the URLs the direct path fetched from the
    origin."""

    log: Path
    port_names: dict[int, str]  # Collector port -> "direct" or the proxy's name
    strip_query_terms: bool = False  # the log's URLs are cut after their '?' (live traffic)
    usage: dict[str, PortUsage] = field(default_factory=dict)
    _tail: LogTail = field(init=False)

    def __post_init__(self) -> None:
        self._tail = LogTail(self.log)

    def update(self) -> None:
        for line in self._tail.new_lines():
            add_access_line(self.usage, line.decode(errors="replace"), self.port_names)

    def requests(self, name: str) -> int:
        return self.usage[name].requests if name in self.usage else 0

    @property
    def origin_urls(self) -> set[str]:
        return self.usage["direct"].origin_urls if "direct" in self.usage else set()


@dataclass
class BypassWatch:
    """Per proxy: replies without the stamp, and replies to origin-fetched requests while its port is silent.

    Replies are checked against the access.log one update later: the Collector logs a transaction
    when it ends, so the line of a proxy's fetch may land just after the record of the request."""

    ports: CollectorPorts | None = None
    unstamped: Counter = field(default_factory=Counter)
    silent_port_replies: Counter = field(default_factory=Counter)
    _answered: dict[str, set[str]] = field(default_factory=dict)  # URLs answered while the port was silent

    def add(self, record: dict) -> None:
        reference = record.get("collector") or {}
        for reply in record.get("proxies") or []:
            name = reply.get("name", "?")
            self.unstamped[name] += unstamped(reference, reply)
            if self.ports is not None and not self.ports.requests(name) and not self.silent_port_replies[name] \
                    and same_answer(reference, reply):
                url = as_logged(record.get("url", ""), self.ports.strip_query_terms)  # as the access.log has it
                self._answered.setdefault(name, set()).add(url)

    def check_ports(self) -> None:
        """Read the access.log, then judge the replies seen before this call."""
        if self.ports is None:
            return
        self.ports.update()
        for name, urls in list(self._answered.items()):
            if self.ports.requests(name):
                del self._answered[name]
                self.silent_port_replies[name] = 0
            else:
                self.silent_port_replies[name] = max(self.silent_port_replies[name],
                                                     len(urls & self.ports.origin_urls))

    @property
    def bypassing(self) -> set[str]:
        return {n for n, c in self.unstamped.items() if c} | {n for n, c in self.silent_port_replies.items() if c}


def static_warnings(lab: Lab) -> list[str]:
    """Proxies the lab file already shows may bypass their Collector port (the run checks them all)."""
    if lab.origin.kind != "none":
        return []  # the lab's origin is named 'localhost' (model.py refuses 127.0.0.1) and is the only one
    warnings = []
    for p in lab.proxies:
        if p.kind == "trafficserver":
            warnings.append(f"[[proxy]] {p.name!r} (trafficserver): with [origin] kind = \"none\", a request for "
                            "a URL naming 127.0.0.1 goes straight to the origin, never to its parent (a hard-coded "
                            "test in Traffic Server): name loopback origins 'localhost'; the run marks a proxy "
                            "whose replies bypass its Collector port BYPASS and the report leaves out its hit ratio")
        elif p.kind == "external":
            warnings.append(f"[[proxy]] {p.name!r} (external): the lab cannot see whether your proxy sends every "
                            f"request to its Collector port; the run marks it BYPASS if its replies do not come "
                            "through it")
    return warnings
