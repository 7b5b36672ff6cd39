"""`browse --har` without a browser: DevTools events that Chromium 156 sent while loading a page through Squid
(tests/fixtures/chromium_network_events.json) become one HAR entry per hop, with the headers as they went over the
wire (cookies included), the bodies Chromium gave, its timings and connection ids; what the recording leaves out is
counted (spe_tools/workload/har/events.py, har_recorder.py; with headless Chromium: browser/test_browse_har.py)."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from conftest import ROOT

from spe_tools.workload.har.events import har_entries, har_pages, header_pairs, parse_headers_text
from spe_tools.workload.har.read import read_har
from spe_tools.workload.har.recorder import HarRecorder

CAPTURE = json.loads((ROOT / "tests/fixtures/chromium_network_events.json").read_text())
PAGE = "http://127.0.0.1:34211/page.html"
PNG = base64.b64decode(CAPTURE["bodies"]["31427.2"]["body"])


def record(events: list, bodies: dict, post_data: dict | None = None, url: str = PAGE) -> tuple[HarRecorder, list]:
    """The events through a recorder as a page session delivers them, its DevTools commands answered from
    `bodies` (getResponseBody) and `post_data` (getRequestPostData); any other request fails as in Chromium
    when it no longer holds the resource. Returns the recorder and the commands it sent."""
    calls: list[tuple[str, str]] = []

    async def call(method: str, params: dict) -> dict:
        calls.append((method, params["requestId"]))
        answers = bodies if method == "Network.getResponseBody" else post_data or {}
        if params["requestId"] not in answers:
            raise RuntimeError("DevTools error: {'code': -32000, 'message': 'No resource with given identifier'}")
        return answers[params["requestId"]]

    async def run() -> HarRecorder:
        recorder = HarRecorder(call)
        recorder.begin_page(url)
        for method, params in events:
            recorder.on_event(method, params)
            await asyncio.sleep(0)  # the body requests run between events, as they do beside a live tab
        await recorder.settle(deadline_s=0)
        return recorder

    return asyncio.run(run()), calls


def captured() -> list:
    return har_entries(record(CAPTURE["events"], CAPTURE["bodies"])[0].log)


def test_every_hop_is_an_entry_in_time_order_with_its_page():
    entries = captured()
    assert [(e.request.method, e.request.url.rsplit("/", 1)[1], e.response.status) for e in entries] == [
        ("GET", "page.html", 200), ("GET", "a.png", 200), ("GET", "old.png", 302), ("GET", "new.png", 200),
        ("POST", "submit", 200)]
    assert [e.started for e in entries] == [1795872911.582281, 1795872911.66848, 1795872911.687182,
                                            1795872911.715698, 1795872911.726918]
    assert {e.pageref for e in entries} == {"page_1"}
    assert [e.connection for e in entries] == ["35", "35", "43", "35", "43"]


def test_headers_are_those_on_the_wire_cookies_included():
    page, image, moved, new, post = captured()
    # headersText: the status line and every field in order, both Set-Cookie fields kept
    assert page.response.headers == [("Content-Type", "text/html"), ("Content-Length", "218"),
                                     ("Set-Cookie", "session=abc123; Path=/"), ("Set-Cookie", "theme=dark; Path=/")]
    assert (page.response.http_version, page.response.reason) == ("HTTP/1.1", "OK")
    # requestWillBeSentExtraInfo has the Cookie and Host that requestWillBeSent leaves out
    assert ("Cookie", "session=abc123; theme=dark") in image.request.headers
    assert ("Host", "127.0.0.1:34211") in image.request.headers
    # each hop of the redirect has its own ExtraInfo, in order
    assert ("Location", "/new.png") in moved.response.headers and moved.response.reason == "Found"
    assert ("Content-Type", "image/png") in new.response.headers
    assert ("Cookie", "session=abc123; theme=dark") in post.request.headers


def test_bodies_are_the_bytes_chromium_gave():
    page, image, moved, new, post = captured()
    assert page.response.body == CAPTURE["bodies"][next(iter(CAPTURE["events"]))[1]["requestId"]]["body"].encode()
    assert image.response.body == new.response.body == PNG and image.response.mime_type == "image/png"
    assert (moved.response.body, moved.response.body_size) == (None, -1)  # Chromium keeps no redirect body
    assert post.request.body == b"\x00\xff\x01\x80"  # postDataEntries' bytes, not the lossy postData text
    assert post.response.body == b"got 4"


def test_timings_and_pages_come_from_chromiums_clocks():
    page = captured()[0]
    # sendStart 19.738, sendEnd 21.517, receiveHeadersEnd 30.238 ms after requestTime 15051.991582 s;
    # loadingFinished at 15052.025331 s
    assert page.timings == {"blocked": 19.738, "dns": -1, "connect": -1, "ssl": -1, "send": 1.779, "wait": 8.721,
                            "receive": 3.511}
    assert (page.wait_ms, page.time_ms) == (8.721, 33.749)
    recorder, _ = record(CAPTURE["events"], CAPTURE["bodies"])
    (first,) = har_pages(recorder.log)
    # from the document request (15051.981243 s) to DOMContentLoaded and the load event
    assert (first.id, first.title, first.started) == ("page_1", PAGE, 1795872911.582281)
    assert (first.on_content_load_ms, first.on_load_ms) == (213.992, 215.831)


def test_the_file_reads_back_with_its_pages(tmp_path):
    recorder, calls = record(CAPTURE["events"], CAPTURE["bodies"])
    assert sorted(calls) == sorted(("Network.getResponseBody", rid) for rid in CAPTURE["bodies"])
    counts = recorder.write(tmp_path / "page.har")
    assert counts == {"entries": 5, "bodies_missing": 0, "failed": 0, "from_cache": 0, "unfinished": 0}
    back = read_har(tmp_path / "page.har")
    assert [(e.request, e.response, e.connection, e.pageref) for e in back] == \
        [(e.request, e.response, e.connection, e.pageref) for e in captured()]
    log = json.loads((tmp_path / "page.har").read_text())["log"]
    assert log["pages"][0]["id"] == "page_1" and log["entries"][0]["timings"]["wait"] == 8.721


def sent(rid: str, url: str, wall: float, method: str = "GET", **request: object) -> list:
    return ["Network.requestWillBeSent", {"requestId": rid, "request": {"url": url, "method": method, "headers": {},
                                                                         **request},
                                         "timestamp": wall - 1795870000, "wallTime": wall, "type": "Fetch"}]


def received(rid: str, status: int, **response: object) -> list:
    return ["Network.responseReceived", {"requestId": rid, "timestamp": 0, "hasExtraInfo": False, "response": {
        "url": "", "status": status, "statusText": "", "headers": {"Content-Type": "text/plain"},
        "mimeType": "text/plain", "connectionId": 9, "protocol": "h2", **response}}]


def ended(rid: str, method: str = "Network.loadingFinished") -> list:
    return [method, {"requestId": rid, "timestamp": 0}]


def test_what_the_recording_leaves_out_is_counted(tmp_path):
    events = [
        sent("gone", "http://a.test/gone", 1.0), received("gone", 200),
        ["Network.dataReceived", {"requestId": "gone", "dataLength": 1234}], ended("gone"),
        sent("failed", "http://a.test/failed", 2.0), ended("failed", "Network.loadingFailed"),
        sent("cached", "http://a.test/cached", 3.0), ["Network.requestServedFromCache", {"requestId": "cached"}],
        received("cached", 200), ended("cached"),
        sent("disk", "http://a.test/disk", 4.0), received("disk", 200, fromDiskCache=True), ended("disk"),
        sent("data", "data:text/plain,x", 5.0), received("data", 200), ended("data"),
        sent("running", "http://a.test/slow", 6.0),
    ]
    recorder, _ = record(events, bodies={"cached": {"body": "x"}, "disk": {"body": "x"}, "data": {"body": "x"}})
    (gone,) = har_entries(recorder.log)
    # Chromium no longer held the body: the entry has none, and the size of what was received
    assert (gone.request.url, gone.response.body, gone.response.body_size) == ("http://a.test/gone", None, 1234)
    assert gone.response.http_version == "HTTP/2" and gone.connection == "9"
    assert recorder.write(tmp_path / "out.har") == {"entries": 1, "bodies_missing": 1, "failed": 1,
                                                     "from_cache": 2, "unfinished": 1}


def test_a_304_has_no_body_and_a_body_not_sent_along_is_asked_for():
    events = [
        sent("revalidated", "http://a.test/", 1.0), received("revalidated", 304), ended("revalidated"),
        sent("upload", "http://a.test/up", 2.0, method="PUT", hasPostData=True), received("upload", 201),
        ended("upload"),
    ]
    recorder, calls = record(events, bodies={"revalidated": {"body": "the cached body"}, "upload": {"body": ""}},
                             post_data={"upload": {"postData": base64.b64encode(b"\x01big").decode(),
                                                   "base64Encoded": True}})
    not_modified, upload = har_entries(recorder.log)
    assert (not_modified.response.body, not_modified.response.body_size) == (b"", 0)  # none on the wire
    assert ("Network.getRequestPostData", "upload") in calls and upload.request.body == b"\x01big"


def test_a_revalidation_of_chromiums_own_copy_is_the_304_the_server_sent():
    """Chromium reports the cached 200 it merged the server's 304 into (responseReceived); only ExtraInfo has
    what came over the wire. Recorded as a 200, a replay's origin answered the same conditional request 304 and
    every reload of a real site counted as a status mismatch (browser/test_real_site_har.py)."""
    wire = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nX-Cache: MISS from squid\r\n\r\n"
    events = [
        sent("reload", "http://a.test/logo.svg", 1.0, headers={"If-None-Match": '"v1"'}),
        ["Network.responseReceived", {**received("reload", 200, headers={"ETag": '"v1"'})[1], "hasExtraInfo": True}],
        ["Network.responseReceivedExtraInfo", {"requestId": "reload", "statusCode": 304, "headersText": wire,
                                               "headers": {"ETag": '"v1"'}}],
        ended("reload"),
    ]
    (entry,) = har_entries(record(events, bodies={"reload": {"body": "<svg/>"}})[0].log)  # the cached body
    assert (entry.response.status, entry.response.body, entry.response.body_size) == (304, b"", 0)
    assert entry.response.headers == [("ETag", '"v1"'), ("X-Cache", "MISS from squid")]


@pytest.mark.parametrize("headers, pairs", [
    ({"Set-Cookie": "a=1\nb=2", "Vary": "Cookie"}, [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Vary", "Cookie")]),
    ({":status": "200", "content-type": "text/html"}, [("content-type", "text/html")]),  # HTTP/2 pseudo-headers
    (None, []),
])
def test_devtools_header_objects_become_fields(headers, pairs):
    assert header_pairs(headers) == pairs


def test_a_received_head_keeps_its_order_and_folded_lines():
    assert parse_headers_text("HTTP/1.0 200 Fine\r\nB: 1\r\nA: 2\r\n  more\r\nB: 3\r\n\r\n") == \
        ("HTTP/1.0 200 Fine", [("B", "1"), ("A", "2 more"), ("B", "3")])
