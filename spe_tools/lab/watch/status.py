"""The live status line of `./spe lab up`: requests and results per proxy, from the Multiplier's JSON Lines."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.lab.watch.bypass_watch import BypassWatch
from spe_tools.log_tail import LogTail
from spe_tools.rundir.records import NOT_MISMATCHES


@dataclass
class StatusTracker:
    """Reads the Multiplier's log incrementally (only complete lines) and counts results per proxy;
    `watch` notices proxies whose replies do not come through their Collector port. `more_logs`: the lab's other
    Multipliers', counted with it."""

    log: Path
    requests: int = 0
    results: dict[str, Counter] = field(default_factory=dict)
    watch: BypassWatch = field(default_factory=BypassWatch)
    more_logs: tuple[Path, ...] = ()
    _tails: list[LogTail] = field(init=False)

    def __post_init__(self) -> None:
        self._tails = [LogTail(log) for log in (self.log, *self.more_logs)]

    def update(self) -> None:
        self.watch.check_ports()  # before reading new records: judges those read at earlier updates
        for line in (line for tail in self._tails for line in tail.new_lines()):
            try:
                self.add(json.loads(line))
            except (ValueError, TypeError):
                continue

    def add(self, record: dict) -> None:
        self.requests += 1
        for proxy in record.get("proxies") or []:
            self.results.setdefault(proxy.get("name", "?"), Counter())[proxy.get("result", "?")] += 1
        self.watch.add(record)


def format_status(elapsed_s: float, requests: int, previous: int, results: dict[str, Counter],
                  names: list[str], down: frozenset[str] | set[str] = frozenset(),
                  bypass: frozenset[str] | set[str] = frozenset()) -> str:
    """One line: elapsed time, requests (and per second since the last line), per proxy OK, faithful copies of
    another origin fetch (other-fetch: no mismatch), mismatches (diff) and no reply,
    DOWN after a proxy whose process has died, BYPASS after one whose replies skip its Collector port."""
    parts = [f"{elapsed_s:6.0f} s", f"requests {requests} (+{requests - previous})"]
    for name in names:
        counts = results.get(name, Counter())
        ok = counts.get("OK", 0)
        none = counts.get("NO_RESPONSE", 0)
        fetch = sum(counts.get(c, 0) for c in NOT_MISMATCHES if c != "OK")  # another origin fetch: no mismatch
        other = sum(counts.values()) - ok - none - fetch
        parts.append(f"{name} ok {ok}" + (f" other-fetch {fetch}" if fetch else "")
                     + (f" diff {other}" if other else "") + (f" none {none}" if none else "")
                     + (" DOWN" if name in down else "") + (" BYPASS" if name in bypass else ""))
    return " | ".join(parts)
