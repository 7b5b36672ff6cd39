"""Browsing sessions (spe_tools/workload/sessions.py) and the load client's users: a page, then its embedded
objects, then after a think time one of its links, sessions of the configured mean length."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from spe_tools.process import ProcessGroup, free_port
from spe_tools.workload import content_model as cm
from spe_tools.workload.sessions import SessionModel, user

ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}


def run_user(sessions: SessionModel, fetches: int, ok=lambda path: True) -> tuple[list[str], dict]:
    """One user against a fake fetch, stopped after `fetches` requests."""
    asked: list[str] = []
    counts: dict = {}

    async def fetch(path: str, category: str, https: bool) -> bool:
        asked.append(path)
        return ok(path)

    asyncio.run(user(cm.Model(), sessions, random.Random(7), fetch, lambda path: False,
                     lambda: len(asked) >= fetches, counts))
    return asked, counts


def test_a_page_view_is_the_page_then_its_images_and_the_next_page_is_one_of_its_links():
    model = cm.Model()
    asked, counts = run_user(SessionModel(think_s=0, pages_mean=1e9), 60)
    pages = [i for i, path in enumerate(asked) if path.startswith("/page/")]
    assert len(pages) >= 3
    for here, there in zip(pages, pages[1:], strict=False):
        oid = asked[here][len("/page/"):-len(".html")]
        assert asked[here + 1:there] == cm.page_images(model, oid)  # its images, all of them, before moving on
        assert asked[there] in cm.page_links(model, oid)  # a link of the page, not a random page
    assert counts["sessions"] == 1


def test_sessions_have_the_mean_length_and_start_at_popular_pages():
    sessions = SessionModel(think_s=0, pages_mean=4, popularity="zipf", alpha=1.0)
    asked, counts = run_user(sessions, 20000, ok=lambda path: path.startswith("/page/"))  # images cost nothing
    assert counts["sessions"] > 300
    assert counts["page_views"] / counts["sessions"] == pytest.approx(4, rel=0.1)
    starts = [sessions.start_page(cm.Model(), random.Random(i)) for i in range(2000)]
    assert starts.count("/page/0.html") > 5 * starts.count("/page/50.html")  # zipf: page 0 is everyone's


def test_a_failed_page_ends_its_session():
    asked, counts = run_user(SessionModel(think_s=0, pages_mean=1e9), 30, ok=lambda path: False)
    assert all(path.startswith("/page/") for path in asked)  # no images, no links followed
    assert counts["sessions"] == len(asked)


def test_the_load_clients_users_browse_the_origin_with_think_times():
    workdir = Path(tempfile.mkdtemp(prefix="spe-sessions-"))
    with ProcessGroup(workdir) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "1", "--think-sd-ms", "0"], port=port, env=ENV)
        out = workdir / "load.json"
        run = subprocess.run([sys.executable, "-m", "spe_tools.workload.load", "--origin", f"127.0.0.1:{port}",
                              "--rate", "0", "--users", "3", "--think-s", "500ms", "--session-pages", "3",
                              "--duration", "6s", "--seed", "2", "--json", str(out)],
                             env=ENV, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        s = json.loads(out.read_text())
    assert s["errors"] == 0 and s["sessions"] >= 3 and s["page_views"] >= 10, s
    assert set(s["categories"]) == {"session-page", "session-object"}
    # about 3 users x 6 s / (0.5 s think + fetch time) page views; each page has 2 to 8 images
    assert 2 * s["categories"]["session-page"] <= s["categories"]["session-object"]
    assert "load: users:" in run.stdout


def test_rate_zero_needs_users():
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.load", "--origin", "127.0.0.1:9", "--rate", "0",
                          "--duration", "1s"], env=ENV, capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "--rate must be positive (or 0 with --users)" in run.stderr
