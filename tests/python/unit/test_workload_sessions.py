"""Browsing sessions (spe_tools/workload/client/sessions.py): a page, then its embedded objects, then after a think
time one of its links, sessions of the configured mean length (the load client's users against a real origin:
loopback/test_workload_sessions_through_origin.py)."""

from __future__ import annotations

import asyncio
import random

import pytest

from spe_tools.workload.client.sessions import SessionModel, user
from spe_tools.workload.content import model as cm


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
