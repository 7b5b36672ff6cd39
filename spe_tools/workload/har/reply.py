"""One recorded HAR response as the HAR origin sends it now (pure: no sockets, no clock but the offset given).

What a recording holds is not what can go on the wire as is: its framing fields (Content-Length,
Transfer-Encoding) and hop-by-hop ones describe the recorded connection, an HTTP/2 recording adds pseudo-fields
(":status"), DevTools keeps bodies decoded under a Content-Encoding that says otherwise, and its dates are the
recording's. So: the fields in recorded order without those, each absolute date moved by the recording's offset,
the body (or a filler of the recorded size where the HAR left it out) encoded as its Content-Encoding says.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from spe_tools.workload.har.archive import FIELD_NAME, HarEntry, connection_listed
from spe_tools.workload.har.bodies import BodyStore, Spilled
from spe_tools.workload.http11 import format_date, parse_http_date

# Hop-by-hop fields (RFC 9110 7.6.1) and the framing the server sets itself from the body it sends.
NOT_FORWARDED = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length"})
SHIFTED = frozenset({"date", "expires", "last-modified"})  # absolute dates moved to now; Age stays as recorded
# What a 304 carries of the full response (RFC 9110 15.4.5, and Last-Modified, which a cache validates with).
NOT_MODIFIED_FIELDS = ("etag", "last-modified", "cache-control", "expires", "vary", "date", "content-location")
NO_BODY = frozenset({204, 304})
CONDITIONAL = frozenset({"if-none-match", "if-modified-since"})
LAST_DATE = 253402300799  # 9999-12-31 23:59:59: an HTTP-date has four digits of year


def _brotli() -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]] | None:
    """br only where a module for it is installed already: the project adds no dependency for it."""
    try:
        import brotli  # type: ignore[import-not-found]
    except ImportError:
        return None
    return brotli.compress, brotli.decompress


def _gzip(body: bytes) -> bytes:
    return gzip.compress(body, mtime=0)  # mtime 0: the same bytes on every start


# Content codings the origin can apply: name -> (encode, decode).
CODECS: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "gzip": (_gzip, gzip.decompress), "x-gzip": (_gzip, gzip.decompress),
    "deflate": (zlib.compress, zlib.decompress)} | ({"br": br} if (br := _brotli()) else {})


@dataclass(frozen=True)
class Prepared:
    """A recorded response ready to send: what the wire gets, and what the origin counts about it."""

    status: int
    reason: str
    fields: tuple[tuple[str, str], ...]  # in recorded order, dates moved, Content-Encoding as sent
    body: bytes | Spilled  # Spilled: in the origin's spill file (har_bodies.body_bytes reads it)
    wait_ms: float  # the recorded server time (timings.wait), 0 when unknown
    filler: bool = False  # the HAR left the body out: `body` is filler of the recorded size
    coding: str = ""  # "reencoded": the body was encoded as Content-Encoding says; "dropped": that field was
    conditional: bool = False  # the recorded request was conditional (a recorded 304 answers only such a one)
    length_fixed: bool = False  # the recorded Content-Length disagreed with the body: the body's length is sent

    def field(self, name: str) -> str | None:
        """The first value of a field (names compared case-insensitively)."""
        return next((v for n, v in self.fields if n.lower() == name), None)

    @property
    def etag(self) -> str | None:
        return self.field("etag")

    @property
    def last_modified(self) -> int | None:
        value = self.field("last-modified")
        return parse_http_date(value) if value is not None else None


def date_offset(started: list[float], now: float) -> int:
    """What one recording's dates are moved by: now less its first startedDateTime, in whole seconds."""
    return round(now - min(started)) if started else 0


def shift_date(value: str, offset: int) -> str:
    """A valid HTTP-date moved by `offset` seconds (IMF-fixdate); anything else as recorded: an invalid Expires
    ("0") means "already expired" to a cache, and must keep meaning it."""
    moved = parse_http_date(value)
    return value if moved is None else format_date(max(0, min(LAST_DATE, moved + offset)))


def _wire_text(value: str) -> str:
    """A value the head can carry: HAR values are text; one outside Latin-1 goes out as its UTF-8 bytes."""
    try:
        value.encode("latin-1")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8").decode("latin-1")


def sent_fields(headers: list[tuple[str, str]], offset: int) -> list[tuple[str, str]]:
    """The recorded fields that go on the wire, in order: no hop-by-hop or framing field, no field Connection
    names, no HTTP/2 pseudo-field, no name that is no token; one field per line of a value (Firefox joins
    repeated Set-Cookie fields with newlines); dates moved by `offset`."""
    listed = connection_listed(headers)
    out = []
    for name, value in headers:
        key = name.lower()
        if key in NOT_FORWARDED or key in listed or not FIELD_NAME.fullmatch(name):
            continue
        for line in filter(None, (part.strip() for part in value.splitlines())):
            out.append((name, _wire_text(shift_date(line, offset) if key in SHIFTED else line)))
    return out


def filler(url: str, size: int) -> bytes:
    """`size` bytes that depend only on the URL: the same on every fetch, another URL's differ."""
    seed = hashlib.sha256(url.encode()).hexdigest().encode()
    return (seed * (size // len(seed) + 1))[:size]


def _codings(fields: list[tuple[str, str]]) -> list[str]:
    values = (v for n, v in fields if n.lower() == "content-encoding")
    return [c for value in values for c in (t.strip().lower() for t in value.split(",")) if c and c != "identity"]


def _decodes(body: bytes, codings: list[str]) -> bool:
    """Whether `body` is already encoded with `codings` (a tool that kept the bytes as they came)."""
    try:
        for coding in reversed(codings):
            body = CODECS[coding][1](body)
    except Exception:  # each codec raises its own kind (gzip: OSError, EOFError; zlib.error; brotli.error)
        return False
    return True


def encoded(fields: list[tuple[str, str]], body: bytes) -> tuple[list[tuple[str, str]], bytes, str]:
    """The fields and body agreeing on Content-Encoding: a body recorded decoded (DevTools keeps it so) is encoded
    again ("reencoded"); one in a coding the origin cannot apply loses the field ("dropped"); else as is ("")."""
    codings = _codings(fields)
    if not codings or not body:
        return fields, body, ""
    if all(c in CODECS for c in codings):
        if _decodes(body, codings):
            return fields, body, ""
        for coding in codings:
            body = CODECS[coding][0](body)
        return fields, body, "reencoded"
    return [(n, v) for n, v in fields if n.lower() != "content-encoding"], body, "dropped"


def recorded_size(entry: HarEntry) -> int:
    """The length of a body the HAR left out: content.size, else the recorded Content-Length, else 0."""
    if entry.response.body_size >= 0:
        return entry.response.body_size
    length = next((v for n, v in entry.response.headers if n.lower() == "content-length"), "")
    return int(length) if length.strip().isdigit() else 0


def reason_of(status: int, recorded: str) -> str:
    """The recorded reason phrase; an HTTP/2 recording has none (no such thing there): the usual one."""
    reason = " ".join(recorded.split())
    if reason:
        return _wire_text(reason)
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def recorded_body(entry: HarEntry, store: BodyStore | None) -> tuple[bytes, bool]:
    """The body to send before any encoding, and whether it is filler (the HAR left it out)."""
    resp = entry.response
    if resp.status in NO_BODY:
        return b"", False
    if resp.body is not None:
        return resp.body, False
    if resp.spilled is not None and store is not None:
        return store.get(resp.spilled), False
    body = filler(entry.request.url, recorded_size(entry))
    return body, bool(body)


def length_disagrees(entry: HarEntry, sent: int, coding: str) -> bool:
    """Whether the recorded Content-Length says another length than the body sent (which wins: the origin frames
    what it sends). Not for a body encoded again (the recorded length was another encoder's) nor one without a
    body (HEAD, 204, 304: their Content-Length is the full body's)."""
    if coding == "reencoded" or entry.request.method == "HEAD" or entry.response.status in NO_BODY:
        return False
    recorded = next((v.strip() for n, v in entry.response.headers if n.lower() == "content-length"), None)
    return recorded is not None and recorded != str(sent)


def prepare(entry: HarEntry, offset: int, store: BodyStore | None = None) -> Prepared:
    """The recorded response of `entry` as it is sent now, its recording's dates moved by `offset`. With a store
    the body stays in it (the recorded one where sent unchanged, else the one made here, added): a prepared
    response is kept for the next request, its body must not be."""
    resp = entry.response
    body, missing = recorded_body(entry, store)
    fields, body, coding = encoded(sent_fields(resp.headers, offset), body)
    conditional = any(n.lower() in CONDITIONAL for n, _ in entry.request.headers)
    kept: bytes | Spilled = body
    if store is not None and body:
        kept = resp.spilled if resp.spilled is not None and coding != "reencoded" else store.put(body)
    return Prepared(resp.status, reason_of(resp.status, resp.reason), tuple(fields), kept, max(entry.wait_ms, 0.0),
                    missing, coding, conditional, length_disagrees(entry, len(body), coding))


def not_modified(p: Prepared) -> Prepared:
    """The 304 the recorded origin would have sent for this response: its validators and cache fields."""
    fields = tuple((n, v) for n, v in p.fields if n.lower() in NOT_MODIFIED_FIELDS)
    return Prepared(304, "Not Modified", fields, b"", p.wait_ms, conditional=True)


def updated(full: Prepared, not_modified_reply: Prepared) -> Prepared:
    """The complete response the recorded origin would have sent instead of its recorded 304: the response the
    304 confirmed, each of its fields the 304 carries in the 304's value (RFC 9111 3.2: what a cache that stored
    it would now hold), the 304's other fields added; its body and framing the complete response's."""
    fresh: dict[str, list[tuple[str, str]]] = {}
    for name, value in not_modified_reply.fields:
        fresh.setdefault(name.lower(), []).append((name, value))
    fields: list[tuple[str, str]] = []
    for name, value in full.fields:
        if name.lower() not in fresh:
            fields.append((name, value))
        elif fresh[name.lower()]:
            fields.extend(fresh[name.lower()])  # in the place of the first of its name
            fresh[name.lower()] = []
    fields.extend(field for added in fresh.values() for field in added)
    return dataclasses.replace(full, fields=tuple(fields), wait_ms=not_modified_reply.wait_ms)
