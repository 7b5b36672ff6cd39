"""A small deterministic origin server for the demo and the integration tests.

Every URL determines its reply, so every correct proxy returns identical bytes:

- ``/c/<id>?size=N``        cacheable (max-age=3600, ETag, Last-Modified; 304 to conditionals)
- ``/chunked/<id>?size=N``  the same body, sent with Transfer-Encoding: chunked
- ``/u/<id>``               uncacheable (private, no-store); the body and X-Serial change on every fetch
- ``/slow/<id>?ms=N``       cacheable, after N ms of think time
- ``/status/<code>``        that status (no body for 204 and 304)
- ``/post``                 POST: replies with the MD5 of the request body (uncacheable)
- ``/stats``                JSON: requests seen per (method, path)

HEAD works everywhere. Run: ``python3 -m spe_tools.mini_origin --port N``.
(The full Polygraph-like origin is the workloads' ``./spe origin``.)
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LAST_MODIFIED = "Mon, 02 Nov 2026 10:00:00 GMT"


def body_for(object_id: str, size: int) -> bytes:
    """Deterministic bytes for an object id."""
    seed = hashlib.sha256(object_id.encode()).digest()
    repeated = (seed * (size // len(seed) + 1))[:size]
    return repeated


class OriginHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "spe-mini-origin"
    # Header and body leave in separate writes: without this, Nagle + delayed ACK add 40 ms.
    disable_nagle_algorithm = True
    counts: Counter = Counter()
    counts_lock = threading.Lock()
    serial = itertools.count(1)

    def log_message(self, fmt: str, *args: object) -> None:  # quiet by default
        pass

    def _count(self) -> None:
        with self.counts_lock:
            self.counts[f"{self.command} {urlsplit(self.path).path}"] += 1

    def _send(self, status: int, body: bytes, headers: dict[str, str], chunked: bool = False) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        no_body = status in (204, 304) or status < 200
        if chunked and not no_body:
            self.send_header("Transfer-Encoding", "chunked")
        elif not no_body:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or no_body:
            return
        if chunked:
            for i in range(0, len(body), 4096):
                piece = body[i:i + 4096]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)

    def _cacheable(self, object_id: str, size: int, chunked: bool = False) -> None:
        body = body_for(object_id, size)
        etag = f'"{hashlib.md5(body).hexdigest()[:16]}"'
        headers = {"Content-Type": "application/octet-stream", "Cache-Control": "public, max-age=3600",
                   "ETag": etag, "Last-Modified": LAST_MODIFIED}
        if self.headers.get("If-None-Match") == etag or self.headers.get("If-Modified-Since") == LAST_MODIFIED:
            self._send(304, b"", headers)
        else:
            self._send(200, body, headers, chunked)

    def _route(self) -> None:
        self._count()
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        query = parse_qs(url.query)
        size = int(query.get("size", ["1024"])[0])
        kind = parts[0] if parts else ""
        object_id = "/".join(parts[1:]) or "0"
        if kind == "c":
            self._cacheable(object_id, size)
        elif kind == "chunked":
            self._cacheable(object_id, size, chunked=True)
        elif kind == "slow":
            time.sleep(int(query.get("ms", ["100"])[0]) / 1000)
            self._cacheable(object_id, size)
        elif kind == "u":
            n = next(self.serial)
            self._send(200, b"uncacheable %s serial %d\n" % (object_id.encode(), n),
                       {"Content-Type": "text/plain", "Cache-Control": "private, no-cache, no-store",
                        "X-Serial": str(n)})
        elif kind == "status":
            code = int(parts[1]) if len(parts) > 1 else 200
            self._send(code, b"status %d\n" % code, {"Content-Type": "text/plain", "Cache-Control": "no-store"})
        elif kind == "stats":
            with self.counts_lock:
                data = json.dumps(dict(self.counts)).encode()
            self._send(200, data, {"Content-Type": "application/json", "Cache-Control": "no-store"})
        else:
            self._send(404, b"not found\n", {"Content-Type": "text/plain"})

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._route()

    def do_HEAD(self) -> None:  # noqa: N802
        self._route()

    def do_POST(self) -> None:  # noqa: N802
        self._count()
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length) if length else b""
        self._send(200, hashlib.md5(data).hexdigest().encode() + b"\n",
                   {"Content-Type": "text/plain", "Cache-Control": "no-store"})


def serve(port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), OriginHandler)
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    serve(args.port, args.host).serve_forever()


if __name__ == "__main__":
    main()
