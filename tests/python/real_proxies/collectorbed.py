"""A Multiplier in front of the patched Collector on loopback, for the tests that need both: the test origin
(test_collector.py's), the Collector with a port per proxy under test and the Multiplier's replay port (held
until the Collector has started, as the lab does: it finds its parent then), each proxy started on its port."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from conftest import Multiplier
from parts import require
from test_collector import ORIGIN

from spe_tools import collector
from spe_tools.collector import hold_replay_port, start_collector
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid

# A proxy under test as a bed starts it: start(group, its Collector port) -> the port it listens on.
StartProxy = Callable[[ProcessGroup, int], int]


def squid(name: str) -> StartProxy:
    """Debian's Squid as a proxy under test, its Collector port its parent."""
    return lambda group, parent: start_squid(group, name, free_port(), parent_port=parent).port


@contextlib.contextmanager
def multiplier_behind_collector(prefix: str, proxies: dict[str, StartProxy]) -> Iterator[tuple[int, Multiplier]]:
    """The bed, its processes stopped (by PID) and its directory removed however the tests end: yields the
    origin's port and the Multiplier."""
    require(collector.missing("spe"), "the patched Collector")
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    workdir.chmod(0o755)  # Squid drops to user `proxy`, which must reach its directory
    try:
        with ProcessGroup(workdir) as group:
            origin = free_port()
            group.start("origin", [sys.executable, str(ORIGIN), str(origin)], port=origin)
            direct, replay = free_port(), free_port()
            ports = {name: free_port() for name in proxies}
            holder = hold_replay_port(replay)
            start_collector(group, "collector", "spe", direct, ports, replay_port=replay)
            holder.close()
            args = ["--collector", f"127.0.0.1:{direct}", "--replay-listen", f"127.0.0.1:{replay}"]
            for name, start in proxies.items():
                args += ["--proxy", f"{name}=127.0.0.1:{start(group, ports[name])}"]
            multiplier = Multiplier(group, workdir, "multiplier", args)
            yield origin, multiplier
            multiplier.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
