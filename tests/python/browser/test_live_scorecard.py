"""The live scorecard ([live] enabled): during `./spe lab run`, headless Chromium opens the page lab.json names,
sees every proxy under test, sees the page change by itself (the report's request count grows without a reload),
sees a proxy killed meanwhile (by its PID) shown dead while the page goes on with the ranking so far and the
report's styles (the page first loaded may be the waiting one), and once the lab stops, the page saying
when the run ended and asking no more. Without the lab, a page whose server is killed says so and stops asking.
SPE_LIVE_SCREENSHOT=PATH keeps a screenshot of the page showing the dead proxy (docs/images/live-scorecard.png is
one, its colours reduced to keep it small)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import scratch_dir
from parts import missing_program, require

from analysis import live
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.start.running_lab import down
from spe_tools.process import ProcessGroup, free_port
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.status_json import UP, ComponentStatus, LabStatus
from spe_tools.workload.browse import CHROMIUM, QUIET_FLAGS, Browser

LAB = """
name = "live"
[collector]
kind = "squid"
[origin]
think_mean_ms = 5
[workload]
kind = "load"
duration_s = 20
rate = 20
clients = 2
[live]
enabled = true
every = "1s"
[[proxy]]
name = "alpha"
kind = "dummy"
[[proxy]]
name = "beta"
kind = "dummy"
"""
REQUESTS = re.compile(r"-live: (\d+) client requests;")  # the report's, as rebuilt from the log (not the banner's)


@pytest.fixture
def runs():
    with scratch_dir("spe-lab-live-") as path:
        yield path


def live_url(runs: Path, lab: subprocess.Popen, deadline_s: float = 90) -> tuple[Path, str]:
    """The run directory and the page's URL, once lab.json names it."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and lab.poll() is None:
        for rundir in runs.glob("*-live"):
            topology = LabJson.read(rundir) if (rundir / "lab.json").exists() else None
            if topology and topology.live:
                return rundir, topology.live.url
        time.sleep(0.2)
    raise AssertionError(f"no live page in lab.json (lab exit {lab.poll()}): {lab.stdout.read() if lab.stdout else ''}")


def chromium(workdir: Path) -> Browser:
    profile = workdir / "chromium-profile"
    argv = [CHROMIUM, *QUIET_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1100,760",
            *(["--no-sandbox"] if os.geteuid() == 0 else [])]
    return Browser(argv, profile, workdir)


async def watch_page(url: str, workdir: Path, rundir: Path, lab: subprocess.Popen) -> tuple[str, int, int, bytes, str]:
    """Load the page once, then read it as it updates itself: two request counts seconds apart, then, once proxy
    beta is killed, its text showing it dead and the ranking (and a screenshot of that), then, once the lab has
    stopped, its banner saying the run ended."""
    browser = chromium(workdir)
    try:
        await browser.connect()
        assert not (await browser.load(url, timeout=30)).error
        first = await _requests_shown(browser, 1)
        second = await _requests_shown(browser, first + 1)  # no reload: the page's own script brings it
        pids = json.loads((rundir / "pids.json").read_text())["processes"]
        os.kill(next(p["pid"] for p in pids if p["name"] == "beta"), signal.SIGKILL)
        await _text_showing(browser, "beta dead (killed by SIGKILL)")
        text = await _text_showing(browser, "Which proxy is best?")
        assert "beta dead (killed by SIGKILL)" in text
        assert await browser.evaluate('getComputedStyle(document.querySelector("table")).borderCollapse') == "collapse"
        shot = await browser.cdp.call("Page.captureScreenshot", {"format": "png"}, session=browser.session)
        ended = await _text_showing(browser, "Run ended at", deadline_s=120)  # the lab stops at the workload's end
        while lab.poll() is None:
            await asyncio.sleep(0.5)
        await asyncio.sleep(3 * live.REFRESH_MS / 1000)  # were the page still asking, it would find no server
        assert (await browser.evaluate("document.body.innerText")) == ended, "the ended page changed"
        banner = await browser.evaluate("document.getElementById('spe-live').innerText")
        return text, first, second, base64.b64decode(shot["data"]), banner
    finally:
        await browser.close()


async def _requests_shown(browser: Browser, at_least: int, deadline_s: float = 40) -> int:
    end = time.monotonic() + deadline_s
    while True:
        found = REQUESTS.search(await browser.evaluate("document.body.innerText") or "")
        if found and int(found.group(1)) >= at_least:
            return int(found.group(1))
        if time.monotonic() > end:
            raise AssertionError(f"the page never showed {at_least} client requests")
        await asyncio.sleep(0.5)


async def _text_showing(browser: Browser, wanted: str, deadline_s: float = 30) -> str:
    """The page's text once it shows `wanted`."""
    end = time.monotonic() + deadline_s
    while wanted not in (text := await browser.evaluate("document.body.innerText") or ""):
        if time.monotonic() > end:
            raise AssertionError(f"the page never showed {wanted!r}: {text[:500]}")
        await asyncio.sleep(0.5)
    return text


def test_the_live_page_shows_every_proxy_updates_itself_and_shows_a_dead_one(runs):
    multiplier_binary()
    require(KINDS["squid"].missing(), "the proxy kind squid")
    require(missing_program(CHROMIUM), "Chromium")
    (runs / "live.toml").write_text(LAB)
    lab = subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "run", str(runs / "live.toml"), "--runs-dir",
                            str(runs), "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    rundir = None
    try:
        rundir, url = live_url(runs, lab)
        port = LabJson.read(rundir).live.port
        assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/[\w-]{{20,}}/", url)  # a secret path
        with pytest.raises(urllib.error.HTTPError, match="404"):  # the port without it shows nothing
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        text, first, second, png, ended = asyncio.run(watch_page(url, runs, rundir, lab))
        assert "alpha" in text and "beta" in text and second > first
        assert re.search(r"multiplier up", text) and "page rebuilt" in text
        if os.environ.get("SPE_LIVE_SCREENSHOT"):
            small_png(png, Path(os.environ["SPE_LIVE_SCREENSHOT"]))
        assert re.search(r"Run ended at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", ended)
        assert "multiplier up until the end" in ended and "beta dead (killed by SIGKILL)" in ended
        assert not re.search(r"\bup\b(?! until the end)", ended)  # no process shown up now
        assert "stopped answering" not in ended  # it stopped asking at the run's end: it never found the server gone
        out, _ = lab.communicate(timeout=120)
        assert lab.returncode == 0, out
        assert f"live scorecard on {url}" in out and "proxy 'beta' stopped unexpectedly" in out
    finally:
        if lab.poll() is None:
            lab.send_signal(signal.SIGTERM)
            lab.wait(timeout=60)
        if rundir is not None:
            down(rundir)


def small_png(png: bytes, path: Path) -> None:
    """The screenshot in 64 colours: a page of text and flat colours reads the same at a fraction of the size."""
    from PIL import Image

    Image.open(io.BytesIO(png)).quantize(colors=64).save(path, optimize=True)


def test_a_page_whose_server_is_gone_says_so_and_stops_asking(tmp_path):
    """The live page's server killed (SIGKILL: no time to say the run ended): the open page says when it stopped
    answering, shows no process as up any more, and asks no more (its text stays as it is)."""
    require(missing_program(CHROMIUM), "Chromium")
    # The lab's status as if rewritten just now for the next ten minutes (no lab runs here).
    LabStatus(5, 0, [ComponentStatus("alpha", UP)], updated=time.time() + 600).write(tmp_path)
    port = free_port()
    with ProcessGroup(tmp_path) as group:
        server = group.start("live", [sys.executable, "-m", "analysis.live", str(tmp_path), "--listen",
                                      f"127.0.0.1:{port}"], port=port, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             deadline_s=30)

        async def watch() -> tuple[str, str]:
            browser = chromium(tmp_path)
            try:
                await browser.connect()
                assert not (await browser.load(f"http://127.0.0.1:{port}/", timeout=30)).error
                before = await _text_showing(browser, "alpha up")
                server.stop(sig=signal.SIGKILL)
                after = await _text_showing(browser, "stopped answering")
                await asyncio.sleep(3 * live.REFRESH_MS / 1000)
                assert (await browser.evaluate("document.body.innerText")) == after, "it went on asking"
                return before, after
            finally:
                await browser.close()

        before, after = asyncio.run(watch())
    assert "Waiting for the first records" in before
    assert "alpha up when last seen" in after and "This page no longer updates" in after
