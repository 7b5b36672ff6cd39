"""`./spe lab run` with headless Chromium as the workload: two pages and their images through the Multiplier,
every proxy answering each (the lab command itself: loopback/test_lab_cli.py)."""

from __future__ import annotations

import json

import pytest
from conftest import multiplier_binary
from labsupport import lab_cli, scratch_dir
from parts import missing_program, require

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.workload.browse import CHROMIUM

LAB = """
name = "browse"
[collector]
kind = "squid"
[origin]
think_mean_ms = 20
[workload]
kind = "browse"
duration_s = 30
pages = 2
think_s = 0.5
[[proxy]]
name = "sq"
kind = "squid"
cache_mb = 16
[[proxy]]
name = "dummy"
kind = "dummy"
"""


@pytest.fixture
def runs():
    with scratch_dir("spe-lab-browse-") as path:
        yield path


def test_run_with_headless_chromium_as_the_workload(runs):
    multiplier_binary()
    require(KINDS["squid"].missing(), "the proxy kind squid")
    require(missing_program(CHROMIUM), "Chromium")
    lab = runs / "lab.toml"
    lab.write_text(LAB)
    result = lab_cli("run", str(lab), "--runs-dir", str(runs), "--no-report", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    (rundir,) = runs.glob("*-browse")
    summary = json.loads((rundir / "workload.json").read_text())
    assert summary["loaded"] == 2 and summary["failed_requests"] == 0
    records = [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()]
    pages = [r for r in records if "/page/" in r["url"]]
    assert len(pages) == 2 and any("/obj/p" in r["url"] for r in records)  # the pages and their images
    assert all(p["result"] == "OK" for r in pages for p in r["proxies"])
