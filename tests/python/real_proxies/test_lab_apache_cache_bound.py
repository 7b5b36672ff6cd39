"""Apache's disk cache kept under cache_mb: mod_cache_disk has no limit of its own, so the lab runs Apache's
htcacheclean beside it (a companion process, every 5 s), which shrinks the cache back under the bound."""

from __future__ import annotations

import json
import time
from pathlib import Path

from labsupport import ALL_CACHEABLE, lab_session
from parts import require

from spe_tools.lab.definition.kinds import KINDS

OBJECTS, SIZE = 24, 200 * 1024  # 4.7 MiB of cacheable objects into a 1 MiB cache


def lab_text(workdir: Path) -> str:
    model = workdir / "model.json"
    model.write_text(json.dumps({**ALL_CACHEABLE, "chunked_share": 0.0}))
    return (f'name = "apache-bound"\n[collector]\nkind = "squid"\n[origin]\nmodel = "{model}"\nthink_mean_ms = 0\n'
            '[[proxy]]\nname = "apache"\nkind = "apache"\ncache_mb = 1\n')


def disk_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def test_htcacheclean_keeps_apaches_disk_cache_under_cache_mb():
    require(KINDS["apache"].missing(), "Apache")
    with lab_session(lab_text) as lab:
        assert "htcacheclean: every 5 s" in (lab.rundir / "apache.htcacheclean.out").read_text()
        assert "apache.htcacheclean" in [p["name"] for p in json.loads((lab.rundir / "pids.json").read_text())
                                         ["processes"]]
        for i in range(OBJECTS):
            lab.get(f"/obj/bound-{i}?size={SIZE}")
        cache = lab.rundir / "proxies/apache/cache"
        grown = disk_bytes(cache)
        assert grown > 3 * 1024 * 1024  # Apache stored them: the cache went past its bound
        end = time.monotonic() + 20
        while disk_bytes(cache) > 1024 * 1024 and time.monotonic() < end:
            time.sleep(0.5)
        assert disk_bytes(cache) <= 1024 * 1024, (grown, disk_bytes(cache))
