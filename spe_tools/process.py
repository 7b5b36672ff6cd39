"""Start servers as child processes, wait for their ports with deadlines, stop them by PID.

Every helper here has a deadline; nothing waits forever. `ProcessGroup` stops
everything it started however the caller ends (use it as a context manager).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


class ProcessError(RuntimeError):
    """A child process could not be started or did not become ready."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class Child:
    """One started process, its log file and the port it serves."""

    name: str
    popen: subprocess.Popen
    log: Path
    port: int | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_ready(self, host: str = "127.0.0.1", deadline_s: float = 10.0) -> None:
        """Wait until the port accepts connections; fail early if the process exits."""
        if self.port is None:
            return
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if not self.alive():
                raise ProcessError(f"{self.name} exited with {self.popen.returncode}:\n{tail(self.log)}")
            if port_open(host, self.port):
                return
            time.sleep(0.05)
        raise ProcessError(f"{self.name} did not listen on {host}:{self.port} within {deadline_s} s:\n{tail(self.log)}")

    def stop(self, deadline_s: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """Signal the process, wait with a deadline, then SIGKILL. Returns the exit code."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            try:
                self.popen.wait(timeout=deadline_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
        return self.popen.returncode


@dataclass
class ProcessGroup:
    """Children started together and stopped together, in reverse order."""

    workdir: Path
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: list[str], port: int | None = None, ready: bool = True,
              deadline_s: float = 10.0, env: dict[str, str] | None = None) -> Child:
        log = self.workdir / f"{name}.out"
        with open(log, "wb") as out:
            try:
                popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.workdir, env=env, start_new_session=True)
            except OSError as e:
                raise ProcessError(f"cannot start {name} ({argv[0]}): {e}") from e
        child = Child(name, popen, log, port)
        self.children.append(child)
        if ready:
            child.wait_ready(deadline_s=deadline_s)
        return child

    def stop_all(self) -> None:
        for child in reversed(self.children):
            child.stop()

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
