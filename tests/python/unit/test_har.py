"""HAR 1.2 read and written (spe_tools/workload/har/archive.py): what a DevTools export holds comes back as exchanges,
bodies decoded, entries in time order; what SPE writes reads back the same."""

from __future__ import annotations

import base64
import json

import pytest

from spe_tools.workload.har.archive import (
    HarEntry,
    HarError,
    HarRequest,
    HarResponse,
    lab_url,
    recorded_url,
    write_har,
)
from spe_tools.workload.har.read import read_har

DEVTOOLS_EXPORT = {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "entries": [
    {"startedDateTime": "2026-11-28T13:00:01.500+01:00", "time": 40.5,
     "request": {"method": "GET", "url": "http://localhost:8080/logo.png", "httpVersion": "HTTP/1.1",
                 "headers": [{"name": "Accept", "value": "image/*"}], "queryString": [], "cookies": [],
                 "headersSize": -1, "bodySize": 0},
     "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                  "headers": [{"name": "Cache-Control", "value": "max-age=60"},
                              {"name": "Set-Cookie", "value": "a=1"}, {"name": "Set-Cookie", "value": "b=2"}],
                  "cookies": [], "content": {"size": 3, "mimeType": "image/png",
                                             "text": base64.b64encode(b"\x89PN").decode(), "encoding": "base64"},
                  "redirectURL": "", "headersSize": -1, "bodySize": 3},
     "cache": {}, "timings": {"send": 0.1, "wait": 30.2, "receive": 10.2}, "connection": "1234"},
    {"startedDateTime": "2026-11-28T12:00:00.000Z", "time": 12,
     "request": {"method": "POST", "url": "http://localhost:8080/form", "httpVersion": "HTTP/1.1",
                 "headers": [], "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 3,
                 "postData": {"mimeType": "text/plain", "text": "a=b"}},
     "response": {"status": 204, "statusText": "No Content", "httpVersion": "HTTP/1.1", "headers": [],
                  "cookies": [], "content": {"size": 512, "mimeType": "text/html"}, "redirectURL": "",
                  "headersSize": -1, "bodySize": -1},
     "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 7}},
]}}


def test_a_devtools_export_reads_as_exchanges_in_time_order(tmp_path):
    path = tmp_path / "site.har"
    path.write_text("\ufeff" + json.dumps(DEVTOOLS_EXPORT), encoding="utf-8")  # DevTools may write a BOM
    post, image = read_har(path)
    assert (post.request.method, post.request.body, post.response.status) == ("POST", b"a=b", 204)
    assert post.response.body is None and post.response.body_size == 512  # the body was not kept
    assert post.started == 1795867200.0 and post.connection is None
    assert image.started == 1795867201.5  # 13:00:01.5 at +01:00
    assert image.response.body == b"\x89PN" and image.response.headers[1:] == [("Set-Cookie", "a=1"),
                                                                               ("Set-Cookie", "b=2")]
    assert (image.wait_ms, image.time_ms, image.connection) == (30.2, 40.5, "1234")


def test_what_spe_writes_reads_back_the_same(tmp_path):
    entries = [HarEntry(1795953600.25, HarRequest("PUT", "http://localhost:1/x", headers=[("Content-Type", "a/b")],
                                                  body=b"\xff\x00"),
                        HarResponse(201, "Created", headers=[("ETag", '"1"')], body="é".encode(), body_size=2,
                                    mime_type="text/plain"), time_ms=9, wait_ms=4, connection="7", pageref="p1"),
               HarEntry(1795953601.0, HarRequest("GET", "http://localhost:1/y"),
                        HarResponse(304, "Not Modified", body=None, body_size=-1), time_ms=1, wait_ms=1)]
    path = tmp_path / "out.har"
    write_har(path, entries)
    back = read_har(path)
    assert [(e.started, e.request, e.response, e.wait_ms, e.connection, e.pageref) for e in back] == \
        [(e.started, e.request, e.response, e.wait_ms, e.connection, e.pageref) for e in entries]


@pytest.mark.parametrize("doc, message", [
    ({"entries": []}, "no log.entries"),
    ({"log": {"entries": [{"startedDateTime": "yesterday", "request": {"method": "GET", "url": "u"},
                           "response": {"status": 200}}]}}, "entry 0: startedDateTime 'yesterday'"),
    ({"log": {"entries": [{"startedDateTime": "2026-11-28T12:00:00Z", "request": {"url": "u"},
                           "response": {"status": 200}}]}}, "entry 0: request.method is missing"),
    ({"log": {"entries": [{"startedDateTime": "2026-11-28T12:00:00Z", "request": {"method": "GET", "url": "u"},
                           "response": {"status": 200, "content": {"text": "!!", "encoding": "base64"}}}]}},
     "entry 0: response.content.text is not valid base64"),
])
def test_a_file_that_cannot_be_replayed_says_where(tmp_path, doc, message):
    path = tmp_path / "bad.har"
    path.write_text(json.dumps(doc))
    with pytest.raises(HarError, match=message):
        read_har(path)


def test_every_recorded_host_is_asked_for_at_the_labs_one_origin_and_found_again():
    url = lab_url("https://www.example.org:8443/a/b.css?v=1&x=%20", "localhost:9000")
    assert url == "http://localhost:9000/_har/https/www.example.org:8443/a/b.css?v=1&x=%20"
    assert recorded_url(url) == recorded_url("/_har/https/www.example.org:8443/a/b.css?v=1&x=%20") == \
        "https://www.example.org:8443/a/b.css?v=1&x=%20"
    assert recorded_url(lab_url("http://example.com", "localhost:9000")) == "http://example.com/"
    assert recorded_url("/other/path") is None and recorded_url("/_har/ftp/x/y") is None
    with pytest.raises(HarError):
        lab_url("/relative", "localhost:9000")
