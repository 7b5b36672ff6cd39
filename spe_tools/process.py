"""The one supervisor of every process the tools start: the lab, the tests' fixtures and the benchmarks.

A process starts in a session (and process group) of its own, with stdout and stderr in a log file,
and is ready once its port accepts connections or a line appears in its log. It is stopped by its
process group: SIGTERM, a deadline, then SIGKILL, and then whatever it forked that is still in its
session (Apache workers, nginx's cache manager, Varnish's child), so nothing is left behind; `ending`
says how it ended. Every wait has a deadline. `ProcessGroup` stops everything it started however
the caller ends (use it as a context manager); `stop_recorded` stops processes by PID and start time
from another process (`./spe lab down`). Process facts (session members, process trees, CPU times,
RSS and PSS) come from psutil.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# Where the tests and the benchmarks have always imported them from (spe_tools/ports.py owns them).
from spe_tools.ports import free_port as free_port
from spe_tools.ports import port_open
from spe_tools.rundir.layout import output_of


class ProcessError(RuntimeError):
    """A child process could not be started or did not become ready."""


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------- facts about processes (psutil)

def start_time(pid: int) -> float | None:
    """When the process started (seconds since the epoch): with the PID, it names one process."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def alive(pid: int, started: float | None = None) -> bool:
    """True if pid runs (zombies do not count) and, when given, is still the process that started then."""
    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        return started is None or process.create_time() == started
    except psutil.Error:
        return False


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session id is `sid`: a process started here and all it forked,
    even those whose parent has gone (psutil has no session id; os.getsid gives it)."""
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(process.pid) == sid and process.status() not in (psutil.STATUS_ZOMBIE,
                                                                           psutil.STATUS_DEAD):
                members.append(process.pid)
    return members


def kill_session(sid: int, sig: int = signal.SIGKILL, wait_s: float = 2.0) -> None:
    """Signals every live member of the session and waits (bounded) until they are gone: a killed
    process takes a moment to die, and a caller that checks right after must not find it."""
    signalled = []
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            process = psutil.Process(pid)
            os.kill(pid, sig)
            signalled.append(process)
    psutil.wait_procs(signalled, timeout=wait_s)


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (e.g. an nginx master and its workers); empty if it is gone."""
    try:
        process = psutil.Process(pid)
        return [pid, *(child.pid for child in process.children(recursive=True))]
    except psutil.Error:
        return []


def cpu_times(pids: list[int]) -> tuple[float, float]:
    """(user, system) CPU seconds of these processes (processes that are gone count 0)."""
    user = system = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            user, system = user + times.user, system + times.system
    return user, system


def rss_kb(pid: int) -> int:
    """The resident set size of a process, in KB."""
    return psutil.Process(pid).memory_info().rss // 1024


def open_fds(pid: int) -> int:
    return psutil.Process(pid).num_fds()


@dataclass
class ProcessTable:
    """One read of the process table: who forked whom and who is in which session, so that the trees of many
    processes are found in one pass (the lab's cost sampler reads them every second)."""

    children: dict[int, list[int]] = field(default_factory=dict)  # parent pid -> its children's
    sessions: dict[int, list[int]] = field(default_factory=dict)  # session id -> its members' pids

    @classmethod
    def read(cls) -> ProcessTable:
        table = cls()
        for process in psutil.process_iter(["ppid"]):
            table.children.setdefault(process.info["ppid"], []).append(process.pid)
            with contextlib.suppress(OSError):
                table.sessions.setdefault(os.getsid(process.pid), []).append(process.pid)
        return table

    def family(self, root: int, with_descendants: bool = True) -> set[int]:
        """The session `root` leads (what it forked, even those whose parent has gone) and, with
        `with_descendants` (the root still runs: its PID is its own), its descendants (even one that started a
        session of its own)."""
        descendants: set[int] = set()
        todo = [root] if with_descendants else []
        while todo:
            pid = todo.pop()
            if pid not in descendants:
                descendants.add(pid)
                todo += self.children.get(pid, ())
        return descendants | set(self.sessions.get(root, ()))


@dataclass(frozen=True)
class Usage:
    """What a process has used so far (CPU) and holds now (memory)."""

    pid: int
    started: float  # with the PID, names one process (PIDs are reused)
    user_s: float
    system_s: float
    memory_bytes: int
    pss: bool  # memory_bytes is its PSS (a shared page divided among those mapping it); False: RSS


def usage(pid: int) -> Usage | None:
    """The process's usage, None if it is gone. Memory is PSS where it can be read (smaps_rollup, a fraction of
    a millisecond), else RSS (another user's process when we are not root); a zombie holds none."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            times, started = process.cpu_times(), process.create_time()
            try:
                memory, pss = process.memory_full_info().pss, True
            except psutil.AccessDenied:
                memory, pss = process.memory_info().rss, False
            except psutil.ZombieProcess:
                memory, pss = 0, True
    except psutil.Error:
        return None
    return Usage(pid, started, times.user, times.system, memory, pss)


# ---------------------------------------------------------------- one supervised process

def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit {code}"


@dataclass
class Child:
    """One started process (the leader of its own session), its log file and what makes it ready."""

    name: str
    popen: subprocess.Popen
    log: Path
    port: int | None = None
    ready_line: str | None = None  # ready once this text is in its log (when it has no port)
    ending: str | None = None  # how it ended, once stop() has run: "exit 0 after SIGTERM", ...
    signalled: tuple[int, float] | None = None  # the stop signal sent and when (monotonic), once it was
    # How long it may take to finish after the stop signal while what started before it still runs (the
    # Multiplier's drain: its last legs still go to the proxies); 0: the group's head start.
    drain_s: float = 0.0

    @property
    def stop_deadline_s(self) -> float:
        """How long it has after the stop signal before SIGKILL: 10 s, or its drain and 5 s more."""
        return max(10.0, self.drain_s + 5.0)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def members(self) -> list[int]:
        """Every live process of its session: itself and what it forked."""
        return session_members(self.pid)

    def is_ready(self, host: str) -> bool:
        if self.port is not None:
            return port_open(host, self.port)
        if self.ready_line is not None:
            with contextlib.suppress(OSError):
                return self.ready_line in self.log.read_text(errors="replace")
            return False
        return True

    def wait_ready(self, host: str = "127.0.0.1", deadline_s: float = 10.0) -> None:
        """Wait until the port accepts connections (or the line is logged); fail early if it exits."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if not self.alive():
                raise ProcessError(f"{self.name} exited with {self.popen.returncode}:\n{tail(self.log)}")
            if self.is_ready(host):
                return
            time.sleep(0.05)
        what = f"listen on {host}:{self.port}" if self.port is not None else f"log {self.ready_line!r}"
        raise ProcessError(f"{self.name} did not {what} within {deadline_s} s:\n{tail(self.log)}")

    def signal_stop(self, sig: int = signal.SIGTERM) -> None:
        """Send its process group the stop signal, if it runs and has not had it; stop() then waits for it."""
        if self.signalled is None and self.alive():
            self.signalled = (sig, time.monotonic())
            self._signal_group(sig)

    def stop(self, deadline_s: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Signal its process group (unless signal_stop did), wait for the main process until the deadline from
        the signal, then SIGKILL the group; last, SIGKILL whatever is left in its session (bounded). Returns the
        main process's exit code."""
        self.signal_stop(sig)
        if self.signalled is not None and self.ending is None:
            sig, at = self.signalled
            end = at + deadline_s
            try:
                self.popen.wait(timeout=max(0.0, end - time.monotonic()))
                code = self.popen.returncode
                self.ending = (f"stopped by {signal.Signals(sig).name}" if code == -sig
                               else f"{describe_exit(code)} after {signal.Signals(sig).name}")
                # The whole group got the signal: its forked helpers get what is left of the deadline to
                # finish too (a helper may still be in its handler when the main process is gone).
                while self.members() and time.monotonic() < end:
                    time.sleep(0.02)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait(timeout=5)
                self.ending = f"killed by SIGKILL after the {deadline_s:g} s deadline"
        elif self.ending is None:
            self.ending = f"{describe_exit(self.popen.returncode)} before it was stopped"
        self._sweep_session()
        return self.popen.returncode

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _sweep_session(self, deadline_s: float = 5.0) -> None:
        """Forked helpers that left its process group or outlived the signal: SIGKILL, bounded."""
        end = time.monotonic() + deadline_s
        while self.members() and time.monotonic() < end:
            kill_session(self.pid)
            time.sleep(0.05)


def _placed(fds: dict[int, int]) -> dict:
    """Popen arguments that give the child our descriptors at the numbers it expects (its fd: ours).

    Popen keeps a passed descriptor at its own number only, so the child moves them in place just before
    exec: first each to a free number above them all (a target may be another's source), then onto its
    target, which dup2 leaves open across exec. Nothing else leaks: Python's descriptors are not
    inheritable (PEP 446), so with close_fds off the child still gets only these and its stdio."""
    above = max(*fds, *fds.values()) + 1

    def place() -> None:
        moved = {target: fcntl.fcntl(source, fcntl.F_DUPFD_CLOEXEC, above) for target, source in fds.items()}
        for target, fd in moved.items():
            os.dup2(fd, target)

    return {"preexec_fn": place, "close_fds": False}


@dataclass
class ProcessGroup:
    """Children started together and stopped together, in reverse order; logs in workdir/<name>.out."""

    workdir: Path
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: list[str], port: int | None = None, ready: bool = True,
              deadline_s: float = 10.0, env: dict[str, str] | None = None, cwd: Path | None = None,
              ready_line: str | None = None, fds: dict[int, int] | None = None, umask: int | None = None) -> Child:
        """Start argv in a session of its own (in `cwd`, default workdir) and, with `ready`, wait for
        its port or its `ready_line`. The child joins the group before it is ready, so a failed start
        is stopped with the rest. `fds` hands it descriptors at fixed numbers (its number: ours), e.g.
        Chromium's DevTools pipe on 3 and 4; `umask` replaces ours in the child."""
        log = self.workdir / output_of(name)
        with open(log, "wb") as out:
            try:
                popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=cwd or self.workdir, env=env, start_new_session=True,
                                         umask=-1 if umask is None else umask, **(_placed(fds) if fds else {}))
            except OSError as e:
                raise ProcessError(f"cannot start {name} ({argv[0]}): {e.strerror}") from e
        child = Child(name, popen, log, port, ready_line)
        self.children.append(child)
        if ready:
            child.wait_ready(deadline_s=deadline_s)
        return child

    def stop_all(self, head_start_s: float = 0.5) -> None:
        """Stop the last started first: each gets the signal in turn, and up to head_start_s to exit before the
        next one gets it (what started later may use what started earlier: the Multiplier its proxies while it
        flushes its log, a prefetch agent its Squid, a proxy its Collector; a child with a drain_s gets that
        instead); then each is waited for with its own deadline. Most exit within milliseconds; the slow ones (a
        Squid takes 2 to 3 s, Traffic Server 1 s) no longer hold the rest up: a lab's dozen, one after the other,
        took 13 s."""
        children = list(reversed(self.children))
        for child in children:
            child.signal_stop()
            if child.signalled is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.popen.wait(timeout=max(head_start_s, child.drain_s))
        for child in children:
            child.stop(deadline_s=child.stop_deadline_s)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


# ---------------------------------------------------------------- stopping from another process

def stop_recorded(entries: list[dict], deadline_s: float = 10.0, by_group: bool = True) -> list[str]:
    """Stop processes recorded earlier ({name, pid, start, signal[, deadline_s]}), in order, each given its own
    deadline_s or `deadline_s` to exit before SIGKILL and before the next is signalled; returns what was stopped.

    For `./spe lab down`, which runs in another process and cannot wait() on them: it polls. With
    `by_group`, each is a session leader started by a ProcessGroup: its whole group is signalled and
    its session swept afterwards."""
    stopped = []
    for entry in entries:
        pid, started = entry["pid"], entry.get("start")
        if alive(pid, started):
            _signal_recorded(pid, entry.get("signal", signal.SIGTERM), by_group)
            end = time.monotonic() + entry.get("deadline_s", deadline_s)
            # The whole group got the signal: its forked helpers get the same time to finish as the main
            # process (on a loaded machine a helper may still be in its handler when the main one is gone).
            while (alive(pid, started) or (by_group and session_members(pid))) and time.monotonic() < end:
                time.sleep(0.05)
            if alive(pid, started):
                _signal_recorded(pid, signal.SIGKILL, by_group)
            stopped.append(entry["name"])
        if by_group and started is not None and start_time(pid) in (None, started):
            kill_session(pid)  # its forked helpers, if the main process left any
    return stopped


def _signal_recorded(pid: int, sig: int, by_group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if by_group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
