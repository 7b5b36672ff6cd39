"""The real-browser driver: headless Chromium loads synthetic pages with their images through a real
Squid, and Squid's access.log shows every object; Chromium's own traffic never reaches the proxy."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid
from spe_tools.workload import content_model as cm
from spe_tools.workload.browse import CHROMIUM, chromium_argv, next_page

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}


def test_command_line_keeps_chromium_quiet_and_on_the_proxy(tmp_path):
    argv = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path)
    assert "--proxy-server=http://127.0.0.1:3128" in argv and f"--user-data-dir={tmp_path}" in argv
    assert "--proxy-bypass-list=<-loopback>;*.google.com;*.googleapis.com" in ";".join(argv)
    for flag in ("--disable-background-networking", "--disable-component-update", "--disable-sync", "--headless"):
        assert flag in argv
    assert any(a.startswith("--disable-features=NetworkTimeServiceQuerying") for a in argv)
    every = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path, all_through_proxy=True)
    assert "--proxy-bypass-list=<-loopback>" in every


def test_next_page_follows_a_page_link():
    links = ["http://127.0.0.1:9/page/3.html", "http://127.0.0.1:9/seq/3/0.jpg", "http://other/page/1.html"]
    import random
    assert next_page(links, ["http://127.0.0.1:9"], random.Random(1)) == "http://127.0.0.1:9/page/3.html"
    assert next_page(links[1:], ["http://127.0.0.1:9"], random.Random(1)) is None


def test_a_page_loaded_over_https_keeps_its_scheme_and_trusts_spes_ca_by_key(tmp_path):
    import random
    links = ["https://localhost:8443/page/7.html", "http://other/page/1.html"]
    bases = ["http://localhost:80", "https://localhost:8443"]
    assert next_page(links, bases, random.Random(1)) == "https://localhost:8443/page/7.html"
    argv = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path, trust_spki="abc=")
    assert "--ignore-certificate-errors-spki-list=abc=" in argv
    assert not [a for a in chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path) if "spki" in a]


@pytest.fixture(scope="module")
def squid_lab():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (./spe setup installs Debian's chromium)")
    workdir = Path(tempfile.mkdtemp(prefix="spe-wl-browse-"))
    workdir.chmod(0o755)  # Squid runs as user proxy
    try:
        with ProcessGroup(workdir) as group:
            port = free_port()
            group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen",
                                   f"127.0.0.1:{port}", "--think-mean-ms", "20", "--think-sd-ms", "5"],
                        port=port, env=ENV)
            # The origin as Squid's parent: nothing Squid gets can make it go anywhere else.
            squid = start_squid(group, "squid", free_port(), parent_port=port)
            yield workdir, port, squid
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def browse(workdir: Path, squid_port: int, *args: str) -> dict:
    out = workdir / "browse.json"
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--proxy", f"127.0.0.1:{squid_port}",
                          "--json", str(out), *args], env=ENV, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(out.read_text())


def access_log_paths(workdir: Path, expected: list[str], deadline_s: float = 15.0) -> list[str]:
    """URLs in Squid's access.log, waiting (bounded) until `expected` are there: Squid buffers its log."""
    end = time.monotonic() + deadline_s
    while True:
        lines = (workdir / "squid/access.log").read_text().splitlines()
        urls = [line.split()[6] for line in lines if len(line.split()) > 6]
        if set(expected) <= set(urls) or time.monotonic() > end:
            return urls
        time.sleep(0.2)


def test_page_and_every_image_go_through_squid(squid_lab):
    workdir, origin_port, squid = squid_lab
    page = f"http://127.0.0.1:{origin_port}/page/7.html"
    s = browse(workdir, squid.port, page, "--think-s", "0")
    assert s["loaded"] == 1 and s["errors"] == 0
    result = s["per_page"][0]
    assert result["load_ms"] > 0 and result["failed"] == 0
    images = [f"http://127.0.0.1:{origin_port}{src}" for src in cm.page_images(cm.Model(), "7")]
    assert set(images) <= set(result["objects"])
    logged = access_log_paths(workdir, [page, *images])
    assert page in logged
    assert all(image in logged for image in images), (images, logged)
    # Chromium's own requests (update and accounts hosts) stayed inside Chromium: no foreign host
    # reached Squid, and Squid asked no DNS server anything.
    assert all(url.startswith("http://127.0.0.1:") for url in logged if not url.startswith("error:")), logged
    with urllib.request.urlopen(f"http://127.0.0.1:{squid.port}/squid-internal-mgr/idns", timeout=10) as reply:
        idns = reply.read().decode()
    queries = [line.split() for line in idns.splitlines() if line.strip().endswith("recurse")]
    assert all(q[1] == "0" for q in queries), idns


def test_browsing_pages_follows_links(squid_lab):
    workdir, origin_port, squid = squid_lab
    s = browse(workdir, squid.port, "--origin", f"127.0.0.1:{origin_port}", "--pages", "3", "--think-s", "0.1",
               "--seed", "2")
    assert s["pages"] == s["loaded"] == 3
    urls = [p["url"] for p in s["per_page"]]
    assert all("/page/" in u for u in urls)
    objects = [obj for p in s["per_page"] for obj in p["objects"] if "/obj/" in obj]
    assert len(objects) >= 3 * cm.Model().page_images_min
    logged = access_log_paths(workdir, objects)
    for p in s["per_page"]:
        assert all(obj in logged for obj in p["objects"] if "/obj/" in obj)
    assert s["load_ms"]["count"] == 3
