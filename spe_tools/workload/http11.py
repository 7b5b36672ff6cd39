"""A lean HTTP/1.1 message layer over asyncio streams, shared by the origin, load client and replayer.

Only what the workloads need: one head parser (pure), bodies framed by Content-Length, chunked
coding or connection close, bounded sizes. Written by hand rather than with a framework so the
origin controls every byte and every write (chunk gaps, pacing) and stays fast on two cores.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass, field

MAX_HEAD = 64 * 1024
MAX_BODY = 64 << 20
NO_BODY_STATUSES = frozenset({204, 304})


class HttpError(Exception):
    """A message that does not parse or breaks a limit."""


@dataclass
class Message:
    """A parsed request or reply head, plus its body once read."""

    start: list[str]  # request: method, target, version; reply: version, status, reason
    headers: dict[str, str]  # lowercase names, repeats joined with ", "
    body: bytes = b""
    meta: dict = field(default_factory=dict)

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)

    @property
    def keep_alive(self) -> bool:
        """Whether the connection may carry another message after this one."""
        connection = self.headers.get("connection", "").lower()
        version = self.start[0] if self.start[0].startswith("HTTP/") else self.start[2]
        if "close" in connection:
            return False
        return version == "HTTP/1.1" or "keep-alive" in connection


def parse_head(data: bytes) -> Message:
    """The start line and headers of one message (`data` ends with the blank line)."""
    try:
        text = data.decode("latin-1")
    except UnicodeDecodeError as e:  # pragma: no cover - latin-1 decodes every byte
        raise HttpError(str(e)) from e
    lines = text.split("\r\n") if "\r\n" in text else text.split("\n")
    start = lines[0].split(" ", 2)
    if len(start) != 3:
        raise HttpError(f"bad start line {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(f"bad header line {line[:80]!r}")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return Message(start, headers)


async def read_head(reader: asyncio.StreamReader) -> Message | None:
    """The next head on the stream; None on a clean end of stream before any byte."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise HttpError("connection closed inside a head") from e
    except asyncio.LimitOverrunError as e:
        raise HttpError("head too large") from e
    return parse_head(data)


def content_length(msg: Message) -> int | None:
    value = msg.headers.get("content-length")
    if value is None:
        return None
    if not value.isdigit() or int(value) > MAX_BODY:
        raise HttpError(f"bad Content-Length {value[:40]!r}")
    return int(value)


async def read_chunked(reader: asyncio.StreamReader, keep: bool = True) -> tuple[bytes, int]:
    """Decode a chunked body: (body if keep else b"", decoded length)."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as e:
            raise HttpError(f"bad chunk size {size_text[:20]!r}") from e
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(parts), total
        total += size
        if total > MAX_BODY:
            raise HttpError("chunked body too large")
        data = await reader.readexactly(size + 2)
        if keep:
            parts.append(data[:-2])


async def read_request_body(reader: asyncio.StreamReader, msg: Message) -> None:
    if "chunked" in msg.headers.get("transfer-encoding", "").lower():
        msg.body, _ = await read_chunked(reader)
    else:
        length = content_length(msg) or 0
        msg.body = await reader.readexactly(length) if length else b""


async def read_reply_body(reader: asyncio.StreamReader, reply: Message, method: str, keep: bool = False) -> int:
    """Read (and by default discard) a reply's body; returns its length. Sets meta['close'] when
    the body ends with the connection."""
    status = int(reply.start[1])
    if method == "HEAD" or status in NO_BODY_STATUSES or status < 200:
        return 0
    if "chunked" in reply.headers.get("transfer-encoding", "").lower():
        reply.body, length = await read_chunked(reader, keep)
        return length
    length = content_length(reply)
    if length is None:  # delimited by close
        data = await reader.read(MAX_BODY)
        reply.meta["close"] = True
        total = len(data)
        while data:
            if keep:
                reply.body += data
            data = await reader.read(MAX_BODY)
            total += len(data)
        return total
    remaining = length
    parts = []
    while remaining:
        data = await reader.read(min(remaining, 1 << 20))
        if not data:
            raise HttpError("connection closed inside a body")
        remaining -= len(data)
        if keep:
            parts.append(data)
    reply.body = b"".join(parts)
    return length


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


def request_bytes(method: str, target: str, host: str, headers: dict[str, str] | None = None,
                  body: bytes | None = None) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
