"""Browsing sessions: users who read a page, follow one of its links after a think time, and now and then
start afresh. This is where a link prefetcher has time to act (docs/workloads.md, "Sessions").

The session model, shared by the load client's users and the browse workload:
- A session starts at one of the origin's `pages` shared pages (/page/<k>.html), k drawn from the
  popularity (uniform, or zipf:A where page k has weight 1/(k+1)^A), so some pages are everyone's start.
- A page view fetches the page, then its embedded objects, PARALLEL at a time (as a browser does).
- Then the user thinks: an exponential time with mean `think_s`.
- Then the session goes on with probability 1 - 1/`pages_mean` (session length is geometric with mean
  `pages_mean` pages) to one of the page's links to other pages, chosen at random, or ends, and a new one
  starts.
The links and embedded objects are the content model's (content_model.page_links/page_images): the same
the pages' HTML holds, so a prefetcher that parses the HTML sees what the user may ask next.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from spe_tools.workload.client.popularity import zipf_index
from spe_tools.workload.content import model as cm

PARALLEL = 6  # embedded objects fetched at once, as a browser's connections per host


@dataclass(frozen=True)
class SessionModel:
    think_s: float = 2.0  # mean think time between page views (exponential)
    pages_mean: float = 5.0  # mean pages per session (geometric)
    popularity: str = "uniform"  # of start pages: uniform | zipf
    alpha: float = 0.0

    def start_page(self, model: cm.Model, rng: random.Random) -> str:
        if self.popularity == "zipf":
            return f"/page/{zipf_index(model.pages, self.alpha, rng.random())}.html"
        return f"/page/{rng.randrange(model.pages)}.html"

    def go_on(self, rng: random.Random) -> bool:
        return rng.random() >= 1 / max(1.0, self.pages_mean)

    def think(self, rng: random.Random) -> float:
        return rng.expovariate(1 / self.think_s) if self.think_s > 0 else 0.0


def page_oid(path: str) -> str | None:
    kind, oid = cm.parse_path(path)
    return oid if kind == "page" else None


# fetch(path, category, https) -> True if the reply was a 200 (a page's links are followed only then)
Fetch = Callable[[str, str, bool], Awaitable[bool]]


async def user(model: cm.Model, sessions: SessionModel, rng: random.Random, fetch: Fetch,
               https_of: Callable[[str], bool], until: Callable[[], bool], counts: dict) -> None:
    """One user, session after session, until `until()`; `https_of(path)` picks a session's scheme by its
    start page (links keep it, as relative links do in a browser); `counts` gets sessions and page views."""
    while not until():
        path = sessions.start_page(model, rng)
        https = https_of(path)
        counts["sessions"] = counts.get("sessions", 0) + 1
        while not until():
            counts["page_views"] = counts.get("page_views", 0) + 1
            ok = await view(model, path, https, fetch)
            await asyncio.sleep(sessions.think(rng))
            oid = page_oid(path)
            if not ok or oid is None or not sessions.go_on(rng):
                break
            path = rng.choice([link for link in cm.page_links(model, oid) if page_oid(link) is not None])


async def view(model: cm.Model, path: str, https: bool, fetch: Fetch) -> bool:
    """The page, then its embedded objects, PARALLEL at a time."""
    if not await fetch(path, "session-page", https):
        return False
    oid = page_oid(path)
    images = cm.page_images(model, oid) if oid is not None else []
    gate = asyncio.Semaphore(PARALLEL)

    async def one(image: str) -> None:
        async with gate:
            await fetch(image, "session-object", https)

    await asyncio.gather(*(one(image) for image in images))
    return True
