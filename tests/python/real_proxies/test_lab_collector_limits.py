"""[[proxy]] collector_limit_kbps: the Collector paces what it sends on that proxy's port (a Squid delay pool),
so a proxy that floods it, a prefetcher, is bounded; the direct port (the client's own fetch) and the other
proxies' ports are not slowed down. The rules, the lab's check and the noise pairs, on their own:
unit/test_collector_config.py, test_lab_model.py, test_lab_trust.py."""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from labsupport import ALL_CACHEABLE, lab_session
from parts import require

from spe_tools import collector

SIZE = 512 * 1024
LIMIT_KIB = 64  # 512 KiB at 64 KiB/s, with a one-second bucket: 7 s at least


def lab_text(workdir: Path) -> str:
    model = workdir / "model.json"
    model.write_text(json.dumps({**ALL_CACHEABLE, "chunked_share": 0.0}))
    return (f'name = "limits"\n[origin]\nmodel = "{model}"\nthink_mean_ms = 0\n[multiplier]\ntimeout_s = 30\n'
            f'[[proxy]]\nname = "paced"\nkind = "dummy"\ncollector_limit_kbps = {LIMIT_KIB}\n'
            '[[proxy]]\nname = "free"\nkind = "dummy"\n')


def fetch_through(port: int, url: str) -> tuple[int, float]:
    """GET url through the proxy at 127.0.0.1:port: (body bytes, seconds)."""
    begin = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", url)
    body = conn.getresponse().read()
    conn.close()
    return len(body), time.monotonic() - begin


def test_the_paced_ports_misses_are_slow_and_the_others_are_not():
    """Delay pools pace what the Collector reads from the origin for a port's requests (its misses: what a
    prefetcher pulls in); a Collector hit is paced by the replayed timing of its miss instead."""
    require(collector.missing("spe"), "the patched Collector")
    with lab_session(lab_text) as lab:
        assert "delay_pools 1" in (lab.rundir / "collector/squid.conf").read_text()
        proxies = lab.run.ports.proxies
        with ThreadPoolExecutor(1) as pool:
            paced = pool.submit(fetch_through, proxies["paced"], f"{lab.origin}/obj/paced?size={SIZE}")
            time.sleep(0.5)
            lab.get(f"/obj/meanwhile?size={SIZE}")  # the client's own fetch while the paced port pulls
            (record,) = lab.records("/obj/meanwhile", 1)
            paced_bytes, paced_s = paced.result()
        free_bytes, free_s = fetch_through(proxies["free"], f"{lab.origin}/obj/free?size={SIZE}")
    assert paced_bytes == free_bytes == SIZE
    assert paced_s >= 0.6 * (SIZE / 1024 - LIMIT_KIB) / LIMIT_KIB, paced_s  # paced, with room for slack
    assert free_s < paced_s / 3, (free_s, paced_s)
    assert record["collector"]["total_us"] / 1e6 < paced_s / 3, record["collector"]  # the direct path is not starved
