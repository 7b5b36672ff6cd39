"""The HAR origin as a real process on 127.0.0.1 (`./spe origin --har`): replies byte for byte as recorded, fields
in order and dates moved to now, 304 on a validator, repeated requests in recorded order, gzip encoded again, what
it does not hold 404 and counted, the recorded server time waited; and its command line's refusals."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from har_site import CDN, CSS, CSS_ETAG, JS, LOGO_MODIFIED, PAGE, PNG, SHOP, WAIT_MS, write_site
from httpclient import Connection

from spe_tools.process import ProcessGroup, free_port
from spe_tools.workload.har.archive import lab_url
from spe_tools.workload.http11 import parse_http_date

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
THINK_SCALE = 2


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("har-origin")
    har = write_site(workdir / "site.har")
    with ProcessGroup(workdir) as group:
        port = free_port()
        yield group.start("har-origin", [sys.executable, "-m", "spe_tools.workload.har_origin", "--listen",
                                         f"127.0.0.1:{port}", str(har), "--think-scale", str(THINK_SCALE)],
                          port=port, env=ENV)


def url(origin, recorded: str) -> str:
    return lab_url(recorded, f"127.0.0.1:{origin.port}")


def fields(raw_header: bytes) -> list[tuple[str, str]]:
    lines = raw_header.decode("latin-1").split("\r\n")[1:]
    return [tuple(line.split(": ", 1)) for line in lines if line]


def stats(origin) -> dict:
    with Connection(origin.port) as c:
        return json.loads(c.get(f"http://127.0.0.1:{origin.port}/_stats").body)


def test_a_page_goes_out_as_recorded_its_date_moved_to_now(origin):
    with Connection(origin.port) as c:
        start = time.monotonic()
        page = c.get(url(origin, f"{SHOP}/"))
        elapsed = time.monotonic() - start
    date = page.headers["date"]
    assert abs(parse_http_date(date) - time.time()) < 60  # the recording's first reply: "now" when it started
    assert page.raw_header == (
        "HTTP/1.1 200 OK\r\n"
        f"Date: {date}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        "Cache-Control: no-cache\r\n"
        "Expires: 0\r\n"
        "Set-Cookie: session=s3cr3t; Path=/; HttpOnly\r\n"
        "Set-Cookie: theme=dark; Path=/\r\n"
        f"Content-Length: {len(PAGE)}\r\n\r\n").encode()
    assert page.body == PAGE
    assert elapsed >= THINK_SCALE * WAIT_MS["page"] / 1000 * 0.95  # the recorded server time, scaled


def test_validators_and_dates_move_together_and_a_validator_gets_304(origin):
    logo = url(origin, f"{CDN}/img/logo.png")
    with Connection(origin.port) as c:
        full = c.get(logo)
        since = c.get(logo, headers={"If-Modified-Since": full.headers["last-modified"]})
        css = c.get(url(origin, f"{SHOP}/static/site.css"))
        revalidated = c.get(url(origin, f"{SHOP}/static/site.css"), headers={"If-None-Match": CSS_ETAG})
    assert [n for n, _ in fields(full.raw_header)] == ["date", "content-type", "last-modified", "expires", "age",
                                                       "Content-Length"]
    assert full.body == PNG and full.headers["age"] == "17"  # Age as recorded
    recorded_gap = parse_http_date("Sat, 01 Jun 2024 12:00:01 GMT") - parse_http_date(LOGO_MODIFIED)
    assert parse_http_date(full.headers["date"]) - parse_http_date(full.headers["last-modified"]) == recorded_gap
    assert parse_http_date(full.headers["expires"]) - parse_http_date(full.headers["date"]) == 3600
    assert since.status == 304 and since.body == b""
    assert fields(since.raw_header) == [("date", full.headers["date"]), ("last-modified",
                                                                         full.headers["last-modified"]),
                                        ("expires", full.headers["expires"])]
    assert css.status == 200 and css.body == CSS and css.headers["etag"] == CSS_ETAG
    assert revalidated.status == 304 and revalidated.headers["etag"] == CSS_ETAG  # the recorded 304


def test_repeated_requests_get_the_recorded_responses_in_order(origin):
    with Connection(origin.port) as c:
        bodies = [c.get(url(origin, f"{SHOP}/api/stock?item=7")).body for _ in range(3)]
    assert bodies == [b'{"item": 7, "left": 3}', b'{"item": 7, "left": 2}', b'{"item": 7, "left": 2}']


def test_a_script_recorded_decoded_is_sent_gzip_encoded(origin):
    with Connection(origin.port) as c:
        js = c.get(url(origin, f"{CDN}/js/app.js"))
        head = c.get(url(origin, f"{CDN}/js/app.js"), method="HEAD")
    assert js.raw_header.startswith(b"HTTP/1.1 200 OK\r\n") and b":status" not in js.raw_header
    assert js.headers["content-encoding"] == "gzip" and gzip.decompress(js.body) == JS
    assert js.headers["content-length"] == str(len(js.body)) != "123"  # its own framing, not the recorded one
    assert head.body == b"" and fields(head.raw_header) == fields(js.raw_header)


def test_what_the_har_does_not_hold_is_404_and_counted(origin):
    before = stats(origin)
    with Connection(origin.port) as c:
        missing = c.get(url(origin, f"{SHOP}/nowhere"))
        post = c.get(url(origin, f"{SHOP}/api/cart"), method="POST", body=b"item=7")
    assert missing.status == 404 and missing.body == f"404 Not Found: not in the HAR: GET {SHOP}/nowhere\n".encode()
    assert post.status == 201 and post.raw_header.startswith(b"HTTP/1.1 201 Created\r\n")
    after = stats(origin)
    assert after["not_in_har"] == before["not_in_har"] + 1 and after["served"] == before["served"] + 1
    assert after["left_out"] == 1 and after["by_url"][f"{SHOP}/api/cart"] == 1


def har_origin_cli(*args: str) -> subprocess.CompletedProcess:
    """`./spe origin ARGS` as a user runs it (the front door picks the HAR origin for --har)."""
    return subprocess.run([str(ROOT / "spe"), "origin", *args], capture_output=True, text=True, timeout=60,
                          env={**ENV, "HOME": str(Path.home())})


def test_the_command_line_refuses_other_addresses_and_files_that_are_no_har(tmp_path: Path):
    har = write_site(tmp_path / "site.har")
    wide = har_origin_cli("--har", str(har), "--listen", "0.0.0.0:0")
    assert wide.returncode == 2 and "0.0.0.0 is not a loopback address" in wide.stderr
    (tmp_path / "empty.har").write_text("{}")
    bad = har_origin_cli("--har", str(tmp_path / "empty.har"), "--listen", "127.0.0.1:0", "--no-think")
    assert bad.returncode == 2 and "empty.har: no log.entries" in bad.stderr
