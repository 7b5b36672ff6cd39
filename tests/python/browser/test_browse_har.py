"""`./spe browse --har`: headless Chromium loads a small site through Squid (a page that sets cookies, two images,
one behind a redirect, a binary POST by script, a second page) and the HAR file holds one entry for every request
the origin served, with its status, the Set-Cookie and Cookie fields, the exact bytes the origin sent, connection
ids and start times in order, valid HAR 1.2 by its JSON Schema (the conversion itself: unit/test_har_recording.py)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import har_schema
import pytest
from conftest import ROOT
from labsupport import scratch_dir
from parts import missing_program, require

from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid
from spe_tools.workload.browse import CHROMIUM
from spe_tools.workload.har.archive import parse_time
from spe_tools.workload.har.read import read_har

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
POSTED = bytes([0, 255, 1, 128])


def png(rgb: bytes) -> bytes:
    """A 1x1 PNG of that colour: an image Chromium decodes, and bytes that are no UTF-8."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(b"\x00" + rgb)) + chunk(b"IEND", b"")


# The icon link keeps Chromium from asking for /favicon.ico after the load event. The POST is synchronous so
# that it is done before the load event.
PAGE = f"""<html><head><link rel="icon" href="data:,"></head><body><img src="/red.png"><img src="/old.png">
<script>var x = new XMLHttpRequest(); x.open('POST', '/submit', false); x.send(new Uint8Array({list(POSTED)}));
document.title = x.responseText;</script></body></html>""".encode()
SITE = {  # path -> status, extra fields, body
    "/page.html": (200, [("Content-Type", "text/html"), ("Set-Cookie", "session=abc123; Path=/"),
                         ("Set-Cookie", "theme=dark; Path=/")], PAGE),
    "/red.png": (200, [("Content-Type", "image/png"), ("Cache-Control", "max-age=60")], png(b"\xff\x00\x00")),
    "/old.png": (302, [("Location", "/blue.png"), ("Content-Type", "text/plain")], b"moved"),
    "/blue.png": (200, [("Content-Type", "image/png")], png(b"\x00\x00\xff")),
    "/other.html": (200, [("Content-Type", "text/html")], b'<html><head><link rel="icon" href="data:,"></head></html>'),
}


class Site(BaseHTTPRequestHandler):
    """SITE, and /submit answering a POST with its body's length; every exchange noted in `served`."""
    protocol_version = "HTTP/1.1"
    served: list[tuple[str, str, bytes, bytes]] = []  # method, path, request body, response body

    def do_GET(self) -> None:
        status, fields, body = SITE.get(self.path, (404, [("Content-Type", "text/plain")], b"none"))
        self.reply(status, fields, body, b"")

    def do_POST(self) -> None:
        posted = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(200, [("Content-Type", "text/plain"), ("Cache-Control", "no-store")],
                   f"got {len(posted)}".encode(), posted)

    def reply(self, status: int, fields: list[tuple[str, str]], body: bytes, posted: bytes) -> None:
        self.served.append((self.command, self.path, posted, body))
        self.send_response(status)
        for name, value in [*fields, ("Content-Length", str(len(body)))]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_behind_squid() -> Iterator[tuple[Path, str, int]]:
    """(a scratch directory, the site's base URL, Squid's port)."""
    require(missing_program(CHROMIUM), "Chromium")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with scratch_dir("spe-browse-har-") as workdir, ProcessGroup(workdir) as group:
            squid = start_squid(group, "squid", free_port())
            yield workdir, f"http://127.0.0.1:{server.server_address[1]}", squid.port
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_the_har_holds_every_exchange_as_the_origin_served_it(site_behind_squid):
    workdir, base, squid_port = site_behind_squid
    har, summary = workdir / "site.har", workdir / "browse.json"
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--via", f"127.0.0.1:{squid_port}",
                          "--think-s", "0", "--har", str(har), "--json", str(summary), f"{base}/page.html",
                          f"{base}/other.html"], env=ENV, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    require(har_schema.missing(), "the HAR 1.2 JSON Schema (npm har-schema)")
    assert har_schema.problems(json.loads(har.read_text())) == []
    entries = read_har(har)
    served = Site.served
    # one entry per request the origin served (Squid passed each on: each was asked for once)
    assert sorted((e.request.method, e.request.url.removeprefix(base)) for e in entries) == \
        sorted((method, path) for method, path, _, _ in served)
    assert len(entries) == 6
    by_path = {e.request.url.removeprefix(base): e for e in entries}
    for _method, path, posted, body in served:
        entry = by_path[path]
        assert entry.response.status == SITE.get(path, (200,))[0], path
        if entry.response.status != 302:  # Chromium keeps no redirect body
            assert entry.response.body == body, path  # byte for byte, the images too
        assert (entry.request.body or b"") == posted, path
        assert entry.connection, path
    page = by_path["/page.html"]
    assert [v for n, v in page.response.headers if n.lower() == "set-cookie"] == ["session=abc123; Path=/",
                                                                               "theme=dark; Path=/"]
    assert ("Cookie", "session=abc123; theme=dark") in by_path["/red.png"].request.headers
    assert ("Location", "/blue.png") in by_path["/old.png"].response.headers
    check_file_order_and_pages(har, base)
    counts = json.loads(summary.read_text())["har"]
    assert counts == {"file": str(har), "entries": 6, "bodies_missing": 0, "failed": 0, "from_cache": 0,
                      "unfinished": 0}


def check_file_order_and_pages(har: Path, base: str) -> None:
    """The file's own order is by start time, and each entry names the page it was loaded for."""
    log = json.loads(har.read_text())["log"]
    started = [parse_time(e["startedDateTime"]) for e in log["entries"]]
    assert started == sorted(started)
    assert [(p["id"], p["title"]) for p in log["pages"]] == [("page_1", f"{base}/page.html"),
                                                             ("page_2", f"{base}/other.html")]
    assert all(p["pageTimings"]["onLoad"] > 0 for p in log["pages"])
    pagerefs = {e["request"]["url"].removeprefix(base): e["pageref"] for e in log["entries"]}
    assert pagerefs == {"/page.html": "page_1", "/red.png": "page_1", "/old.png": "page_1", "/blue.png": "page_1",
                        "/submit": "page_1", "/other.html": "page_2"}
