"""Headless Chromium through the HTTPS lab with interception: it loads an https page and its objects trusting
SPE's CA, and every request is multiplied to every proxy kind (the lab: interceptionlab.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from interceptionlab import KINDS_UNDER_TEST, complete, https_lab
from parts import missing_program, require

from spe_tools.workload.browse import CHROMIUM


@pytest.fixture(scope="module")
def lab():
    with https_lab() as lab:
        yield lab


def test_headless_chromium_loads_an_https_page_and_its_objects_every_request_multiplied(lab):
    require(missing_program(CHROMIUM), "Chromium")
    page = f"https://localhost:{lab.tls_port}/page/42.html"
    summary = lab.workdir / "browse.json"
    result = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--via",
                             f"127.0.0.1:{lab.multiplier_port}", "--ca-cert", str(lab.spe_ca), "--think-s", "0",
                             "--json", str(summary), page], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = json.loads(summary.read_text())
    assert loaded["loaded"] == 1 and loaded["failed_requests"] == 0, loaded
    urls = set(loaded["per_page"][0]["objects"])
    assert page in urls and len(urls) > 1  # the page and its images
    for url in urls:
        assert url.startswith(f"https://localhost:{lab.tls_port}/"), url
        url_part = url.split("://", 1)[1]
        records = [r for r in complete(lab, url_part, 1) if r["method"] == "GET" and r["url"] == url]
        assert records, f"no record for {url}"
        assert records[0].get("intercepted") is True
        assert {p["name"]: p["result"] for p in records[0]["proxies"]} == dict.fromkeys(KINDS_UNDER_TEST, "OK"), \
            (url, records[0])
