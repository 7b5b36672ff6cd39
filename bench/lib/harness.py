"""What every benchmark run shares: the binary under test, where the load and the servers run, the error a
benchmark reports to its user, and run_main, which wraps a run (tools checked, a temporary directory, SIGTERM
and failures ending with a message and exit status 1)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import ROOT
from spe_tools.process import ProcessError

# SPE_MULTIPLIER (as in the tests): another build, e.g. an older commit's, for a before/after run
MULTIPLIER = ROOT / os.environ.get("SPE_MULTIPLIER", "build/release/multiplier/spe-multiplier")
LOAD_CPU, SERVER_CPU = 0, 1  # the project's perf anchors: the load generator on CPU0, every server on CPU1


@contextmanager
def on_load_cpu() -> Iterator[None]:
    """The benchmark process itself on LOAD_CPU (its own fixed-rate client is the load), as it was after."""
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {LOAD_CPU})
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


class BenchError(RuntimeError):
    """A clear, user-facing failure (port busy, a server died, a check failed)."""


class TerminatedError(Exception):
    """SIGTERM: unwind so that every started process is stopped."""


def on_sigterm(signum: int, frame: object) -> None:
    raise TerminatedError(f"interrupted by signal {signum}; stopping every process it started")


def run_main(prefix: str, tools: tuple[str, ...], run: Callable[[Path], int], keep: bool = False) -> int:
    """Checks the tools, makes a temporary directory (readable by Squid's user) and calls run(workdir);
    SIGTERM, Ctrl-C and failures end with a message and exit status 1. Processes are stopped by the
    ProcessGroup that run() opens."""
    for tool in tools:
        if shutil.which(tool) is None:
            print(f"bench: {tool} is not installed (./spe setup installs it)", file=sys.stderr)
            return 1
    if not MULTIPLIER.exists():
        print(f"bench: {MULTIPLIER} is missing: run ./spe setup (or ./spe build)", file=sys.stderr)
        return 1
    if (os.cpu_count() or 1) < 2:
        print(f"bench: needs 2 CPUs (load on CPU{LOAD_CPU}, servers on CPU{SERVER_CPU})", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, on_sigterm)
    workdir = Path(tempfile.mkdtemp(prefix=f"spe-bench-{prefix}-"))
    workdir.chmod(0o755)  # Squid runs as user proxy and must reach its directory
    try:
        return run(workdir)
    except (BenchError, ProcessError, TerminatedError, KeyboardInterrupt, OSError) as e:
        print(f"bench: error: {e or type(e).__name__}", file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"bench: temporary directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
