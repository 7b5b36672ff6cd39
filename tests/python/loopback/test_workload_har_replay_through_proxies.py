"""A browser's recording replayed (./spe replay FILE.har): a page, its subresources on three recorded connections, a
POST with a body, cookies. Sent straight to a recording server playing the proxy, it must arrive as recorded, less
the hop-by-hop fields, on as many connections as were recorded, in the recorded order; through a stock Squid, two
recordings (one of them Chromium's HTTP/2, with pseudo-headers and split cookies) must reach the origin as two
clients with their methods, bodies and cookies; and a lab's `[workload] kind = "replay"` sends one through its
Multiplier (the planning alone: unit/test_workload_har_replay.py)."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import run_lab_file, scratch_dir
from parts import missing_program, require

from spe_tools.process import ProcessGroup, free_port
from spe_tools.rundir.layout import RunDir
from spe_tools.squid import SQUID, start_squid
from spe_tools.workload.har.archive import HarEntry, HarRequest, HarResponse, lab_url, write_har

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
T0 = 1_795_867_200.0
HOP_BY_HOP = ("connection", "keep-alive", "proxy-connection", "te", "upgrade", "transfer-encoding", "x-hop")
BROWSER = [("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"), ("Accept-Language", "en-GB,en;q=0.9"),
           ("Accept-Encoding", "gzip, deflate, br")]
SESSION = ("Cookie", "session=abc123; theme=dark")
CART = b'{"item": 7, "n": 2}'


def hop(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What Chromium's HTTP/1.1 recordings carry: Host and Connection, here with a field Connection names."""
    return [("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"), *headers]


def get(at: float, url: str, connection: str | None, *headers: tuple[str, str], status: int = 200) -> HarEntry:
    host = url.split("/")[2]
    return HarEntry(T0 + at, HarRequest("GET", url, headers=hop([("Host", host), *BROWSER, *headers])),
                    HarResponse(status), connection=connection)


def site() -> list[HarEntry]:
    """A page on www, its subresources on static over three connections, a POST, a 404 without a connection id (it
    waits on six per host) and a revalidation the server will not answer as recorded (304). 200 ms apart."""
    www, static = "https://www.example.com", "https://static.example.com"
    post = HarEntry(T0 + 0.8, HarRequest("POST", f"{www}/api/cart", headers=hop(
        [("Host", "www.example.com"), ("Content-Type", "application/json"), ("Content-Length", "999"),
         ("Origin", www), SESSION, *BROWSER]), body=CART), HarResponse(201), connection="31")
    return [get(0.0, f"{www}/", "31", ("Accept", "text/html"), ("Upgrade-Insecure-Requests", "1"), SESSION),
            get(0.2, f"{static}/site.css", "32", ("Accept", "text/css"), ("Referer", f"{www}/")),
            get(0.4, f"{static}/app.js?v=3", "33", ("Accept", "*/*"), ("Referer", f"{www}/")),
            get(0.6, f"{static}/logo.png", "32", ("Accept", "image/*"), ("Referer", f"{www}/")),
            post,
            get(1.0, f"{static}/font.woff2", "33", ("Origin", www), ("Referer", f"{static}/site.css")),
            get(1.2, f"{www}/favicon.ico", None, ("Proxy-Connection", "keep-alive"), ("Keep-Alive", "300"),
                ("TE", "trailers"), ("Upgrade", "h2c"), status=404),
            get(1.4, f"{www}/api/cart?ts=1", "31", ("If-None-Match", '"c1"'), SESSION, status=304)]


def http2_site() -> list[HarEntry]:
    """Chromium's HTTP/2 recording: pseudo-headers, lower-case names, the cookie split in two fields, every request
    on one connection."""
    def h2(at: float, method: str, path: str, *headers: tuple[str, str], body: bytes | None = None) -> HarEntry:
        pseudo = [(":method", method), (":authority", "app.example.org"), (":scheme", "https"), (":path", path)]
        return HarEntry(T0 + at, HarRequest(method, f"https://app.example.org{path}", "http/2.0",
                                            [*pseudo, *headers, ("cookie", "uid=42"), ("cookie", "lang=fr")], body),
                        HarResponse(200), connection="77")
    return [h2(0.0, "GET", "/", ("accept", "text/html")), h2(0.1, "GET", "/main.js", ("accept", "*/*")),
            h2(0.3, "PUT", "/api/profile", ("content-type", "text/plain"), body=b"name=Ada")]


@dataclass
class Seen:
    """One request as the recording server read it."""

    at: float
    connection: int  # the client's port: one per connection
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for n, v in self.headers if n.lower() == name), None)


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers everything (as a proxy or as the origin), records what it got; /favicon.ico is a 404."""

    protocol_version = "HTTP/1.1"
    seen: list[Seen] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def record(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append(Seen(time.monotonic(), self.client_address[1], self.command, self.path,
                              list(self.headers.items()), body))
        self.send_response(404 if self.path.endswith("/favicon.ico") else 201 if self.command == "POST" else 200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = do_PUT = record  # noqa: N815 (http.server's naming)


@pytest.fixture
def recorder() -> Iterator[tuple[int, list[Seen]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Recorder,), {"seen": []}))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server.RequestHandlerClass.seen
    finally:
        server.shutdown()
        server.server_close()


def replay(files: list[Path], proxy_port: int, origin: str, out: Path) -> dict:
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.replay", *map(str, files), "--via",
                          f"127.0.0.1:{proxy_port}", "--origin", origin, "--json", str(out)],
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "HAR entries sent" in run.stdout and "sent late vs schedule" in run.stdout
    return json.loads(out.read_text())


def test_a_recording_arrives_as_recorded_on_its_connections_in_its_order(recorder, tmp_path):
    port, seen = recorder
    recording = site()
    write_har(tmp_path / "site.har", recording)
    origin = f"localhost:{port}"
    s = replay([tmp_path / "site.har"], port, origin, tmp_path / "out.json")

    assert s["sent"] == s["completed"] == 8 and s["errors"] == s["lost"] == 0
    assert (s["connections"], s["recorded_connections"]) == (4, 3)
    assert (s["status_matched"], s["status_compared"], s["status_mismatches"]) == (7, 8, {"304->200": 1})
    assert len(seen) == 8
    # In the recorded order (200 ms apart), and not earlier than recorded
    assert [r.target for r in seen] == [lab_url(e.request.url, origin) for e in recording]
    assert seen[-1].at - seen[0].at >= 1.4 * 0.9
    # One connection per recorded id, its requests on it; the favicon on one of its own
    by_id = {c: {seen[i].connection for i, e in enumerate(recording) if e.connection == c} for c in ("31", "32", "33")}
    assert all(len(ports) == 1 for ports in by_id.values())
    assert len({r.connection for r in seen}) == 4 and seen[6].connection not in set().union(*by_id.values())

    for r, e in zip(seen, recording, strict=True):
        names = [n.lower() for n, _ in r.headers]
        assert r.method == e.request.method and r.header("host") == origin
        assert not set(HOP_BY_HOP) & set(names), names
        assert r.header("x-spe-client") == "site" and names.count("host") == 1
        for name, value in e.request.headers:
            if name.lower() not in (*HOP_BY_HOP, "host", "content-length"):
                assert r.header(name.lower()) == value, name
    page, post = seen[0], seen[4]
    assert page.header("cookie") == "session=abc123; theme=dark" and page.body == b""
    assert post.body == CART and post.header("content-length") == str(len(CART))


def test_two_recordings_reach_the_origin_through_squid_as_two_clients(recorder, tmp_path):
    port, seen = recorder
    write_har(tmp_path / "site.har", site())
    write_har(tmp_path / "app.har", http2_site())
    with scratch_dir("spe-har-replay-") as workdir, ProcessGroup(workdir) as group:
        squid = start_squid(group, "squid", free_port())
        s = replay([tmp_path / "site.har", tmp_path / "app.har"], squid.port, f"127.0.0.1:{port}",
                   tmp_path / "out.json")

    assert s["clients"] == 2 and s["sent"] == s["completed"] == 11 and s["errors"] == 0
    assert {c: v["sent"] for c, v in s["per_client"].items()} == {"site": 8, "app": 3}
    assert s["status_matched"] == 10 and s["status_mismatches"] == {"304->200": 1}
    by_client = {c: [r for r in seen if r.header("x-spe-client") == c] for c in ("site", "app")}
    assert len(by_client["site"]) == 8 and len(by_client["app"]) == 3
    app = by_client["app"]  # one recorded connection: in its order
    assert [(r.method, r.target) for r in app] == [("GET", "/_har/https/app.example.org/"),
                                                   ("GET", "/_har/https/app.example.org/main.js"),
                                                   ("PUT", "/_har/https/app.example.org/api/profile")]
    assert all(r.header("cookie") == "uid=42; lang=fr" and not any(n.startswith(":") for n, _ in r.headers)
               for r in app)
    assert app[2].body == b"name=Ada" and app[2].header("content-type") == "text/plain"
    post = next(r for r in by_client["site"] if r.method == "POST")
    assert post.body == CART and post.header("cookie") == "session=abc123; theme=dark"
    assert post.target == "/_har/https/www.example.com/api/cart"


def test_a_lab_replays_a_recording_through_its_multiplier():
    """HAR files with the synthetic origin: their loopback URLs asked as recorded (the origin's port pinned), each
    reply multiplied to the dummy proxy; the run ends when the replay does."""
    multiplier_binary()
    require(missing_program(SQUID), "Debian's squid")
    with scratch_dir("spe-har-lab-") as runs:
        port = free_port()
        base = f"http://localhost:{port}"
        recorded = [HarEntry(T0 + 0.1 * i, HarRequest("GET", f"{base}{path}", headers=hop([("Accept", "*/*")])),
                             HarResponse(200), connection=connection)
                    for i, (path, connection) in enumerate([("/page/1.html", "1"), ("/obj/1", "2"), ("/obj/2", "1")])]
        post = HarRequest("POST", f"{base}/post/1", headers=[("Content-Type", "text/plain")], body=b"hello")
        recorded.append(HarEntry(T0 + 0.4, post, HarResponse(200), connection="2"))
        write_har(runs / "browser.har", recorded)
        lab = (f'[collector]\nkind = "squid"\n[origin]\nport = {port}\nthink_mean_ms = 0\n'
               '[workload]\nkind = "replay"\nfiles = ["browser.har"]\nduration_s = 60\n'
               '[[proxy]]\nname = "dummy"\nkind = "dummy"\n')
        result = run_lab_file(runs, "harlab", lab)
        assert result.returncode == 0, result.stdout
        (rundir,) = runs.glob("*-harlab")
        summary = json.loads((rundir / "workload.json").read_text())
        records = [json.loads(line) for line in RunDir(rundir).multiplier_log.read_text().splitlines()]
    assert summary["format"] == "har" and summary["origin"] is None
    assert summary["sent"] == summary["completed"] == 4 and summary["connections"] == 2
    assert sorted((r["method"], r["url"]) for r in records) == sorted((e.request.method, e.request.url)
                                                                       for e in recorded)
