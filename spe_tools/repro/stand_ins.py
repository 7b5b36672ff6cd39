"""The fields a repro case's origin reply is sent with, where the record keeps their names but not their values:
one rule for the stand-in origin (stand_in_origin.py) and the case's HAR (case_har.py), so that `./spe repro DIR`
and `./spe origin --har DIR/case.har` answer with the same fields."""

from __future__ import annotations

from spe_tools.repro.case import OriginReply

# The record keeps the names of the origin's other fields, not their values (a Set-Cookie's is a secret):
# each is sent with a stand-in value, so a cache that drops or keeps the field does so again.
STAND_IN_VALUES = {"set-cookie": "spe-repro=1; Path=/", "accept-ranges": "bytes"}
STAND_IN_VALUE = "spe-repro"
SPELLING = {"cache-control": "Cache-Control", "etag": "ETag", "last-modified": "Last-Modified", "expires": "Expires",
            "vary": "Vary", "age": "Age", "content-type": "Content-Type", "pragma": "Pragma"}
# An unsafe method's reply: its own, never stored (the record keeps its status only)
UNSAFE_REPLY_FIELDS = (("Content-Type", "text/plain"), ("Cache-Control", "no-store"))


def spelled(name: str) -> str:
    return SPELLING.get(name, name.title())


def recorded_fields(reply: OriginReply) -> list[tuple[str, str]]:
    """The reply's judged fields with their recorded values (Date included, no date moved), then its other
    fields with stand-in values, then the fields for one hop with a Connection that lists them, names spelled
    as servers do."""
    hop = [("Connection", ", ".join(name.title() for name in reply.hop_fields))] if reply.hop_fields else []
    return [*((spelled(name), value) for name, value in reply.headers.items()),
            *((name.title(), STAND_IN_VALUES.get(name, STAND_IN_VALUE)) for name in reply.other_fields),
            *hop, *((name.title(), STAND_IN_VALUE) for name in reply.hop_fields)]


def stand_in_fields(reply: OriginReply) -> list[str]:
    """The names of the fields recorded_fields sends with stand-in values."""
    return [name.title() for name in (*reply.other_fields, *reply.hop_fields)]
