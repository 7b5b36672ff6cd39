"""The HAR origin: a recorded site served again from HAR files, on the loopback.

Run: ./spe origin --har FILE.har [FILE.har ...] --listen 127.0.0.1:PORT [--no-think] [--think-scale X]
Prints `origin listening on HOST:PORT` once ready;
SIGTERM or SIGINT stops it (exit 0).

Every recorded host is asked for here as http://ORIGIN/_har/SCHEME/HOST/PATH?QUERY (har.lab_url); on a recording
of one host, a plain /PATH?QUERY too. Each request gets the response recorded for it (har_index.py says which)
as har_reply.py prepares it: the recorded status, reason and fields in order (not the framing or hop-by-hop ones),
dates moved to now by one offset per file, the body as recorded (filler of the recorded size where the HAR left
it out, encoded again where DevTools kept it decoded), after the recorded server time (timings.wait). A
conditional request whose validator matches gets the 304 the recorded origin would have sent. A request the
recording does not hold gets 404. /_stats counts all of it (JSON), and what reading the files put right
(har_entry.FIXES). The files are streamed, their response bodies spilled to a temporary file (har_bodies.py):
memory grows with the number of entries, not with the files' size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from spe_tools.workload.content.conditional import not_modified
from spe_tools.workload.har import reply as har_reply
from spe_tools.workload.har.archive import HarError
from spe_tools.workload.har.bodies import BodyStore, body_bytes
from spe_tools.workload.har.index import HarIndex
from spe_tools.workload.har.read import read_hars
from spe_tools.workload.http11 import Message
from spe_tools.workload.origin import Delivery, Reply, error_reply, is_lab_host, parse_listen, serve


class HarOrigin:
    """The reply logic (no sockets): the index of recorded responses and the counts /_stats reports."""

    def __init__(self, index: HarIndex, think_scale: float = 1.0):
        self.index, self.think_scale = index, think_scale
        self.by_url: Counter = Counter()  # recorded URL -> replies from the recording
        self.by_path: Counter = Counter()  # request path as asked -> requests (the synthetic origin's name)
        self.by_status: Counter = Counter()
        self.served = self.not_in_har = self.filler_bodies = self.reencoded = self.encoding_dropped = 0
        self.made_304 = self.length_fixed = 0

    def stats(self) -> dict:
        return {"served": self.served, "by_url": dict(self.by_url), "by_path": dict(self.by_path),
                "by_status": dict(self.by_status), "not_in_har": self.not_in_har,
                "filler_bodies": self.filler_bodies, "reencoded": self.reencoded,
                "encoding_dropped": self.encoding_dropped, "made_304": self.made_304,
                "length_fixed": self.length_fixed, "responses": self.index.responses,
                "left_out": self.index.left_out, "fixes": dict(self.index.fixes)}

    def error(self, status: int, text: str) -> Reply:
        return error_reply(status, text)

    def handle(self, req: Message) -> Reply:
        parts = urlsplit(req.target)
        if req.method == "CONNECT" or (parts.scheme and not is_lab_host(parts.netloc)):
            return self.error(403, "not a lab destination")  # the origin never poses as another site
        if parts.path == "/_stats":
            return Reply(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                         json.dumps(self.stats(), sort_keys=True).encode(), Delivery(), req.method == "HEAD")
        self.by_path[parts.path or "/"] += 1
        conditional = bool(req.header("if-none-match") or req.header("if-modified-since"))
        url, found = self.index.lookup(req.method, req.target, req.body, conditional, req.header("x-spe-request"))
        if found is None:
            self.not_in_har += 1
            self.by_status[404] += 1
            return self.error(404, f"not in the HAR: {req.method} {url or req.target}")
        return self._recorded(req, url or "", found.prepared(), conditional)

    def _recorded(self, req: Message, url: str, p: har_reply.Prepared, conditional: bool) -> Reply:
        if conditional and 200 <= p.status < 300 and req.method in ("GET", "HEAD") and \
                not_modified(req, p.etag, p.last_modified):
            p = har_reply.not_modified(p)
            self.made_304 += 1
        head_only = req.method == "HEAD"
        self._count(url, p, head_only)
        body = body_bytes(p.body, self.index.store)
        return Reply(p.status, list(p.fields), body, Delivery(think_ms=p.wait_ms * self.think_scale), head_only,
                     reason=p.reason, own_server=False)

    def _count(self, url: str, p: har_reply.Prepared, head_only: bool) -> None:
        self.served += 1
        self.by_url[url] += 1
        self.by_status[p.status] += 1
        if not head_only:  # what a body that went out was
            self.filler_bodies += p.filler
            self.reencoded += p.coding == "reencoded"
            self.encoding_dropped += p.coding == "dropped"
            self.length_fixed += p.length_fixed


def load_index(paths: Iterable[Path | str], now: float, store: BodyStore | None = None) -> HarIndex:
    """The HAR files' entries, each file's dates moved by its own offset (now less its first start); their
    response bodies in `store`, else in memory."""
    files = list(read_hars(paths, "keep" if store is None else store))
    index = HarIndex(((f.entries, har_reply.date_offset([e.started for e in f.entries], now)) for f in files), store)
    index.fixes = sum((f.fixes for f in files), Counter())
    return index


def loopback_listen(text: str) -> tuple[str, int]:
    host, port = parse_listen(text)
    if not is_lab_host(host):
        raise argparse.ArgumentTypeError(f"{host} is not a loopback address: the HAR origin listens on the "
                                         "loopback only (127.0.0.1, ::1, localhost)")
    return host, port


def non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./spe origin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", metavar="FILE.har", help="the recordings (HAR 1.2)")
    parser.add_argument("--har", nargs="+", action="extend", default=[], metavar="FILE.har",
                        help="recordings, as ./spe origin --har names them (the same as naming them)")
    parser.add_argument("--listen", type=loopback_listen, required=True, metavar="HOST:PORT",
                        help="loopback address to listen on (port 0: any free port, printed)")
    parser.add_argument("--no-think", action="store_true", help="no recorded server time before a reply")
    parser.add_argument("--think-scale", type=non_negative, default=1.0, metavar="X",
                        help="wait X times the recorded server time (timings.wait) before a reply (default 1)")
    args = parser.parse_args(argv)
    files = [*args.files, *args.har]
    if not files:
        parser.error("name at least one HAR file")
    try:
        index = load_index(files, time.time(), BodyStore())
    except HarError as e:
        parser.error(str(e))
    print(f"har origin: {index.responses} recorded responses from {len(files)} file(s), "
          f"{len({host for _, host in index.origins})} host(s); {index.left_out} entries left out (no final "
          f"response, or not http(s)); put right in reading: {dict(index.fixes) or 'nothing'}",
          file=sys.stderr, flush=True)
    origin = HarOrigin(index, 0.0 if args.no_think else args.think_scale)
    asyncio.run(serve(args.listen[0], args.listen[1], origin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
