"""The workloads' HTTP/1.1 reader (httptools): framing of replies and requests, on in-memory streams."""

from __future__ import annotations

import asyncio

import pytest

from spe_tools.workload.http11 import MAX_HEAD, HttpError, RequestReader, read_reply


def stream(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


def reply(data: bytes, method: str = "GET", eof: bool = True):
    async def run():
        return await read_reply(stream(data, eof), method, keep_body=True)
    return asyncio.run(run())


def test_a_head_reply_has_no_body_whatever_its_content_length():
    r = reply(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", eof=False)
    assert (r.status, r.length, r.keep_alive) == (200, 0, True)


def test_chunked_and_close_delimited_bodies():
    chunked = reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n", eof=False)
    assert (chunked.body, chunked.length, chunked.keep_alive) == (b"abcde", 5, True)
    closed = reply(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
    assert (closed.body, closed.keep_alive) == (b"until the end", False)


def test_a_short_body_is_an_error_and_bytes_after_a_reply_spoil_the_connection():
    with pytest.raises(HttpError):
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
    spoilt = reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokjunk that is not HTTP\r\n\r\n", eof=False)
    assert (spoilt.body, spoilt.keep_alive) == (b"ok", False)


def test_interim_responses_are_passed_over_for_the_final_reply():
    hints = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
    final = reply(hints + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", eof=False)
    assert final.status == 200, "an interim response taken for the reply"
    assert (final.status, final.body, final.keep_alive) == (200, b"ok", True)  # nothing after it: not spoilt
    head = reply(hints + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", eof=False)
    assert head.status == 200, "an interim response taken for the HEAD reply"
    assert (head.status, head.length) == (200, 0)
    with pytest.raises(HttpError):  # an interim response and then nothing: no reply
        reply(hints)


def test_pipelined_requests_come_out_in_order_with_their_bodies():
    async def run():
        requests = RequestReader(stream(b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                                        b"GET /b HTTP/1.0\r\nHost: h\r\n\r\n"))
        return [await requests.next() for _ in range(3)]
    first, second, end = asyncio.run(run())
    assert (first.method, first.target, first.body, first.keep_alive) == ("POST", "/a", b"xyz", True)
    assert (second.method, second.target, second.keep_alive, end) == ("GET", "/b", False, None)


def test_a_head_over_the_limit_is_refused():
    async def run():
        return await RequestReader(stream(b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n")).next()
    with pytest.raises(HttpError, match="head too large"):
        asyncio.run(run())
