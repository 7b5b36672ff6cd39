"""The real-browser driver: headless Chromium loads synthetic pages with their images through a real
Squid, and Squid's access.log shows every object; Chromium's own traffic never reaches the proxy, and
Chromium listens on no port (DevTools is a pipe only the driver holds)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT
from labsupport import origin_behind_squid
from parts import missing_program, require

from spe_tools.workload.browse import CHROMIUM, Browser, chromium_argv
from spe_tools.workload.content import model as cm

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}


@pytest.fixture(scope="module")
def squid_lab():
    require(missing_program(CHROMIUM), "Chromium")
    with origin_behind_squid("spe-wl-browse-", think_mean_ms=20, think_sd_ms=5, as_parent=True) as lab:
        yield lab


def browse(workdir: Path, squid_port: int, *args: str) -> dict:
    out = workdir / "browse.json"
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--via", f"127.0.0.1:{squid_port}",
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


def listening_tcp_sockets() -> dict[int, str]:
    """Every TCP socket listening on this machine (IPv4 and IPv6): its inode -> its local address."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    sockets[int(fields[9])] = fields[1]
    return sockets


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets a process has open (its descriptors that name socket:[N])."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def test_chromium_listens_on_no_port_devtools_is_a_pipe(squid_lab, tmp_path):
    """No local user can drive the browser: while it loads a page, none of Chromium's processes (the
    browser, its renderers and helpers) has a listening TCP socket, and it wrote no DevToolsActivePort."""
    workdir, origin_port, squid = squid_lab
    profile = tmp_path / "profile"
    profile.mkdir()
    argv = chromium_argv(CHROMIUM, f"127.0.0.1:{squid.port}", profile)

    async def drive() -> tuple[object, dict[int, dict[int, str]]]:
        browser = Browser(argv, profile, tmp_path)
        try:
            await browser.connect()
            result = await browser.load(f"http://127.0.0.1:{origin_port}/page/4.html", timeout=60)
            listening = listening_tcp_sockets()
            found = {}
            for pid in browser.process.members():
                inodes = socket_inodes(pid)
                found[pid] = {inode: listening[inode] for inode in inodes & listening.keys()}
            return result, found
        finally:
            await browser.close()

    result, found = asyncio.run(drive())
    assert not result.error and result.requests > 1, result  # DevTools drove it: the page and its images
    assert len(found) >= 2, found  # the browser and at least one helper were looked at
    assert not any(found.values()), f"Chromium listens on TCP: {found}"
    assert not (profile / "DevToolsActivePort").exists()
