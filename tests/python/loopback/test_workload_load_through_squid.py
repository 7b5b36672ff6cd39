"""The load client in a short run through a plain Debian Squid: the achieved rate and the offered hit ratio,
and Squid's hit ratio matching it (the schedule, popularity and mix alone: unit/test_workload_load.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest
from conftest import ROOT
from labsupport import origin_behind_squid

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


@pytest.fixture
def squid_lab():
    with origin_behind_squid("spe-wl-load-", think_mean_ms=5, think_sd_ms=2) as lab:
        yield lab


def test_load_through_squid_achieves_rate_and_hit_ratio(squid_lab):
    workdir, origin_port, squid = squid_lab
    out = workdir / "load.json"
    # The seed fixes the random draws; seed 3 draws 400 arrivals in 8 s at 50/s and 56 % repeats, close
    # to the means, so what is checked is the client (the rate it sends at, Squid seeing the offered hits),
    # not the luck of a Poisson draw (its own deviation is 5 % here; the pure tests check the shares).
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.load", "--via", f"127.0.0.1:{squid.port}",
                          "--origin", f"127.0.0.1:{origin_port}", "--rate", "50", "--duration", "8s",
                          "--seed", "3", "--report-every", "2", "--json", str(out)],
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "load: t=2s" in run.stderr and "offered hit ratio" in run.stdout
    s = json.loads(out.read_text())
    assert s["errors"] == 0 and s["lost"] == 0 and s["completed"] == s["sent"]
    assert abs(s["rate_achieved"] - 50) / 50 < 0.03
    assert abs(s["offered_hit_ratio"] - 0.55) < 0.03
    assert s["stale_uncacheable"] == 0 and s["size_mismatches"] == 0
    # How late the client sends is measured in bench/ (workload_throughput), not asserted here.
    with urllib.request.urlopen(f"http://127.0.0.1:{origin_port}/_stats", timeout=10) as reply:
        origin_requests = json.loads(reply.read())["total"]
    squid_hit_ratio = 1 - origin_requests / s["sent"]  # every request the origin did not see was a hit
    assert abs(squid_hit_ratio - s["offered_hit_ratio"]) < 0.03, (squid_hit_ratio, s)
    log_lines = [line for line in (workdir / "squid/access.log").read_text().splitlines()
                 if "/obj/" in line or "/page/" in line or "/seq/" in line or "/post/" in line]  # not the probe
    assert len(log_lines) == s["sent"]
    assert s["proxy_reported_hits"] > 0.4 * s["sent"]
