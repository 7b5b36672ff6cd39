"""`browse --har`: records what one Chromium tab loads as a HAR 1.2 file. It listens to the tab's DevTools
Network and Page events (har_events.py turns them into entries) and asks Chromium for each request body it did not
send along and each response body as soon as the response is complete: Chromium holds bodies in a bounded buffer
and drops a page's when the next one loads, so the driver settles each page before it loads the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path

from spe_tools.workload.har.archive import write_har
from spe_tools.workload.har.events import (
    NetworkLog,
    RequestEvents,
    decode_body,
    har_entries,
    har_pages,
    needs_post_data,
    recording_counts,
)

# A DevTools command in the tab's session: (method, params) -> result; it raises when Chromium refuses.
Call = Callable[[str, dict], Awaitable[dict]]
# How long a page's requests still running after its load event (the favicon Chromium asks for then, a late fetch)
# may take to complete before the next page is loaded, or the file written: a navigation cancels them.
SETTLE_S = 3.0


class HarRecorder:
    """The tab's network traffic, kept as DevTools reports it, with the bodies Chromium gave."""

    def __init__(self, call: Call):
        self.call = call
        self.log = NetworkLog()
        self.tasks: set[asyncio.Task] = set()

    def begin_page(self, url: str) -> None:
        """The driver loads `url` now: what is sent from here on belongs to a page of its own."""
        self.log.begin_page(url, time.time())

    def on_event(self, method: str, params: dict) -> None:
        request = self.log.add(method, params)
        if request is None:
            return
        if method == "Network.requestWillBeSent" and needs_post_data(params):
            self._spawn(self._post_data(request, params["requestId"], len(request.sent) - 1))
        elif method == "Network.loadingFinished":
            self._spawn(self._response_body(request, params["requestId"]))

    def _spawn(self, coroutine: Coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _post_data(self, request: RequestEvents, request_id: str, hop: int) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError):  # gone already: the entry has no body
            reply = await self.call("Network.getRequestPostData", {"requestId": request_id})
            request.post_data[hop] = decode_body(reply.get("postData", ""), bool(reply.get("base64Encoded")))

    async def _response_body(self, request: RequestEvents, request_id: str) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError):  # Chromium no longer holds it: counted as missing
            reply = await self.call("Network.getResponseBody", {"requestId": request_id})
            request.body = decode_body(reply.get("body", ""), bool(reply.get("base64Encoded")))

    async def settle(self, deadline_s: float = SETTLE_S) -> None:
        """Let the page's requests still running complete (bounded), then wait for the bodies asked for."""
        end = time.monotonic() + deadline_s
        while self.log.running() and time.monotonic() < end:
            await asyncio.sleep(0.05)
        while self.tasks:
            await asyncio.gather(*self.tasks)

    def write(self, path: Path | str) -> dict[str, int]:
        """The HAR file, and what it holds and left out."""
        write_har(path, har_entries(self.log), creator="SPE browse", pages=har_pages(self.log))
        return recording_counts(self.log)
