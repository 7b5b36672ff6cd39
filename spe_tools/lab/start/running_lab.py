"""A lab being brought up or running: its processes as they start, each listed in pids.json at once (so that
`./spe lab down RUNDIR` can stop them by PID from another shell), and stopped in reverse order."""

from __future__ import annotations

import json
import os
import signal
import socket
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.lab.definition.model import Lab
from spe_tools.lab.network import netns
from spe_tools.lab.start.port_plan import Ports
from spe_tools.process import Child, ProcessGroup, alive, start_time, stop_recorded
from spe_tools.rundir import access, layout
from spe_tools.rundir.layout import RunDir

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class RunningLab:
    """A lab being brought up in `rundir`: the processes started so far and where everything is."""

    lab: Lab
    rundir: Path
    group: ProcessGroup
    ports: Ports | None = None
    multiplier: Child | None = None
    pids: list[dict] = field(default_factory=list)
    replay_holders: list[socket.socket] = field(default_factory=list)  # replay ports, held until the Multipliers listen
    live_url: str | None = None  # the live scorecard's, secret path included (spe_tools/lab/start/live.py)

    def record(self, child: Child) -> None:
        """Add a started process to pids.json (written at once: `down` may run any time)."""
        entry = {"name": child.name, "pid": child.pid, "start": start_time(child.pid), "signal": int(signal.SIGTERM)}
        if child.drain_s:  # the Multiplier: `down` waits for its drain before the next, and kills it only after
            entry["deadline_s"] = child.stop_deadline_s
        self.pids.append(entry)
        self.write_pids()

    def write_pids(self) -> None:
        runner = {"name": layout.LAB, "pid": os.getpid(), "start": start_time(os.getpid()),
                  "signal": int(signal.SIGTERM)}
        pids = RunDir(self.rundir).pids
        tmp = pids.with_name(pids.name + ".tmp")
        tmp.write_text(json.dumps({"runner": runner, "processes": self.pids}, indent=2))
        tmp.replace(pids)

    def stop(self) -> list[int]:
        """Stop every process in reverse start order (the Multiplier first, so it flushes its log), each
        with whatever it forked (its session). pids.json goes only once none of them is left, so that
        `./spe lab down` can still find a survivor; returns the survivors' PIDs."""
        listed = {entry["pid"] for entry in self.pids}
        for child in self.group.children:  # started but not yet listed (it failed before it was ready)
            if child.pid not in listed:
                self.record(child)
        self.group.stop_all()
        left = sorted({pid for child in self.group.children for pid in [child.pid, *child.members()] if alive(pid)})
        if not left:
            netns.remove_hosts(self.rundir)  # nothing runs in them any more
            RunDir(self.rundir).pids.unlink(missing_ok=True)
            access.seal(self.rundir, self.lab.share_group)  # nothing runs in it any more
        return left


def lab_env(home: Path) -> dict[str, str]:
    """A small, fixed environment: no proxy variables leak in, temporary files stay in the run directory."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8",
            "PYTHONPATH": str(ROOT)}


def down(rundir: Path, deadline_s: float = 60.0) -> list[str]:
    """Stop a lab started in rundir (by `up` or `run` in another process); returns what was stopped."""
    pid_file = RunDir(rundir).pids
    if not pid_file.exists():
        return []
    state = json.loads(pid_file.read_text())
    # The runner first: it stops its components in order and flushes the Multiplier's log.
    stopped = stop_recorded([state["runner"]], deadline_s=deadline_s, by_group=False) if state.get("runner") else []
    stopped += stop_recorded(list(reversed(state.get("processes", []))))
    stopped += [f"network namespace {name}" for name in netns.remove_hosts(rundir)]
    pid_file.unlink(missing_ok=True)
    return stopped
