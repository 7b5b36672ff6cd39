"""Every proxy kind, brought up through the lab code in one lab, behind its own Collector port.

For each kind: cacheable and uncacheable requests go through the Multiplier; the Collector's
access.log (one named port per proxy) shows what each proxy pulled, and the origin's own counters
show that nothing reached it except through the Collector. Kinds whose Debian package is missing
are left out of the lab and reported as skipped.
"""

from __future__ import annotations

import http.client
import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import multiplier_binary

from spe_tools.lab.kinds import KINDS
from spe_tools.lab.model import PROXY_KINDS, parse_lab
from spe_tools.lab.procs import alive, session_members, stop_child
from spe_tools.lab.runner import bring_up
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid

NAMES = {k: f"p-{k}" for k in PROXY_KINDS} | {"ats-prefetch": "p-ats-prefetch"}


def lab_text(kinds: list[str], external: tuple[int, int]) -> str:
    """A lab with one proxy of each kind; the external one is a Squid the test runs "as the user"."""
    text = 'name = "kinds"\n[collector]\nkind = "squid"\n[multiplier]\ntimeout_s = 20\n'
    text += (f'[[proxy]]\nname = "p-external"\nkind = "external"\naddress = "127.0.0.1:{external[0]}"\n'
             f'collector_port = {external[1]}\n')
    for kind in (k for k in kinds if k != "external"):
        text += f'[[proxy]]\nname = "{NAMES[kind]}"\nkind = "{kind}"\ncache_mb = 16\n' if kind not in (
            "tinyproxy", "privoxy", "dummy") else f'[[proxy]]\nname = "{NAMES[kind]}"\nkind = "{kind}"\n'
    if "trafficserver" in kinds:
        text += '[[proxy]]\nname = "p-ats-prefetch"\nkind = "trafficserver"\ncache_mb = 16\nprefetch = true\n'
    return text


class RunningKinds:
    def __init__(self, run, rundir: Path):
        self.run, self.rundir = run, rundir
        self.lab_json = json.loads((rundir / "lab.json").read_text())
        self.port_names = {v: k for k, v in self.lab_json["collector"]["ports"].items()}
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
            log = self.rundir / "multiplier.jsonl"
            lines = log.read_text().split("\n")[:-1] if log.exists() else []
            found = [r for r in map(json.loads, filter(None, lines)) if url_part in r["url"]]
            if len(found) >= count or time.monotonic() > end:
                return found
            time.sleep(0.1)

    def collector_lines(self, path: str) -> Counter:
        """Requests for exactly this path per Collector port name."""
        counts: Counter = Counter()
        for line in (self.rundir / "collector/access.log").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 12 and fields[6].endswith(path) and fields[6].split("/", 3)[-1] == path.lstrip("/"):
                counts[self.port_names.get(int(fields[10]), fields[10])] += 1
        return counts

    def origin_count(self, path: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.run.ports.origin, timeout=10)
        conn.request("GET", "/stats")
        stats = json.loads(conn.getresponse().read())
        conn.close()
        return stats.get(f"GET {path.split('?')[0]}", 0)


@pytest.fixture(scope="module")
def kinds_lab():
    multiplier = multiplier_binary()
    kinds = [k for k in PROXY_KINDS if not KINDS[k].missing(multiplier)]
    workdir = Path(tempfile.mkdtemp(prefix="spe-lab-test-"))
    workdir.chmod(0o755)  # the proxies drop to their own users
    rundir = workdir / "run"
    rundir.mkdir()
    rundir.chmod(0o755)
    external = (free_port(), free_port())
    lab = parse_lab(lab_text(kinds, external))
    group, users = ProcessGroup(rundir), ProcessGroup(workdir)
    pids: list[int] = []
    try:
        # The user's own proxy, outside the lab's control, its parent at the fixed Collector port.
        start_squid(users, "user-squid", external[0], parent_port=external[1], cache_mb=16)
        run = bring_up(lab, rundir, group, multiplier=multiplier, say=lambda _: None)
        for child in group.children:  # every process of every component, forked helpers included
            pids += session_members(child.pid)
        yield RunningKinds(run, rundir), kinds
    finally:
        for child in group.children:
            pids += session_members(child.pid)
        for child in reversed(group.children):
            stop_child(child)
        users.stop_all()
        left = [pid for pid in set(pids) if alive(pid)]
        shutil.rmtree(workdir, ignore_errors=True)
        assert not left, f"processes survived the lab: {left}"


@pytest.mark.parametrize("kind", PROXY_KINDS)
def test_kind_caches_through_its_own_collector_port(kinds_lab, kind):
    lab, kinds = kinds_lab
    if kind not in kinds:
        pytest.skip(f"{kind}: {'; '.join(KINDS[kind].missing(multiplier_binary()))}")
    name = NAMES[kind]
    cacheable, uncacheable = f"/c/{kind}-obj?size=3000", f"/u/{kind}-obj"
    for _ in range(3):
        lab.get(cacheable)
        lab.records(cacheable, len(lab.records(cacheable, 0)) + 1)
    for _ in range(2):
        lab.get(uncacheable)
    records = lab.records(cacheable, 3) + lab.records(uncacheable, 2)
    assert len(records) == 5
    for r in records[:3]:  # every cacheable reply of this proxy equals the Collector's
        mine = next(p for p in r["proxies"] if p["name"] == name)
        assert mine["result"] == "OK", mine
    for r in records[3:]:
        mine = next(p for p in r["proxies"] if p["name"] == name)
        assert mine["status"] == 200, mine

    on_ports = lab.collector_lines(cacheable)
    expected = 1 if KINDS[kind].caches else 3
    assert on_ports[name] == expected, f"{name} pulled {cacheable} {on_ports[name]} times: {dict(on_ports)}"
    assert on_ports["direct"] == 3
    assert lab.collector_lines(uncacheable)[name] == 2, "an uncacheable reply was served from a cache"
    # Nothing reached the origin except through the Collector: one origin fetch for the cacheable
    # object (the Collector's memory cache had it afterwards), one per Collector request otherwise.
    assert lab.origin_count(cacheable) == 1
    assert lab.origin_count(uncacheable) == sum(lab.collector_lines(uncacheable).values())


def test_trafficserver_prefetches_numbered_urls(kinds_lab):
    lab, kinds = kinds_lab
    if "trafficserver" not in kinds:
        pytest.skip("trafficserver is not installed")
    lab.get("/c/7001")
    lab.records("/c/7001", 1)
    end = time.monotonic() + 20  # the prefetches run in the background
    while lab.collector_lines("/c/7002")["p-ats-prefetch"] < 1 and time.monotonic() < end:
        time.sleep(0.2)
    assert lab.collector_lines("/c/7002")["p-ats-prefetch"] == 1
    lab.get("/c/7002")
    lab.records("/c/7002", 1)
    counts = lab.collector_lines("/c/7002")
    assert counts["p-ats-prefetch"] == 1, counts  # served from the prefetched copy
    assert counts["p-trafficserver"] == 1, counts  # the passive one had to fetch it


def test_lab_json_describes_the_topology(kinds_lab):
    lab, kinds = kinds_lab
    topo = lab.lab_json
    assert topo["name"] == "kinds" and topo["collector"]["access_log"] == "collector/access.log"
    assert set(topo["collector"]["ports"]) == {"direct", *topo["proxies"]}
    for kind in kinds:
        entry = topo["proxies"][NAMES[kind]]
        assert entry["kind"] == kind and entry["version"] != "unknown"
        if kind == "external":
            continue
        assert entry["collector_port"] == topo["collector"]["ports"][NAMES[kind]]
        assert (lab.rundir / entry["dir"]).is_dir() and (lab.rundir / entry["stdout"]).exists()
    assert topo["multiplier"]["port"] == lab.multiplier_port
    assert (lab.rundir / "collector/cache.log").exists()
