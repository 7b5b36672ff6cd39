"""Lab processes: start one in its own directory and session, find all of its processes, stop them by PID.

Every lab component runs in a session of its own (setsid), so the processes it forks (Apache
workers, nginx's cache manager, Varnish's child, Traffic Server's crash logger) can be found by
their session id and none is left behind when the lab stops.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from spe_tools.process import Child, ProcessError, ProcessGroup


def launch(group: ProcessGroup, name: str, argv: list[str], *, cwd: Path, log: Path, port: int | None,
           env: dict[str, str] | None = None, deadline_s: float = 20.0, ready: bool = True) -> Child:
    """Start argv in cwd with stdout+stderr to `log`, add it to the group, wait for its port."""
    with open(log, "ab") as out:
        try:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                                     env=env, start_new_session=True)
        except OSError as e:
            raise ProcessError(f"cannot start {name} ({argv[0]}): {e.strerror}") from e
    child = Child(name, popen, log, port)
    group.children.append(child)
    if ready:
        child.wait_ready(deadline_s=deadline_s)
    return child


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return text[text.rindex(")") + 2:].split()


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot: with the PID, it names one process."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def alive(pid: int, started: int | None = None) -> bool:
    """True if pid runs (zombies do not count) and, when given, is still the process that started then."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return started is None or int(fields[19]) == started


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def kill_session(sid: int, sig: int = signal.SIGKILL) -> None:
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop_child(child: Child, deadline_s: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Stop the main process gracefully (bounded), then anything left in its session."""
    child.stop(deadline_s=deadline_s, sig=sig)
    end = time.monotonic() + 5
    while session_members(child.pid) and time.monotonic() < end:
        kill_session(child.pid)
        time.sleep(0.05)


def stop_pids(entries: list[dict], deadline_s: float = 10.0) -> list[str]:
    """Stop processes recorded earlier ({name, pid, start, signal}), in order; returns what was stopped.

    Used by `./spe lab down` from another process, so it cannot wait() on them: it polls /proc.
    """
    stopped = []
    for entry in entries:
        pid, started = entry["pid"], entry.get("start")
        if alive(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, entry.get("signal", signal.SIGTERM))
            end = time.monotonic() + deadline_s
            while alive(pid, started) and time.monotonic() < end:
                time.sleep(0.05)
            if alive(pid, started):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            stopped.append(entry["name"])
        if started is not None and start_time(pid) in (None, started):
            kill_session(pid)  # its forked helpers, if the main process left any
    return stopped
