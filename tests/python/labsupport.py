"""A lab brought up through the lab code for a test module, and what its tests read from it.

`lab_session` starts the lab from TOML text in a private directory and, however the test ends,
stops every process (forked helpers included) and fails if one survived. `run_lab_file` runs a whole
`./spe lab run` as a user would, in a process of its own.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from conftest import multiplier_binary
from parts import installed_kinds, require

from spe_tools import collector
from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.network import netns
from spe_tools.lab.start.bring_up import bring_up
from spe_tools.lab.start.running_lab import RunningLab, down
from spe_tools.process import Child, ProcessGroup, alive, free_port, session_members
from spe_tools.rundir.access_log import BadLineError, as_logged, read_access_log
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import RunDir
from spe_tools.squid import start_squid

ROOT = Path(__file__).resolve().parents[2]

REAL_KINDS = ("squid", "trafficserver", "nginx", "varnish", "apache")  # Debian's caching proxies

# Every object of the synthetic origin cacheable unless a request says otherwise (cc=...), small.
ALL_CACHEABLE = {"cache_shares": {"public": 1.0, "private": 0.0, "no-store": 0.0, "cookie": 0.0, "vary": 0.0},
                 "size_mean": 4000}


class LabUnderTest:
    """A running lab: requests through its Multiplier, its records, the Collector's and the origin's counts."""

    def __init__(self, run: RunningLab, workdir: Path):
        self.run, self.workdir, self.rundir = run, workdir, run.rundir
        self.files = RunDir(self.rundir)
        self.lab_json = json.loads(self.files.lab_json.read_text())  # as written: tests check the file itself
        self.topology = LabJson.from_json(self.lab_json)
        self.port_names = self.topology.collector.port_names()
        self.multiplier_port = run.ports.multiplier
        self.origin = f"http://localhost:{run.ports.origin}"
        self.conn = http.client.HTTPConnection("127.0.0.1", self.multiplier_port, timeout=30)

    def get(self, path: str) -> bytes:
        self.conn.request("GET", self.origin + path)
        reply = self.conn.getresponse()
        body = reply.read()
        assert reply.status == 200, (path, reply.status, body[:200])
        return body

    def records(self, url_part: str, count: int, deadline_s: float = 30) -> list[dict]:
        """Records of requests whose URL contains url_part, once `count` of them are complete."""
        end = time.monotonic() + deadline_s
        while True:
            log = self.files.multiplier_log
            lines = log.read_text().split("\n")[:-1] if log.exists() else []
            found = [r for r in map(json.loads, filter(None, lines)) if url_part in r["url"]]
            if len(found) >= count or time.monotonic() > end:
                return found
            time.sleep(0.1)

    def collector_lines(self, path: str) -> Counter:
        """Requests for exactly this path per Collector port name (its query cut off as the log has it, when the
        Collector strips query terms: a lab on live traffic)."""
        path = as_logged(path, self.topology.collector.strips_query_terms())
        counts: Counter = Counter()
        for line in read_access_log(self.files.access_log):
            if not isinstance(line, BadLineError) and line.url.endswith(path) and \
                    line.url.split("/", 3)[-1] == path.lstrip("/"):
                counts[self.port_names.get(line.port, str(line.port))] += 1
        return counts

    def origin_stats(self) -> dict:
        """The lab origin's /_stats (the synthetic one's or the HAR origin's counts)."""
        conn = http.client.HTTPConnection(self.run.ports.addresses.of("origin"), self.run.ports.origin, timeout=10)
        conn.request("GET", "/_stats")
        stats = json.loads(conn.getresponse().read())
        conn.close()
        return stats

    def origin_count(self, path: str) -> int:
        """Requests the origin served for this path (any query)."""
        return self.origin_stats()["by_path"].get(path.split("?")[0], 0)


@contextlib.contextmanager
def lab_session(text: Callable[[Path], str], before: Callable[[ProcessGroup], None] | None = None,
                ) -> Iterator[LabUnderTest]:
    """Bring up the lab `text(workdir)` describes; `before` starts what the user would run outside it.
    SPE_KEEP_LAB=DIR keeps a copy of the lab's directory (run directory, proxies' logs) in DIR when it stops."""
    multiplier = multiplier_binary()
    workdir = Path(tempfile.mkdtemp(prefix="spe-lab-test-"))
    workdir.chmod(0o755)  # the proxies drop to their own users
    rundir = workdir / "run"
    rundir.mkdir()
    rundir.chmod(0o755)
    group, users = ProcessGroup(rundir), ProcessGroup(workdir)
    pids: list[int] = []
    try:
        lab = parse_lab(text(workdir))
        if before:
            before(users)
        run = bring_up(lab, rundir, group, multiplier=multiplier, say=lambda _: None)
        for child in group.children:  # every process of every component, forked helpers included
            pids += child.members()
        yield LabUnderTest(run, workdir)
    finally:
        for child in group.children:
            pids += child.members()
        group.stop_all()
        users.stop_all()
        netns.remove_hosts(rundir)  # [network] namespaces: nothing runs in them any more
        left = [pid for pid in set(pids) if alive(pid)]
        if os.environ.get("SPE_KEEP_LAB"):
            with contextlib.suppress(shutil.Error):
                shutil.copytree(workdir, Path(os.environ["SPE_KEEP_LAB"]) / workdir.name, symlinks=True)
        shutil.rmtree(workdir, ignore_errors=True)
        assert not left, f"processes survived the lab: {left}"


def lab_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`./spe lab ARGS` (python -m spe_tools.lab) as a user runs it, its output captured."""
    return subprocess.run([sys.executable, "-m", "spe_tools.lab", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def lab_pids(rundir: Path) -> set[int]:
    """Every process of a running lab (pids.json), forked helpers included; none while it cannot be read (not
    written yet, or being replaced)."""
    try:
        state = json.loads((rundir / "pids.json").read_text())
    except (OSError, ValueError):
        return set()
    return {pid for e in state["processes"] for pid in (e["pid"], *session_members(e["pid"]))}


class LabUp:
    """`./spe lab up` running as a user runs it: its run directory once it has its lab.json, its processes."""

    def __init__(self, up: subprocess.Popen, rundir: Path):
        self.up, self.rundir = up, rundir
        self.pids = lab_pids(rundir)
        self.output = ""  # what `up` printed, once it has ended

    def down(self) -> None:
        """`./spe lab down RUN`, as a user runs it: it succeeds and `up` ends with exit 0."""
        self.pids |= lab_pids(self.rundir)
        stopped = lab_cli("down", str(self.rundir))
        assert stopped.returncode == 0, stopped.stderr
        assert self.up.wait(timeout=60) == 0


@contextlib.contextmanager
def lab_up(labfile: Path, runs_dir: Path, deadline_s: float = 120) -> Iterator[LabUp]:
    """`./spe lab up LABFILE --runs-dir RUNS_DIR` in a session of its own, once its run directory has its
    lab.json (the test calls `down()`); however the test ends, `up` is stopped, its output kept, and no process
    of the lab may survive it."""
    before = set(runs_dir.glob("*/lab.json"))
    up = subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "up", str(labfile), "--runs-dir", str(runs_dir)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, start_new_session=True)
    lab = None
    try:
        end = time.monotonic() + deadline_s
        while not (found := set(runs_dir.glob("*/lab.json")) - before):
            assert up.poll() is None, up.stdout.read()
            assert time.monotonic() < end, "the lab did not come up"
            time.sleep(0.2)
        (json_file,) = found
        lab = LabUp(up, json_file.parent)
        yield lab
    finally:
        if up.poll() is None:
            up.terminate()
            up.wait(timeout=60)
        output = up.stdout.read()
        if lab is not None:
            lab.output = output
            survived = [p for p in lab.pids if alive(p)]
            assert not survived, f"processes survived the lab: {survived}"


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A directory the proxies can enter after they drop to their own users (not pytest's private tmp_path),
    removed after."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def origin_behind_squid(prefix: str, think_mean_ms: int, think_sd_ms: int, as_parent: bool = False,
                        ) -> Iterator[tuple[Path, int, Child]]:
    """The synthetic origin and a stock Squid, in a scratch directory: (the directory, the origin's port, Squid).
    `as_parent`: the origin is Squid's parent, so nothing Squid gets can make it go anywhere else."""
    with scratch_dir(prefix) as workdir, ProcessGroup(workdir) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", str(think_mean_ms), "--think-sd-ms", str(think_sd_ms)],
                    port=port, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        yield workdir, port, start_squid(group, "squid", free_port(), parent_port=port if as_parent else None)


def run_lab_file(runs: Path, name: str, text: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """`./spe lab run` of the lab file `text` (named `name`) in its own session, its run directory in `runs`, and its
    output. However it ends, the lab stops its components itself (SIGTERM), and whatever it could not stop is
    stopped by PID, as `./spe lab down` does."""
    labfile = runs / f"{name}.toml"
    labfile.write_text(text)
    run = subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "run", str(labfile), "--runs-dir", str(runs), *args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        out, _ = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            run.terminate()
            run.wait(timeout=60)
        for rundir in runs.glob(f"*-{name}"):
            down(rundir)
    return subprocess.CompletedProcess(run.args, run.returncode, out)


def real_proxies_lab(name: str, collector_kind: str, origin: Callable[[int], list[str]], timeout_s: float,
                     ) -> tuple[contextlib.AbstractContextManager[LabUnderTest], list[str], str]:
    """Every one of Debian's caching proxies installed here, each named after its kind, behind the `collector_kind`
    Collector, with the origin command `origin(port)` started first as a user would start theirs: the lab (to
    enter), its proxies and the origin's URL. A missing Collector or proxy: parts.py."""
    require(collector.missing(collector_kind), f"the {collector_kind} Collector")
    kinds = installed_kinds(REAL_KINDS, multiplier_binary())
    require([] if kinds else ["none of them is installed"], "Debian's caching proxies")
    origin_port = free_port()

    def text(_workdir: Path) -> str:
        t = (f'name = "{name}"\n[collector]\nkind = "{collector_kind}"\n[origin]\nkind = "none"\n'
             f"[multiplier]\ntimeout_s = {timeout_s}\n")
        for kind in kinds:
            t += f'[[proxy]]\nname = "{kind}"\nkind = "{kind}"\ncache_mb = 16\n'
            if kind == "apache":  # mod_cache caches one origin port per CacheEnable line
                t += f"cache_ports = [{origin_port}]\n"
        return t

    def start_origin(group: ProcessGroup) -> None:
        group.start("origin", origin(origin_port), port=origin_port)

    # localhost, not 127.0.0.1: Traffic Server would bypass its parent
    return lab_session(text, start_origin), kinds, f"http://localhost:{origin_port}"


def results_per_proxy(records: list[dict], kinds: list[str]) -> tuple[dict[str, Counter], list[tuple]]:
    """Each proxy's results over a run's records (printed by the tests, `-s`, for the record), and what the dummy,
    which has no cache, got that differed from the Collector: SPE's own noise, never a proxy's."""
    results = {kind: Counter() for kind in [*kinds, "dummy"]}
    differing = []
    for record in records:
        for proxy in record["proxies"]:
            results[proxy["name"]][proxy["result"]] += 1
            if proxy["name"] == "dummy" and proxy["result"] != "OK":
                differing.append((record["method"], record["url"], record["collector"]["status"], proxy["result"],
                                  proxy.get("status"), proxy.get("mismatched_headers"), proxy.get("error")))
    return results, differing


class CpuHogs:
    """`count` cores busy while a test runs: spinning processes, stopped by PID however the test ends."""

    def __init__(self, count: int):
        self.count, self.procs = count, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.count)]
        return self

    def __exit__(self, *exc):
        busy = all(proc.poll() is None for proc in self.procs)
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)
        assert busy, "a CPU hog stopped before the sequences ended"
