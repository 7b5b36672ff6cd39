"""Every proxy kind, brought up through the lab code in one lab, behind its own Collector port.

For each kind: cacheable and uncacheable requests go through the Multiplier; the Collector's
access.log (one named port per proxy) shows what each proxy pulled, and the origin's own counters
show that nothing reached it except through the Collector. Kinds whose Debian package is missing
are left out of the lab and reported as skipped.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import multiplier_binary
from labsupport import ALL_CACHEABLE, lab_session
from parts import installed_kinds, require

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import PROXY_KINDS
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid

NAMES = {k: f"p-{k}" for k in PROXY_KINDS} | {"ats-prefetch": "p-ats-prefetch"}
# HAProxy 2.6 stores no reply that carries `Age: 0`, and the Collector's answers within the second of its own
# fetch carry one: its first copy is not stored, its repeat a second later (Age 1 or more) is.
STORES_NO_AGE_0 = {"haproxy"}


def lab_text(kinds: list[str], external: tuple[int, int], model: Path) -> str:
    """A lab with one proxy of each kind; the external one is a Squid the test runs "as the user"."""
    text = ('name = "kinds"\n[collector]\nkind = "squid"\n[multiplier]\ntimeout_s = 20\n'
            f'[origin]\nthink_mean_ms = 0\nmodel = "{model}"\n')
    text += (f'[[proxy]]\nname = "p-external"\nkind = "external"\naddress = "127.0.0.1:{external[0]}"\n'
             f'collector_port = {external[1]}\n')
    for kind in (k for k in kinds if k != "external"):
        text += f'[[proxy]]\nname = "{NAMES[kind]}"\nkind = "{kind}"\ncache_mb = 16\n' if kind not in (
            "tinyproxy", "privoxy", "dummy") else f'[[proxy]]\nname = "{NAMES[kind]}"\nkind = "{kind}"\n'
    if "trafficserver" in kinds:
        text += '[[proxy]]\nname = "p-ats-prefetch"\nkind = "trafficserver"\ncache_mb = 16\nprefetch = true\n'
    return text


@pytest.fixture(scope="module")
def kinds_lab():
    kinds = installed_kinds(PROXY_KINDS, multiplier_binary())
    external = (free_port(), free_port())

    def text(workdir: Path) -> str:
        model = workdir / "model.json"
        model.write_text(json.dumps(ALL_CACHEABLE))
        return lab_text(kinds, external, model)

    def users_squid(users: ProcessGroup) -> None:
        # The user's own proxy, outside the lab's control, its parent at the fixed Collector port.
        start_squid(users, "user-squid", external[0], parent_port=external[1], cache_mb=16)

    with lab_session(text, users_squid) as lab:
        yield lab, kinds


@pytest.mark.parametrize("kind", PROXY_KINDS)
def test_kind_caches_through_its_own_collector_port(kinds_lab, kind):
    lab, kinds = kinds_lab
    require(KINDS[kind].missing(multiplier_binary()), f"the proxy kind {kind}")
    name = NAMES[kind]
    cacheable, uncacheable = f"/obj/{kind}-obj?size=3000", f"/obj/{kind}-u?cc=no-store"
    later_s = 1.5 if kind in STORES_NO_AGE_0 else 0  # before the first repeat
    if later_s:
        time.sleep(1.05 - time.time() % 1)  # the first fetch early in a second: its copies have Age 0
    for i in range(3):
        lab.get(cacheable)
        lab.records(cacheable, len(lab.records(cacheable, 0)) + 1)
        time.sleep(later_s if i == 0 else 0)
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
    expected = 3 if not KINDS[kind].caches else 2 if kind in STORES_NO_AGE_0 else 1
    assert on_ports[name] == expected, f"{name} pulled {cacheable} {on_ports[name]} times: {dict(on_ports)}"
    assert on_ports["direct"] == 3
    assert lab.collector_lines(uncacheable)[name] == 2, "an uncacheable reply was served from a cache"
    # Nothing reached the origin except through the Collector: one origin fetch for the cacheable
    # object (the Collector's memory cache had it afterwards), one per Collector request otherwise.
    assert lab.origin_count(cacheable) == 1
    assert lab.origin_count(uncacheable) == sum(lab.collector_lines(uncacheable).values())


def test_trafficserver_prefetches_numbered_urls(kinds_lab):
    lab, kinds = kinds_lab
    require(KINDS["trafficserver"].missing(), "Traffic Server")
    # 9 -> 10 and 11: the default pattern increments the whole number, not its last digit.
    first, prefetched = "/seq/t7/9.jpg", "/seq/t7/10.jpg"
    lab.get(first)
    lab.records(first, 1)
    end = time.monotonic() + 20  # the prefetches run in the background
    while lab.collector_lines(prefetched)["p-ats-prefetch"] < 1 and time.monotonic() < end:
        time.sleep(0.2)
    assert lab.collector_lines(prefetched)["p-ats-prefetch"] == 1
    lab.get(prefetched)
    lab.records(prefetched, 1)
    counts = lab.collector_lines(prefetched)
    assert counts["p-ats-prefetch"] == 1, counts  # served from the prefetched copy
    assert counts["p-trafficserver"] == 1, counts  # the passive one had to fetch it
    assert lab.collector_lines("/seq/t7/11.jpg")["p-ats-prefetch"] >= 1  # --fetch-count 2


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
