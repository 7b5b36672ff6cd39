"""The Multiplier's mismatch captures read back (spe_tools/rundir/captures.py): both reply headers and the first body
bytes, each body by its stated length whatever bytes it holds; a file without a capture's shape reads as None; the
records' reader (spe_tools/rundir/records.py) skips a half-written line."""

from __future__ import annotations

import pytest
from exportsupport import BINARY, capture_text

from spe_tools.rundir.captures import captures_by_request, read_capture
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.records import read_records, request_sequence

HEADER = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nX-Odd:value:with:colons"


def test_both_replies_read_back_with_their_fields_and_first_body_bytes(tmp_path):
    path = tmp_path / "c.txt"
    body = b"\n## Proxy reply header\nHTTP/1.1 200 OK\r\n\r\n" + BINARY  # a body that looks like the next heading
    path.write_bytes(capture_text(7, "nginx", "http://x/", (HEADER, b"", 0), ("HTTP/1.0 200", body, 9999)))
    capture = read_capture(path)
    assert (capture.collector.status, capture.collector.reason, capture.collector.http_version) == \
        (304, "Not Modified", "HTTP/1.1")
    assert capture.collector.headers == (("ETag", '"v1"'), ("X-Odd", "value:with:colons"))
    assert (capture.collector.body_head, capture.collector.body_bytes) == (b"", 0)
    assert (capture.proxy.status, capture.proxy.reason, capture.proxy.headers) == (200, "", ())
    assert (capture.proxy.body_head, capture.proxy.body_bytes) == (body, 9999)


@pytest.mark.parametrize("cut", [0, 40, -3])
def test_a_file_cut_short_or_of_another_shape_reads_as_none(tmp_path, cut):
    text = capture_text(7, "nginx", "http://x/", (HEADER, b"abc", 3), (HEADER, b"abcdef", 6))
    path = tmp_path / "c.txt"
    path.write_bytes(text[:cut] if cut else b"hello")
    capture = read_capture(path)
    if cut == -3:  # the Collector's part is whole: the proxy's reads as missing
        assert capture.collector.body_head == b"abc" and capture.proxy is None
    else:
        assert capture is None
    assert read_capture(tmp_path / "none.txt") is None


def test_a_reply_without_a_header_reads_as_none_beside_the_other(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(capture_text(7, "nginx", "http://x/", (HEADER, b"", 0), ("", b"", 0)))
    capture = read_capture(path)
    assert capture.collector.status == 304 and capture.proxy is None


def test_captures_are_found_by_request_and_proxy(tmp_path):
    run = RunDir(tmp_path)
    run.captures.mkdir()
    for rid, proxy in [(7, "nginx"), (7, "squid-twin"), (123456789, "ats")]:
        run.capture(rid, proxy).write_text("x")
    (run.captures / "notes.txt").write_text("x")
    assert run.capture(7, "nginx").name == "00000007-nginx.txt"
    assert captures_by_request(run.captures) == {7: {"nginx": run.capture(7, "nginx"),
                                                     "squid-twin": run.capture(7, "squid-twin")},
                                                 123456789: {"ats": run.capture(123456789, "ats")}}
    assert captures_by_request(tmp_path / "none") == {}


def test_records_skip_a_half_written_line_and_a_sequence_ends_at_its_target(tmp_path):
    log = tmp_path / "multiplier.jsonl"
    log.write_text('{"id": 2, "ts": 2.0, "url": "u"}\n{"id": 1, "ts": 1.0, "url": "u"}\n[1]\n'
                   '{"id": 3, "ts": 2.0, "url": "v"}\n{"id": 4, "ts": 2.0, "url": "u"}\n{"id": 5, "ts"')
    records = read_records(log)
    assert [r["id"] for r in records] == [2, 1, 3, 4]
    assert [r["id"] for r in request_sequence(records, records[0])] == [1, 2]
    assert [r["id"] for r in request_sequence(records, records[3])] == [1, 2, 4]
