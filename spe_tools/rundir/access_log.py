"""The Collector's access.log: its Squid logformat and a reader that gives each line's fields by name.

Squid's native format, then the port the request arrived on (which proxy under test sent it), the request's
size, the Multiplier's request tag (X-SPE-Request: which client request a proxy's request came from,
analysis/sections/prefetch.py) and, from the patched Collector, the port's name. Each field is declared once, in
FIELDS: the `spe` logformat that the Collector's squid.conf (spe_tools/collector.py) and the test Squids
(spe_tools/squid.py) write is built from it (logformat), and so is AccessRecord. To log another field, add
it to FIELDS, at the end (a log written before it still reads: its lines lack the field, which reads as None).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Field:
    name: str
    code: str  # the Squid logformat codes of one space-free token of the line
    parse: Callable[[str], Any] = str
    required: bool = True  # else a line may end before it (a log from before it was added, a stock Squid's)
    patched_only: bool = False  # a code only the patched Collector knows (collector-patches/)


FIELDS = (
    Field("end", "%ts.%03tu", float),  # unix seconds, when the transaction ended
    Field("elapsed_ms", "%6tr", int),
    Field("client", "%>a"),
    Field("result", "%Ss/%03>Hs"),  # Squid's code and the status: TCP_MISS/200
    Field("bytes_sent", "%<st", int),  # reply bytes the Collector sent (headers and body): the proxy's "received"
    Field("method", "%rm"),
    Field("url", "%ru"),  # as logged: without its query when the Collector strips them (as_logged)
    Field("user", "%[un"),
    Field("hierarchy", "%Sh/%<a"),  # how it was fetched and from where: HIER_DIRECT/127.0.0.1
    Field("content_type", "%mt"),
    Field("port", "%>lp", int),  # the Collector port it arrived on
    Field("bytes_received", "%>st", int),  # request bytes the Collector received: the proxy's "sent"
    Field("request_tag", "%{X-SPE-Request}>h", required=False),  # "-" for a request without one
    Field("port_name", "%ln", required=False, patched_only=True),  # the receiving port's name (patch 0001)
)


def logformat(patched: bool) -> str:
    """The `spe` logformat: the patched Collector's, or one that Debian's stock Squid understands."""
    return " ".join(f.code for f in FIELDS if patched or not f.patched_only)


SPE_LOGFORMAT = logformat(patched=False)  # what any Squid writes (the test Squids, spe_tools/squid.py)
REQUIRED_FIELDS = sum(f.required for f in FIELDS)
_INDEX = {f.name: i for i, f in enumerate(FIELDS)}


class BadLineError(ValueError):
    """A line that is not in SPE_LOGFORMAT (too short, or a number that is not one)."""


class AccessRecord(namedtuple("AccessFields", [f.name for f in FIELDS],  # noqa: PYI024 (fields come from FIELDS)
                              defaults=[None] * (len(FIELDS) - REQUIRED_FIELDS))):
    """One line of the access.log, each field by its FIELDS name, numbers parsed."""

    __slots__ = ()

    @property
    def code(self) -> str:
        """Squid's result code: TCP_MISS, TCP_MEM_HIT..."""
        return self.result.split("/")[0]

    @property
    def start(self) -> float:
        """Unix seconds when the transaction started (its end minus its elapsed time)."""
        return self.end - self.elapsed_ms / 1000

    @property
    def tag(self) -> str:
        """The Multiplier's request tag, "" when the request carried none."""
        return "" if self.request_tag in (None, "-") else self.request_tag

    @property
    def from_origin(self) -> bool:
        """The Collector fetched it from the origin (not from its cache)."""
        return self.hierarchy.startswith("HIER_DIRECT")


def sent_no_request(tokens: list[str]) -> bool:
    """A connection that sent no request (status 000 and no method: a readiness probe, a client gone)."""
    return tokens[_INDEX["result"]].endswith("/000") and tokens[_INDEX["method"]] in ("-", "NONE")


def parse_line(line: str) -> AccessRecord | None:
    """The line's record; None for nothing to count (a blank line, a connection that sent no request);
    raises BadLineError for a line that does not parse."""
    tokens = line.split()
    if len(tokens) < REQUIRED_FIELDS:
        if tokens:
            raise BadLineError(line)
        return None
    if sent_no_request(tokens):
        return None
    try:
        return AccessRecord(*(f.parse(token) for f, token in zip(FIELDS, tokens, strict=False)))
    except ValueError:
        raise BadLineError(line) from None


def read_access_log(path: Path) -> Iterator[AccessRecord | BadLineError]:
    """Every line of the log that records a request, or the BadLineError of one that does not parse. Read line by
    line: a week's access log is gigabytes. (Each file line is split as str.splitlines would split the whole text,
    so a line holding another line boundary, say a form feed, parses as it always did.)"""
    with Path(path).open(errors="replace") as log:
        for file_line in log:
            for line in file_line.splitlines():
                try:
                    record = parse_line(line)
                except BadLineError as bad:
                    yield bad
                    continue
                if record is not None:
                    yield record


def as_logged(url: str, strip_query_terms: bool) -> str:
    """A URL as the Collector's access.log shows it. With strip_query_terms on (a lab on live traffic,
    lab.json's collector.strip_query_terms) Squid logs it cut after its '?': `http://h/p?a=1` as `http://h/p?`.
    Whoever joins the Multiplier's URLs with the log's compares this form: URLs that differ only in their
    query are then one."""
    if strip_query_terms and "?" in url:
        return url[:url.index("?") + 1]
    return url
