"""status.json, typed: how a running lab's processes are doing, rewritten each second by the lab's status loop
(spe_tools/lab/watch/status_loop.py) and read by the live scorecard page (analysis/live.py). Written atomically (a
temporary file renamed over it), so a reader never sees half of it; reading never fails: a missing or unreadable
file reads as None ("the lab has not said yet")."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

from spe_tools.rundir.layout import RunDir

UP = "up"
DEAD = "dead"  # ended while the lab runs (a proxy under test, a companion, the live page itself)
ENDED = "ended"  # the workload, whose end is the run's


@dataclass
class ComponentStatus:
    name: str
    state: str  # UP, DEAD or ENDED
    how: str = ""  # how a dead one ended, e.g. "killed by SIGKILL"


@dataclass
class LabStatus:
    elapsed_s: float
    requests: int  # client requests logged so far
    components: list[ComponentStatus] = field(default_factory=list)
    # Seconds since the epoch. Rewritten each second: the live page shows an older one (the lab killed or stuck)
    # as the lab's last word, no process as up (analysis/live.py STALE_S).
    updated: float = field(default_factory=time.time)

    def write(self, run: Path) -> None:
        path = RunDir(run).status
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(path)

    @classmethod
    def read(cls, run: Path) -> Self | None:
        try:
            data = json.loads(RunDir(run).status.read_text())
            return cls(elapsed_s=float(data["elapsed_s"]), requests=int(data["requests"]),
                       components=[ComponentStatus(**c) for c in data.get("components", [])],
                       updated=float(data.get("updated", 0)))
        except (OSError, ValueError, TypeError, KeyError):
            return None
