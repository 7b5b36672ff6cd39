"""HARs as Chromium (through `./spe browse --har`), Firefox (its DevTools' HAR auto-export) and mitmproxy (its
har_dump.py addon) wrote them, of one loopback shop (tests/fixtures/har/: sample_site.py, make_samples.sh): each
reads with the bodies as the site sent them and each tool's quirks counted, its requests plan as a replay, and the
HAR origin answers each replayed request with the recorded status (the same through real processes:
loopback/test_har_samples_both_sides.py)."""

from __future__ import annotations

import base64
import json
import sys

import pytest
from conftest import ROOT

from spe_tools.workload.har.bodies import BodyStore
from spe_tools.workload.har.entry import dropped_body_size
from spe_tools.workload.har.read import read_har, read_har_file
from spe_tools.workload.har.replay import plan_har
from spe_tools.workload.har_origin import HarOrigin, load_index
from spe_tools.workload.http11 import Message

SAMPLES = ROOT / "tests/fixtures/har"
sys.path.insert(0, str(SAMPLES))
from sample_site import CSS, SITE  # noqa: E402 (the site the samples were recorded from)

LAB = "localhost:9"
# creator, entries, what each tool writes that the reader puts right
EXPECTED = {
    # SPE's recorder leaves a redirect's body out (Chromium keeps none) with size -1
    "chromium": ("SPE browse", 12, {"no_body": 2, "no_size": 2}),
    # Firefox leaves the redirect's body out with size 0 ("Response bodies are not included"), records data: URLs
    "firefox": ("Firefox", 8, {"no_body": 1}),
    # har_dump.py joins the page's two Set-Cookie fields with ", " (once per page load)
    "mitmproxy": ("mitmproxy har_dump", 12, {"split_fields": 2}),
}


@pytest.mark.parametrize("name", EXPECTED)
def test_each_sample_reads_with_the_bodies_the_site_sent(name):
    path = SAMPLES / f"{name}.har"
    creator, count, fixes = EXPECTED[name]
    assert json.loads(path.read_text())["log"]["creator"]["name"] == creator
    recording = read_har_file(path)
    assert len(recording.entries) == count and recording.fixes == fixes
    by_path = {e.request.url.split("18431", 1)[-1]: e for e in recording.entries}
    assert by_path["/img/red.png"].response.body == SITE["/img/red.png"][2]  # binary, byte for byte
    assert by_path["/static/site.css"].response.body in (CSS, b"")  # (the last one kept: a 304 on a reload)
    assert b"<h1>Sample shop</h1>" in next(e for e in recording.entries if e.request.url.endswith(("/", "/bye.html"))
                                           ).response.body
    post = by_path["/api/cart"]
    assert (post.request.method, post.request.body, post.response.status) == ("POST", b"item=7&n=2", 201)
    page = recording.entries[0]
    assert [v for n, v in page.response.headers if n.lower() == "set-cookie"] == [
        "session=sample1; Path=/; HttpOnly", "theme=dark; Path=/"]  # two fields, whatever the tool wrote


@pytest.mark.parametrize("name", EXPECTED)
def test_each_sample_replayed_against_the_har_origin_gets_the_recorded_statuses(name, tmp_path):
    path = SAMPLES / f"{name}.har"
    recording = read_har_file(path, bodies="drop")
    planned, refused = plan_har(recording.entries, name, LAB, 1.0, False)
    assert refused == ({"not an http(s) URL": 1} if name == "firefox" else {})  # Firefox's data: URL
    origin = HarOrigin(load_index([path], recording.entries[0].started, BodyStore(str(tmp_path))))
    for _, send in planned:
        fields = {n.lower(): v for n, v in send.headers}
        reply = origin.handle(Message(method=send.method, target=send.url.split(LAB, 1)[1], headers=fields,
                                      body=send.body or b""))
        assert reply.status == send.recorded_status, send.url
    stats = origin.stats()
    assert stats["served"] == len(planned) and stats["not_in_har"] == 0
    assert stats["fixes"] == EXPECTED[name][2]


@pytest.mark.parametrize("name", EXPECTED)
def test_a_dropped_body_keeps_the_size_decoding_it_gives(name):
    """The replay drops response bodies without decoding them (the fifth of its reading it cost): the size it
    keeps is still the decoded body's, for base64 with any padding and for non-ASCII text."""
    path = SAMPLES / f"{name}.har"
    kept, dropped = read_har(path), read_har(path, bodies="drop")
    assert [e.response.body_size for e in dropped] == [e.response.body_size for e in kept]
    assert all(e.response.body is None for e in dropped)
    for data in (b"", b"a", b"ab", b"abc", bytes(range(256)) * 3 + b"x"):
        content = {"text": base64.b64encode(data).decode(), "encoding": "base64"}
        assert dropped_body_size(content) == len(data)
    assert dropped_body_size({"text": "h\u00e9llo \u2603"}) == len("h\u00e9llo \u2603".encode())
    assert dropped_body_size({}) is None
