"""The root of the Python tests: each test's layer from its folder, the rule for a missing part (parts.py), and
the fixtures of the integration tests (real processes on 127.0.0.1, stopped by PID however a test ends).

The layers, one folder each, selected by folder (`./spe test --layer unit`) or marker (`pytest -m unit`):
  unit          pure Python in the pytest process: no process started, no server
  loopback      real processes or servers on 127.0.0.1: the Multiplier, stock Squid as a stand-in, Python origins
  real_proxies  the real Debian proxies under test (Traffic Server, Varnish, Apache, nginx, HAProxy, tinyproxy,
                privoxy) or the patched Collector (build/collector)
  browser       headless Chromium
A test belongs to the layer of the heaviest thing it starts, in that order."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
# The venv has the checkout it was set up in on its path (./spe setup: spe-tools.pth); the checkout under test comes
# first, so that a second worktree sharing the venv tests its own code.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from parts import pytest_configure, require  # noqa: E402, F401  (pytest_configure: the skip rule, as a hook)

from spe_tools.process import ProcessGroup, free_port  # noqa: E402
from spe_tools.rundir.layout import MULTIPLIER_LOG, ROPE_LOG  # noqa: E402
from spe_tools.squid import start_squid  # noqa: E402

PYTHON = sys.executable
SERIAL = itertools.count(1)  # unique file names, also for parametrized tests whose names get cut
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


LAYERS = ("unit", "loopback", "real_proxies", "browser")


def layer_of(path: Path) -> str | None:
    """The layer folder a test file lies in, None for one outside them (unit/test_layers.py forbids that)."""
    folder = path.relative_to(Path(__file__).parent).parts[0]
    return folder if folder in LAYERS else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if layer := layer_of(item.path):
            item.add_marker(layer)


def multiplier_binary() -> Path:
    path = ROOT / os.environ.get("SPE_MULTIPLIER", "build/release/multiplier/spe-multiplier")
    require([] if path.exists() else [f"{path} is not built"], "the Multiplier")
    return path


@pytest.fixture(scope="module")
def lab():
    """Per module: an origin and a Squid Collector stand-in; tests add proxies and Multipliers."""
    # Not under pytest's tmp_path: Squid drops to user `proxy`, which can't enter
    # pytest's private (0700) base directory.
    workdir = Path(tempfile.mkdtemp(prefix="spe-test-"))
    workdir.chmod(0o755)
    with ProcessGroup(workdir) as group:
        origin_port = free_port()
        group.start("origin", [PYTHON, str(ROOT / "tests/fixtures/mini_origin.py"), "--port", str(origin_port)],
                    port=origin_port, env=ENV)
        collector = start_squid(group, "collector", free_port())
        yield Lab(group, workdir, origin_port, collector.port)
    shutil.rmtree(workdir, ignore_errors=True)


class Lab:
    def __init__(self, group: ProcessGroup, workdir: Path, origin_port: int, collector_port: int):
        self.group, self.workdir, self.origin_port, self.collector_port = group, workdir, origin_port, collector_port

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.origin_port}{path}"

    def squid_child(self, name: str):
        return start_squid(self.group, name, free_port(), parent_port=self.collector_port)

    def fault_proxy(self, name: str, mode: str, *extra: str):
        port = free_port()
        return self.group.start(name, [PYTHON, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                                       "--parent", f"127.0.0.1:{self.collector_port}", "--mode", mode, *extra],
                                port=port, env=ENV)


class Multiplier:
    """A running spe-multiplier and its logs."""

    def __init__(self, group: ProcessGroup, workdir: Path, name: str, args: list[str], host: str = "127.0.0.1"):
        self.host, self.port = host, free_port()
        # A run directory of its own: a Multiplier refuses a directory another one writes (its lock there).
        self.rundir = workdir / name
        self.rundir.mkdir()
        self.log = self.rundir / MULTIPLIER_LOG
        self.rope_log = self.rundir / ROPE_LOG
        self.child = group.start(name, [str(multiplier_binary()), "--listen", f"{host}:{self.port}",
                                        "--log", str(self.log), "--rope-log", str(self.rope_log), *args],
                                 port=self.port, ready=False)
        self.child.wait_ready(host=host)

    def records(self, count: int, deadline_s: float = 10.0) -> list[dict]:
        """Wait (bounded) until at least `count` records are in the log; return them by id."""
        end = time.monotonic() + deadline_s
        while True:
            records = read_records(self.log)
            if len(records) >= count or time.monotonic() > end:
                return sorted(records, key=lambda r: r["id"])
            time.sleep(0.05)

    def stop(self) -> int | None:
        return self.child.stop()

    def sigterm_under_load(self, client: Callable[[int, threading.Event], None], clients: int,
                           run_s: float = 1.5) -> list[dict]:
        """Run `clients` threads of `client(i, stop)`, SIGTERM after `run_s`; check exit 0; return the records."""
        stop = threading.Event()
        threads = [threading.Thread(target=client, args=(i, stop)) for i in range(clients)]
        for t in threads:
            t.start()
        time.sleep(run_s)
        self.child.popen.send_signal(signal.SIGTERM)
        try:
            assert self.child.popen.wait(timeout=30) == 0
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=15)
        return self.records(0, deadline_s=0)


SCHEMA = json.loads((ROOT / "docs/multiplier-log.schema.json").read_text())
# One validator, its schema checked once: jsonschema.validate() checks the schema again on every call (45 ms a
# record), which made reading a few thousand records take most of a minute.
jsonschema.validators.validator_for(SCHEMA).check_schema(SCHEMA)
RECORD_VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)


def read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    # The last line may still be half-written (the log is flushed every second).
    complete = path.read_text().split("\n")[:-1]
    records = [json.loads(line) for line in complete if line.strip()]
    for record in records:  # every record a test reads honours the log contract
        RECORD_VALIDATOR.validate(record)
    return records


@pytest.fixture
def start_multiplier(lab, request):
    """Start a Multiplier in front of the module's Collector; stopped when the test ends."""
    started: list[Multiplier] = []

    def start(*args: str, collector: bool = True, host: str = "127.0.0.1") -> Multiplier:
        base = ["--collector", f"127.0.0.1:{lab.collector_port}"] if collector else []
        # This test bed's origin is a fixture: the fan-out tests send it the proxies' copies of unsafe
        # requests as they are (a real lab routes them to the replay port: test_lab_unsafe_requests.py).
        if not {"--unsafe-requests", "--replay-listen", "--dummy"} & set(args):
            base += ["--unsafe-requests", "send"]
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:60]
        m = Multiplier(lab.group, lab.workdir, f"mult-{next(SERIAL)}-{safe}", [*base, *args], host=host)
        started.append(m)
        return m

    yield start
    problems = []
    for m in started:
        code = m.stop()
        output = m.child.log.read_text(errors="replace")
        # Under the ASan/UBSan build a memory error, UB or leak must fail the test.
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if marker in output:
                problems.append(f"{m.child.name}: {marker}\n{output[-3000:]}")
        if code not in (0, None):
            problems.append(f"{m.child.name} exited with {code} after SIGTERM:\n{output[-2000:]}")
    if problems:
        pytest.fail("\n".join(problems))
