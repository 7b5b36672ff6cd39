"""The workloads' HTTP/1.1 layer: llhttp (httptools) reads and frames messages, the writers stay ours.

Requests (origin side) and replies (load client side) are parsed by httptools, the C parser that
uvicorn uses: fast on two cores and correct about framing (Content-Length, chunked coding,
bodies delimited by close). The writers (`request_bytes` here, the origin's reply head and paced
body in origin.py) stay hand-written because the origin must control every byte and every write
(chunk gaps, pacing).
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httptools

MAX_HEAD = 64 * 1024
MAX_BODY = 64 << 20
READ_SIZE = 1 << 16


class HttpError(Exception):
    """A message that does not parse or breaks a limit."""


@dataclass
class Message:
    """A parsed request or reply: head, body (if kept) and what the parser decided about framing."""

    method: str = ""  # requests only
    target: str = ""  # requests only
    status: int = 0  # replies only
    headers: dict[str, str] = field(default_factory=dict)  # lowercase names, repeats joined with ", "
    body: bytes = b""
    length: int = 0  # decoded body bytes seen (also when the body is not kept)
    keep_alive: bool = False  # whether the connection may carry another message after this one
    version: str = "1.1"  # the HTTP version it was sent with ("1.0", "1.1")
    head_at: float = 0.0  # event-loop time when the head was complete

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)


class _Callbacks:
    """httptools callbacks: builds Messages, enforces the head and body limits."""

    def __init__(self, keep_body: bool, one_reply: bool = False):
        self.keep_body, self.one_reply = keep_body, one_reply
        self.parser: httptools.HttpRequestParser | httptools.HttpResponseParser | None = None
        self.current = Message()
        self.parts: list[bytes] = []
        self.head_bytes = 0
        self.head_done = False
        self.in_message = False
        self.complete: deque[Message] = deque()
        self.error = ""

    def on_message_begin(self) -> None:
        if self.one_reply and self.final_done():  # bytes after the reply: the connection is spoilt
            self.complete[-1].keep_alive = False
        self.current, self.parts, self.head_bytes, self.head_done = Message(), [], 0, False
        self.in_message = True

    def final_done(self) -> bool:
        """A final reply is complete (an interim one is followed by more)."""
        return any(not is_interim(m.status) for m in self.complete)

    def _count_head(self, size: int) -> None:
        self.head_bytes += size
        if self.head_bytes > MAX_HEAD:
            self.error = "head too large"

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        self.current.target += url.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value))
        headers = self.current.headers
        key, text = name.decode("latin-1").lower(), value.decode("latin-1").strip()
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self.head_done = True
        self.current.head_at = asyncio.get_running_loop().time()
        if isinstance(self.parser, httptools.HttpRequestParser):
            self.current.method = self.parser.get_method().decode("latin-1")
        else:
            self.current.status = self.parser.get_status_code()
        self.current.keep_alive = self.parser.should_keep_alive()
        self.current.version = self.parser.get_http_version()

    def on_body(self, body: bytes) -> None:
        self.current.length += len(body)
        if self.current.length > MAX_BODY:
            self.error = "body too large"
        elif self.keep_body:
            self.parts.append(body)

    def on_message_complete(self) -> None:
        self.current.body = b"".join(self.parts)
        self.in_message = False
        self.complete.append(self.current)


def _feed(callbacks: _Callbacks, data: bytes) -> None:
    try:
        callbacks.parser.feed_data(data)
    except httptools.HttpParserUpgrade:  # CONNECT (or Upgrade): what follows is not HTTP
        if callbacks.head_done and not callbacks.complete:
            callbacks.on_message_complete()
        callbacks.complete[-1].keep_alive = False
    except httptools.HttpParserError as e:
        if callbacks.one_reply and callbacks.final_done():  # the reply is whole; what followed is junk
            callbacks.complete[-1].keep_alive = False
            return
        raise HttpError(str(e) or type(e).__name__) from e
    if callbacks.error:
        raise HttpError(callbacks.error)


class RequestReader:
    """Requests off one connection, in order (pipelined ones included), bodies kept."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader
        self.callbacks = _Callbacks(keep_body=True)
        self.callbacks.parser = httptools.HttpRequestParser(self.callbacks)

    async def next(self) -> Message | None:
        """The next request; None on a clean end of stream between requests."""
        while not self.callbacks.complete:
            data = await self.reader.read(READ_SIZE)
            if not data:
                if self.callbacks.in_message:
                    raise HttpError("connection closed inside a request")
                return None
            _feed(self.callbacks, data)
        return self.callbacks.complete.popleft()


def is_interim(status: int) -> bool:
    """A 1xx other than 101 (an upgrade): an interim response, before the final one (RFC 9110 15.2)."""
    return 100 <= status < 200 and status != 101


async def read_reply(reader: asyncio.StreamReader, method: str, keep_body: bool = False) -> Message:
    """One reply to a `method` request (the client sends one request at a time on a connection), after any
    interim (1xx) responses, which are read and passed over. A body delimited by the connection's close ends at
    end of stream (and keep_alive is False)."""
    if method == "HEAD":
        while True:
            reply = await _read_head_reply(reader)
            if not is_interim(reply.status):
                return reply
    callbacks = _Callbacks(keep_body, one_reply=True)
    callbacks.parser = httptools.HttpResponseParser(callbacks)
    while True:  # one parser: llhttp reads the final reply on from where the interim one ended
        while not callbacks.complete:
            data = await reader.read(READ_SIZE)
            if not data:
                return _ended_by_close(callbacks)
            _feed(callbacks, data)
        reply = callbacks.complete.popleft()
        if not is_interim(reply.status):
            return reply


async def _read_head_reply(reader: asyncio.StreamReader) -> Message:
    # llhttp cannot be told that a reply answers a HEAD: parse the head alone, expect no body.
    callbacks = _Callbacks(False, one_reply=True)
    callbacks.parser = httptools.HttpResponseParser(callbacks)
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        where = "inside a head" if e.partial else "before a reply"
        raise HttpError(f"connection closed {where}") from e
    except asyncio.LimitOverrunError as e:
        raise HttpError("head too large") from e
    _feed(callbacks, head)
    if not callbacks.head_done:
        raise HttpError("bad reply head")
    return callbacks.current


def _ended_by_close(callbacks: _Callbacks) -> Message:
    reply, headers = callbacks.current, callbacks.current.headers
    if not callbacks.in_message:
        raise HttpError("connection closed before a reply")
    if not callbacks.head_done or "content-length" in headers or "chunked" in headers.get("transfer-encoding", ""):
        raise HttpError("connection closed inside a reply")
    callbacks.on_message_complete()  # httptools has no llhttp_finish(): the close is the body's end
    reply.keep_alive = False
    return reply


_date_cache: list = [0, ""]


def http_date(now: float | None = None) -> str:
    """IMF-fixdate of now (cached for the current second: formatting costs more than a reply)."""
    now = time.time() if now is None else now
    second = int(now)
    if _date_cache[0] != second:
        _date_cache[0], _date_cache[1] = second, email.utils.formatdate(second, usegmt=True)
    return _date_cache[1]


def format_date(epoch: int) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


def parse_date(text: str) -> int | None:
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return int(parsed.timestamp()) if parsed else None


_DAY, _MONTH = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)", "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_WEEKDAY, _TIME = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)", r"\d\d:\d\d:\d\d"
# RFC 9110 5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept too.
_HTTP_DATE = re.compile(rf"{_DAY}, \d\d {_MONTH} \d{{4}} {_TIME} GMT"
                        rf"|{_WEEKDAY}, \d\d-{_MONTH}-\d\d {_TIME} GMT"
                        rf"|{_DAY} {_MONTH} [ \d]\d {_TIME} \d{{4}}")


def parse_http_date(text: str) -> int | None:
    """A valid HTTP-date only (parse_date also reads other forms a mail header may have, and a cache must take an
    Expires in any of them as already expired: RFC 9111 5.3); None for anything else."""
    text = text.strip()
    return parse_date(text) if _HTTP_DATE.fullmatch(text) else None


# The Multiplier's name for one client among others at its address (--order client keeps each one's order
# across its connections; it never passes the header on).
CLIENT_HEADER = "X-SPE-Client"


def request_bytes(method: str, target: str, host: str,
                  headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
                  body: bytes | None = None) -> bytes:
    """A request head and body; `headers` as a mapping, or as (name, value) pairs when a name repeats (a replayed
    recording's)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in pairs]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
