"""The prefetch agent's limits, against a stand-in for its Squid (an HTTP server on the loopback that answers
absolute-form requests with pages and images and records what it was asked): depth, bytes per client page,
no URL fetched twice, the queue's bound; and that it tells its own log lines from the clients'."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

IMAGE = 10 * 1024


def page(n: int, images: int = 10, links: int = 3) -> bytes:
    parts = [f'<img src="/img/{n}-{k}.jpg">' for k in range(images)]
    parts += [f'<a href="/page/{n}{j}.html">next</a>' for j in range(links)]
    return ("<html><body>" + "".join(parts) + "</body></html>").encode()


class StandIn(http.server.ThreadingHTTPServer):
    """Answers GET http://origin/page/N.html with a page and /img/... with IMAGE bytes; records each request."""

    def __init__(self):
        self.asked: list[tuple[str, str, str]] = []  # (client address, URL, X-SPE-Scheme)
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (the http.server API)
        server: StandIn = self.server  # type: ignore[assignment]
        with server.lock:
            server.asked.append((self.client_address[0], self.path, self.headers.get("X-SPE-Scheme", "")))
        path = self.path.split("/", 3)[3] if self.path.startswith("http://") else self.path.lstrip("/")
        if path.startswith("page/"):
            body, ctype = page(int(path[5:].split(".")[0])), "text/html"
        else:
            body, ctype = b"x" * IMAGE, "image/jpeg"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    server = StandIn()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def log_line(client: str, url: str, ctype: str = "text/html", scheme: str = "-") -> str:
    return f"{time.time():.3f}     12 {client} TCP_MISS/200 1000 GET {url} {ctype} {scheme}\n"


def run_agent(tmp_path: Path, stand_in: StandIn, lines: list[str], *args: str, settle_s: float = 3.0) -> str:
    """The agent following a log that gets `lines`, for settle_s; its output."""
    log = tmp_path / "access.log"
    log.write_text("")
    agent = subprocess.Popen([sys.executable, "-m", "spe_tools.squid_prefetch", "--proxy",
                              f"127.0.0.1:{stand_in.server_address[1]}", "--access-log", str(log),
                              "--rate", "1000", "--report-every", "1s", "--log", str(tmp_path / "fetches.jsonl"),
                              *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        time.sleep(0.5)
        with open(log, "a") as f:
            f.writelines(lines)
        time.sleep(settle_s)
    finally:
        agent.terminate()
        out, _ = agent.communicate(timeout=30)
    assert agent.returncode == 0, out
    return out


def images_asked(stand_in: StandIn) -> list[str]:
    return [url for _, url, _ in stand_in.asked if "/img/" in url]


def test_depth_zero_fetches_the_pages_embedded_objects_only(tmp_path, stand_in):
    run_agent(tmp_path, stand_in, [log_line("127.0.0.1", "http://origin:80/page/1.html")], "--depth", "0")
    urls = [url for _, url, _ in stand_in.asked]
    assert urls[0] == "http://origin:80/page/1.html"  # the client's page again, to parse it
    assert sorted(images_asked(stand_in)) == sorted(f"http://origin:80/img/1-{k}.jpg" for k in range(10))
    assert not any("/page/1" in url and url != urls[0] for url in urls)  # no linked page
    assert {client for client, _, _ in stand_in.asked} == {"127.0.0.2"}  # from its own address


def test_depth_one_fetches_linked_pages_with_their_images(tmp_path, stand_in):
    run_agent(tmp_path, stand_in, [log_line("127.0.0.1", "http://origin:80/page/2.html")], "--depth", "1")
    urls = {url for _, url, _ in stand_in.asked}
    assert {f"http://origin:80/page/2{j}.html" for j in range(3)} <= urls
    assert "http://origin:80/img/20-0.jpg" in urls  # a linked page's image
    assert "http://origin:80/page/200.html" not in urls  # two clicks away: not at depth 1


def test_the_bytes_per_client_page_bound_the_fetches(tmp_path, stand_in):
    out = run_agent(tmp_path, stand_in, [log_line("127.0.0.1", "http://origin:80/page/3.html")], "--depth", "0",
                    "--budget-kb", "35", "--workers", "1")
    # the page (under 1 KiB) and 10 KiB images: the fourth image crosses 35 KiB, nothing after it is fetched
    assert len(images_asked(stand_in)) == 4
    assert "6 over budget" in out


def test_nothing_is_fetched_twice_nor_what_a_client_just_fetched(tmp_path, stand_in):
    lines = [log_line("127.0.0.1", "http://origin:80/img/4-0.jpg", "image/jpeg"),  # the client has it
             log_line("127.0.0.1", "http://origin:80/page/4.html"),
             log_line("127.0.0.2", "http://origin:80/page/5.html"),  # the agent's own line: not a trigger
             log_line("127.0.0.1", "http://origin:80/page/4.html")]  # again: its images are recent
    run_agent(tmp_path, stand_in, lines, "--depth", "0")
    images = images_asked(stand_in)
    assert sorted(images) == sorted(f"http://origin:80/img/4-{k}.jpg" for k in range(1, 10))
    assert not any("/page/5" in url or "/img/5-" in url for _, url, _ in stand_in.asked)


def test_an_intercepted_page_is_prefetched_as_the_multiplier_sends_it(tmp_path, stand_in):
    run_agent(tmp_path, stand_in, [log_line("127.0.0.1", "http://origin:8443/page/6.html", scheme="https")],
              "--depth", "0")
    assert {scheme for _, _, scheme in stand_in.asked} == {"https"}
    assert "http://origin:8443/img/6-0.jpg" in images_asked(stand_in)
    fetched = [json.loads(line) for line in (tmp_path / "fetches.jsonl").read_text().splitlines()]
    assert "https://origin:8443/img/6-0.jpg" in {f["url"] for f in fetched}


def test_the_queue_drops_its_oldest_fetches_when_pages_come_faster_than_it_drains(tmp_path, stand_in):
    lines = [log_line("127.0.0.1", f"http://origin:80/page/{n}.html") for n in range(7, 12)]
    out = run_agent(tmp_path, stand_in, lines, "--depth", "0", "--queue", "3", "--workers", "1", "--rate", "5")
    dropped = int(out.strip().splitlines()[-1].split(" dropped")[0].rsplit(", ", 1)[1])
    assert dropped > 0, out
