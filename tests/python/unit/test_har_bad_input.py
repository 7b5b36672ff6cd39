"""Bad input in HAR files, as browsers and tools write it (har_entry.py, har_read.py): what can be put right is, and
counted, in the replay's summary and the origin's /_stats alike; a file that cannot be used is one HarError naming
the entry and the field, and on the command line one message and exit 2, no traceback."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path

import pytest

from spe_tools.workload import har_origin, replay
from spe_tools.workload.har import reply as har_reply
from spe_tools.workload.har.archive import HarError, lab_url
from spe_tools.workload.har.bodies import BodyStore
from spe_tools.workload.har.entry import parse_entry
from spe_tools.workload.har.read import read_har, read_har_file
from spe_tools.workload.har.replay import body_sent, plan_har
from spe_tools.workload.har_origin import HarOrigin, load_index
from spe_tools.workload.http11 import Message

STARTED = "2026-11-28T12:00:00.000Z"
URL = "http://localhost:8080/a"


def raw(request: dict | None = None, response: dict | None = None, **entry: object) -> dict:
    """An entry as a DevTools export has it, with `request`/`response` fields replaced or added."""
    return {"startedDateTime": STARTED, "time": 10,
            "request": {"method": "GET", "url": URL, "httpVersion": "HTTP/1.1", "headers": [], **(request or {})},
            "response": {"status": 200, "statusText": "OK", "headers": [],
                         "content": {"size": 2, "mimeType": "text/plain", "text": "ok"}, **(response or {})},
            "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 5}, **entry}


def har(*entries: dict) -> dict:
    return {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": list(entries)}}


def write(path: Path, doc: object) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def headers(*pairs: tuple[str, str]) -> list[dict]:
    return [{"name": n, "value": v} for n, v in pairs]


def test_unknown_sizes_and_timings_and_a_left_out_body_are_read_and_counted():
    fixes: Counter = Counter()
    entry = parse_entry(raw(response={"content": {"size": -1, "mimeType": "image/png"},
                                      "headers": headers(("Content-Length", "40"))},
                            time=-1, timings={"send": -1, "wait": -1, "receive": -1}), 0, fixes=fixes)
    assert entry.response.body is None and entry.response.body_size == -1 and entry.wait_ms == -1
    assert fixes == {"no_body": 1, "no_size": 1, "no_wait": 1}
    prepared = har_reply.prepare(entry, 0)
    assert len(prepared.body) == 40 and prepared.filler and prepared.wait_ms == 0  # Content-Length's size, no wait
    # a 304 and a HEAD have no body to leave out: nothing to count
    fixes.clear()
    parse_entry(raw(response={"status": 304, "content": {"size": 0}}), 1, fixes=fixes)
    parse_entry(raw(request={"method": "HEAD"}, response={"content": {"size": -1}}), 2, fixes=fixes)
    assert fixes == {}


def test_underscore_extensions_are_read_past_and_what_the_browsers_cache_answered_is_not_replayed():
    fixes: Counter = Counter()
    cached = parse_entry(raw(_fromCache="memory", _initiator={"type": "parser"}, _priority="High",
                             response={"_transferSize": 0, "content": {"size": 2, "text": "ok", "_x": 1}}), 0,
                         fixes=fixes)
    plain = parse_entry(raw(), 1, fixes=fixes)
    assert fixes == {"extensions": 1} and cached.from_cache == "memory" and plain.from_cache is None
    planned, refused = plan_har([plain, cached], "c", None, 1.0, False)
    assert len(planned) == 1 and refused == {"answered from the browser's cache (_fromCache)": 1}


def test_http2_pseudo_headers_are_dropped_and_authority_becomes_the_host():
    fixes: Counter = Counter()
    h2 = parse_entry(raw(request={"httpVersion": "h2", "headers": headers(
        (":method", "GET"), (":authority", "shop.example"), (":scheme", "https"), (":path", "/a"),
        ("accept", "*/*"))}, response={"headers": headers((":status", "200"), ("content-type", "text/plain"))}), 0,
        fixes=fixes)
    assert h2.request.headers == [("Host", "shop.example"), ("accept", "*/*")]
    assert h2.response.headers == [("content-type", "text/plain")]
    with_host = parse_entry(raw(request={"headers": headers((":authority", "a.example"), ("host", "b.example"))}),
                            1, fixes=fixes)
    assert with_host.request.headers == [("host", "b.example")]  # the recorded Host stays
    assert fixes == {"pseudo_headers": 3, "authority_to_host": 1}


def test_duplicate_fields_as_tools_write_them():
    fixes: Counter = Counter()
    entry = parse_entry(raw(request={"headers": headers(("Host", "localhost:8080"), ("Host", "localhost:8080"),
                                                        ("Accept", "a/b"), ("Accept", "c/d"))},
                            response={"headers": headers(
                                # Firefox: repeated fields joined by newlines
                                ("Set-Cookie", "a=1\nb=2; Path=/"),
                                # mitmproxy's har_dump: Set-Cookie fields joined by ", " (not inside a date)
                                ("Set-Cookie", "c=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT, d=4; Path=/"),
                                ("Content-Type", "text/plain"), ("content-type", "text/html"),
                                ("Vary", "Accept"), ("Vary", "Cookie"))}), 0, fixes=fixes)
    assert entry.request.headers == [("Host", "localhost:8080"), ("Accept", "a/b"), ("Accept", "c/d")]
    assert entry.response.headers == [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2; Path=/"),
                                      ("Set-Cookie", "c=3; Expires=Wed, 21 Oct 2037 07:28:00 GMT"),
                                      ("Set-Cookie", "d=4; Path=/"), ("Content-Type", "text/plain"),
                                      ("Vary", "Accept"), ("Vary", "Cookie")]
    assert fixes == {"duplicate_fields": 2, "split_fields": 2}


def test_a_content_length_that_disagrees_with_the_body_loses_and_is_counted_on_both_sides():
    response = parse_entry(raw(response={"headers": headers(("Content-Length", "999"))}), 0)
    assert har_reply.prepare(response, 0).length_fixed
    assert not har_reply.prepare(parse_entry(raw(response={"headers": headers(("Content-Length", "2"))}), 1),
                                 0).length_fixed
    fixes: Counter = Counter()
    post = parse_entry(raw(request={"method": "POST", "headers": headers(("Content-Length", "999")),
                                    "postData": {"mimeType": "text/plain", "text": "item=7"}}), 2)
    lost = parse_entry(raw(request={"method": "POST", "headers": headers(("Content-Length", "6"))}), 3)
    assert body_sent(post, fixes) == b"item=7" and body_sent(lost, fixes) == b""
    assert fixes == {"content_length": 2, "request_body_missing": 1}


def test_a_form_recorded_as_params_only_is_sent_url_encoded():
    fixes: Counter = Counter()
    entry = parse_entry(raw(request={"method": "POST", "postData": {
        "mimeType": "application/x-www-form-urlencoded", "params": [{"name": "q", "value": "a b"},
                                                                    {"name": "n", "value": "7"}]}}), 0, fixes=fixes)
    assert entry.request.body == b"q=a+b&n=7" and fixes == {"body_from_params": 1}


def test_the_origin_and_the_replay_report_what_was_put_right(tmp_path):
    path = write(tmp_path / "site.har", har(
        raw(request={"headers": headers((":authority", "localhost:8080"))}, timings={"wait": -1}),
        raw(request={"url": "http://localhost:8080/b"}, response={"headers": headers(("Content-Length", "7"))})))
    origin = HarOrigin(load_index([path], 0, BodyStore()))
    for target in ("/a", "/b"):
        assert origin.handle(Message(method="GET", target=target, headers={}, body=b"")).status == 200
    stats = origin.stats()
    assert stats["fixes"] == {"pseudo_headers": 1, "authority_to_host": 1, "no_wait": 1}
    assert stats["length_fixed"] == 1
    recording = read_har_file(path, bodies="drop")
    assert recording.fixes == stats["fixes"] and all(e.response.body is None for e in recording.entries)


def test_bodies_are_spilled_out_of_memory_and_served_from_the_spill_file(tmp_path):
    png = bytes(range(256)) * 4
    path = write(tmp_path / "site.har", har(raw(response={"content": {
        "size": len(png), "mimeType": "image/png", "text": base64.b64encode(png).decode(), "encoding": "base64"}})))
    store = BodyStore(str(tmp_path))
    origin = HarOrigin(load_index([path], 0, store))
    (recorded,) = origin.index.sequences.values()
    assert recorded[0].entry.response.body is None and recorded[0].entry.response.spilled is not None
    assert store.size == len(png) and list(tmp_path.iterdir()) == [path]  # the spill file is unlinked
    reply = origin.handle(Message(method="GET", target="/a", headers={}, body=b""))
    assert reply.body == png and store.size == len(png)  # sent as recorded: no second copy


ENTRY_ERRORS = [
    (raw(request={"url": None}), "entry 1: request.url is missing"),
    (raw(request={"url": ""}), "entry 1: request.url is no text"),
    (raw(request={"method": "GE T"}), "entry 1: request.method 'GE T' is no HTTP method"),
    (raw(request={"method": 7}), "entry 1: request.method is no string"),
    (raw(response={"status": "200"}), "entry 1: response.status '200' is no status"),
    (raw(response={"status": 700}), "entry 1: response.status 700 is no status"),
    (raw(response={"status": None}), "entry 1: response.status is missing"),
    (raw(request={"headers": [{"value": "x"}]}), r"entry 1: request.headers\[0\] has no name"),
    (raw(request={"headers": {"Host": "x"}}), "entry 1: request.headers is no list"),
    (raw(response={"content": {"text": "!!", "encoding": "base64"}}),
     "entry 1: response.content.text is not valid base64"),
    (raw(startedDateTime="yesterday"), "entry 1: startedDateTime 'yesterday' is no ISO 8601 time"),
    ({"startedDateTime": STARTED, "request": {"method": "GET", "url": URL}}, "entry 1: response is missing"),
    ("an entry", "entry 1 is no JSON object"),
]


@pytest.mark.parametrize("entry, message", ENTRY_ERRORS)
def test_an_entry_that_cannot_be_used_is_named_by_its_index_and_field(tmp_path, entry, message):
    path = write(tmp_path / "bad.har", har(raw(), entry))
    with pytest.raises(HarError, match=f"^{path}: {message}"):
        read_har(path)


@pytest.mark.parametrize("text, message", [
    ("not json", "not a readable JSON file: before its first entry"),
    (json.dumps(har(raw(), raw()))[:-40], "not a readable JSON file: in or after entry 1"),
    ("{}", "no log.entries"),
    ('{"log": {"entries": {}}}', "log.entries is no list"),
    ("[1, 2]", "no log.entries"),
    ("\udcff", "not a readable JSON file"),  # bytes that are no UTF-8
])
def test_a_file_that_is_no_har_says_so(tmp_path, text, message):
    path = tmp_path / "bad.har"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(HarError, match=message):
        read_har(path)


def test_a_bom_and_an_empty_recording_are_fine(tmp_path):
    path = tmp_path / "bom.har"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(har(raw())).encode())
    assert [e.request.url for e in read_har(path)] == [URL]
    assert read_har(write(tmp_path / "empty.har", har())) == []


@pytest.mark.parametrize("command", ["replay", "origin"])
def test_on_the_command_line_one_message_and_exit_2(tmp_path, capsys, command):
    path = write(tmp_path / "bad.har", har(raw(), raw(request={"method": "GE T"})))
    main = {"replay": lambda: replay.main([str(path), "--via", "127.0.0.1:9"]),
            "origin": lambda: har_origin.main(["--har", str(path), "--listen", "127.0.0.1:0"])}[command]
    with pytest.raises(SystemExit) as stop:
        main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith(f"error: {path}: entry 1: request.method 'GE T' is no HTTP method")


def test_a_lab_url_of_a_bad_entry_is_refused_not_raised():
    entry = parse_entry(raw(request={"url": "blob:http://localhost/x"}), 0)
    planned, refused = plan_har([entry], "c", "localhost:9", 1.0, False)
    assert planned == [] and refused == {"not an http(s) URL": 1}
    with pytest.raises(HarError):
        lab_url(entry.request.url, "localhost:9")
