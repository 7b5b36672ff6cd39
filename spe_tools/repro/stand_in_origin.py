"""The stand-in origin of a repro case: answers the case's path as the recorded origin did.

Run: python -m spe_tools.repro.stand_in_origin --case DIR --listen 127.0.0.1:PORT
Prints `origin listening on HOST:PORT` once ready; SIGTERM or SIGINT stops it.

The case's clock starts when the origin starts, or when `GET /_spe_repro/start[?at=SECONDS]` sets it
(the replay does, just before its first request; `at` sets the case time it reads now). A request is
answered with the reply in force at the case time it arrives (docs/repro.md):

- GET and HEAD: the recorded reply of the latest GET/HEAD step at or before that time (the first one
  before the first step): its status, its judged fields as recorded (Cache-Control, ETag, Vary, Age),
  Date now, Expires and Last-Modified moved by the same amount as that reply's Date (from its recorded
  Date to the case time of its fetch in this replay; a valid IMF-fixdate only), the fields the record names
  without values with stand-in values, its interim responses first, and a deterministic body of the
  recorded length; 304 to a conditional request whose validators match (If-None-Match first, RFC 9110 13.2.2),
  with the Content-Length the recorded origin's 304 carried, if it carried one.
- POST, PUT, DELETE, PATCH: the recorded status of the latest such step, Cache-Control: no-store.
- Any other path: 404, no-store.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from urllib.parse import parse_qs, urlsplit

from spe_tools.repro.case import (
    MOVED,
    UNSAFE,
    Case,
    CaseError,
    OriginReply,
    Step,
    date_shift,
    load_case,
    moved_date,
    off_the_clock,
)
from spe_tools.repro.stand_ins import UNSAFE_REPLY_FIELDS, recorded_fields
from spe_tools.workload.content.conditional import not_modified
from spe_tools.workload.http11 import Message, parse_date
from spe_tools.workload.origin import Delivery, Reply, parse_listen, serve

START_PATH = "/_spe_repro/start"
STARTED_FIELD = "X-SPE-Repro-Started"  # the reply to START_PATH: the clock's start (unix s), to move request dates
INTERIM_FIELDS = {103: (("Link", "</spe-repro.css>; rel=preload; as=style"),)}  # Early Hints carry a Link


def body_of(length: int, label: str) -> bytes:
    """`length` bytes that depend only on the reply: equal on every fetch of it, different for another."""
    line = f"spe repro {label}\n".encode()
    return (line * (length // len(line) + 1))[:length]


class StandIn:
    """The reply logic (no sockets): which recorded reply is in force, and how it is sent now."""

    def __init__(self, case: Case, clock=time.time):
        self.case, self.clock = case, clock
        self.started = clock()

    def start(self, at: float = 0.0) -> None:
        self.started = self.clock() - at

    def case_time(self) -> float:
        return self.clock() - self.started

    def in_force(self, unsafe: bool, case_time: float) -> Step | None:
        steps = [s for s in self.case.steps if (s.method in UNSAFE) == unsafe]
        due = [s for s in steps if s.offset_s <= case_time]
        return due[-1] if due else (steps[0] if steps else None)

    def handle(self, req: Message) -> Reply:
        parts = urlsplit(req.target)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if parts.path == START_PATH:
            self.start(float(parse_qs(parts.query).get("at", ["0"])[-1]))
            return Reply(204, [("Cache-Control", "no-store"), (STARTED_FIELD, f"{self.started:.6f}")], b"",
                         Delivery())
        if target != self.case.path:
            return self.error(404, f"not the case's path ({self.case.path})")
        unsafe = req.method in UNSAFE
        step = self.in_force(unsafe, self.case_time())
        if step is None:
            return self.error(405, f"the case has no {'unsafe' if unsafe else 'GET or HEAD'} request")
        if unsafe:
            return Reply(step.reply.status, list(UNSAFE_REPLY_FIELDS),
                         body_of(step.reply.body_bytes, f"{target} {req.method}"), Delivery())
        return self._recorded(req, step.reply)

    def _recorded(self, req: Message, reply: OriginReply) -> Reply:
        headers = self.fields(reply)
        etag, modified = dict(headers).get("ETag"), parse_date(dict(headers).get("Last-Modified", ""))
        # the interim responses the origin sent first, never to an HTTP/1.0 client (RFC 9110 15.2)
        interim = reply.interim if req.version != "1.0" else ()
        delivery = Delivery(interim=interim, interim_fields=INTERIM_FIELDS)
        if reply.status == 200 and not_modified(req, etag, modified):
            # the recorded origin's own 304 framing, when it had one (a 304 says no length otherwise)
            framing = [] if reply.not_modified_length is None else [("Content-Length", str(reply.not_modified_length))]
            return Reply(304, [*headers, *framing], b"", delivery)
        body = body_of(reply.body_bytes, f"{self.case.path} fetched at {reply.fetched_offset_s:g} s")
        return Reply(reply.status, [("Content-Type", "application/octet-stream"), *headers], body, delivery,
                     head_only=req.method == "HEAD")

    def fields(self, reply: OriginReply) -> list[tuple[str, str]]:
        """The recorded fields, absolute dates moved by the replay's distance from the recording (an invalid
        date, "0", stays as it was); Date the server's own, now, unless the recorded one was off the recording's
        clock: then it is moved like the others."""
        shift = date_shift(self.started, self.case.recorded_start)
        own_date = off_the_clock(reply, self.case.recorded_start)
        moved = {*MOVED, "date"} if own_date else set(MOVED)
        return [(name, moved_date(value, shift) if name.lower() in moved else value)
                for name, value in recorded_fields(reply) if own_date or name.lower() != "date"]

    def error(self, status: int, text: str) -> Reply:  # also the socket side's answer to a bad request
        return Reply(status, [("Content-Type", "text/plain"), ("Cache-Control", "no-store")],
                     f"{status} stand-in origin: {text}\n".encode(), Delivery())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", required=True, help="the case directory (or its case.json)")
    parser.add_argument("--listen", type=parse_listen, required=True, metavar="HOST:PORT",
                        help="address to listen on (port 0: any free port, printed)")
    args = parser.parse_args(argv)
    try:
        case = load_case(args.case)
    except CaseError as e:
        parser.error(str(e))
    # The synthetic origin's socket side (keep-alive, pipelining, framing) with this reply logic.
    asyncio.run(serve(args.listen[0], args.listen[1], StandIn(case)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
