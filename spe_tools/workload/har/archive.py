"""HAR 1.2 (the HTTP Archive format that Chromium's and Firefox's DevTools export, that mitmproxy and Playwright
write): the exchanges SPE replays on either side, their lab URLs, and the file written from exchanges SPE saw
(`browse --har`), from a run's records (`./spe export`) or a repro case (case.har); read by har_read.py, each entry
by har_entry.py. What a writer knows is missing goes in HAR's `comment` fields, what HAR has no field for in
custom ones (`_spe`).

Only what replaying needs is read; a field the recording left out gets the HAR spec's "unknown" (-1, None).
Bodies: `response.content.text` is base64 when `content.encoding` is "base64", else the text as UTF-8 (HAR has
no other encoding); a response whose body was not saved (no `text`, or a `comment`-only content) has
`body = None` and its `content.size` as `body_size`. Times are Unix seconds (`startedDateTime` is ISO 8601 with
a zone) and milliseconds as the spec gives them.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from spe_tools.workload.har.bodies import Spilled

HAR_VERSION = "1.2"


class HarError(ValueError):
    """A file that is no HAR, or an entry that lacks what replaying it needs; the message says where."""


@dataclass
class HarRequest:
    method: str
    url: str
    http_version: str = "HTTP/1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)  # as recorded, in order, repeats kept
    body: bytes | None = None  # postData.text, None without postData
    body_size: int = 0  # bodySize without a body kept: 0 (none), -1 (unknown: a log that keeps no request body)
    comment: str = ""


@dataclass
class HarResponse:
    status: int
    reason: str = ""
    http_version: str = "HTTP/1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None  # None: the recording did not keep it (body_size tells how long it was), or the
    # reader was told to drop it (the replay) or to spill it (the origin: `spilled`)
    body_size: int = -1  # content.size: the decoded body's length, -1 unknown
    mime_type: str = ""
    spilled: Spilled | None = None  # the body, in the HAR origin's spill file (har_bodies.py) instead of `body`
    headers_size: int = -1  # headersSize, -1 unknown
    comment: str = ""
    content_comment: str = ""  # content.comment: what the body written is (or why there is none)


@dataclass
class HarEntry:
    started: float  # Unix seconds
    request: HarRequest
    response: HarResponse
    time_ms: float = -1  # the whole exchange
    wait_ms: float = -1  # timings.wait: request sent to first byte (the server's time, as the client saw it)
    connection: str | None = None  # the recording's connection id, where it kept one
    pageref: str | None = None
    index: int = 0  # its place in the file (entries are sorted by `started`, this breaks ties)
    # HAR's timings as a recording measured them (send, wait, receive; blocked, dns, connect, ssl where known),
    # written as they are; empty: written from time_ms and wait_ms. Not read back: replaying needs wait_ms only.
    timings: dict[str, float] = field(default_factory=dict)
    from_cache: str | None = None  # Chromium's `_fromCache` ("memory", "disk"): the browser's cache answered it
    comment: str = ""
    # Custom fields of the entry, HAR 1.2's way (names starting with "_": `_spe`), written as they are; not read.
    extensions: dict[str, object] = field(default_factory=dict)


@dataclass
class HarPage:
    """A page of a recording (HAR's log.pages): the entries it loaded name its `id` as their pageref."""
    id: str
    title: str
    started: float  # Unix seconds
    on_content_load_ms: float = -1  # DOMContentLoaded after `started`, -1 unknown
    on_load_ms: float = -1  # the load event after `started`, -1 unknown
    comment: str = ""


FIELD_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a token (RFC 9110 5.1, 5.6.2): what a field name must be


def connection_listed(fields: list[tuple[str, str]]) -> set[str]:
    """The lowercase names the recorded Connection fields list: hop-by-hop for the recording's next hop only
    (RFC 9110 7.6.1), neither replayed nor served."""
    return {token.strip().lower() for name, value in fields if name.lower() == "connection"
            for token in value.split(",")}


# Where a recorded URL is asked for in a lab: every host of a recording is served by the lab's one loopback origin,
# the recorded scheme and host kept in the path so that two hosts' /favicon.ico stay two objects in every cache
# and nothing ever leaves the machine (no name of the recording is resolved).
LAB_PREFIX = "/_har/"


def lab_url(recorded: str, origin: str) -> str:
    """The URL a client asks for in the lab for the recorded absolute URL: http://ORIGIN/_har/SCHEME/HOST/PATH?Q
    (`origin` is the lab origin's HOST:PORT)."""
    parts = urlsplit(recorded)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HarError(f"{recorded!r} is no absolute http(s) URL")
    return urlunsplit(("http", origin, f"{LAB_PREFIX}{parts.scheme}/{parts.netloc}{parts.path or '/'}",
                       parts.query, ""))


def recorded_url(target: str) -> str | None:
    """The recorded absolute URL a lab request's target (its path and query, or an absolute URL) stands for;
    None for a target outside LAB_PREFIX."""
    parts = urlsplit(target)
    path = parts.path
    if not path.startswith(LAB_PREFIX):
        return None
    scheme, _, rest = path[len(LAB_PREFIX):].partition("/")
    netloc, slash, tail = rest.partition("/")
    if scheme not in ("http", "https") or not netloc:
        return None
    return urlunsplit((scheme, netloc, slash + tail, parts.query, ""))


def parse_time(text: str) -> float:
    """ISO 8601 `startedDateTime` ("2026-11-28T13:01:02.345Z", "+01:00" zones) as Unix seconds."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise HarError(f"startedDateTime {text!r} is no ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def format_time(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_har_file(path: Path | str) -> bool:
    """A HAR recording, by its suffix (what ./spe replay and the lab go by)."""
    return str(path).lower().endswith(".har")


def replay_format(files: Iterable[Path | str]) -> str:
    """What ./spe replay makes of its files: "har" for HAR files (any number, each a client), "log" for one access
    log; a ValueError for a mix, or for several logs."""
    hars = [is_har_file(f) for f in files]
    if all(hars):
        return "har"
    if any(hars):
        raise ValueError("HAR files (.har) and an access log cannot be replayed together")
    if len(hars) > 1:
        raise ValueError("one access log at a time (HAR files may be several)")
    return "log"


def _header_list(headers: list[tuple[str, str]]) -> list[dict]:
    return [{"name": n, "value": v} for n, v in headers]


def _content(body: bytes | None, size: int, mime_type: str, comment: str = "") -> dict:
    """HAR's content: `size` the whole body's length (a body kept only in part, a capture's first bytes, is
    shorter), the text as UTF-8 or base64."""
    content: dict = {"size": max(size, len(body)) if body is not None else size, "mimeType": mime_type}
    if body is not None:
        try:
            content["text"] = body.decode("utf-8")
        except UnicodeDecodeError:
            content["text"], content["encoding"] = base64.b64encode(body).decode("ascii"), "base64"
    return _commented(content, comment)


def _commented(obj: dict, comment: str) -> dict:
    if comment:
        obj["comment"] = comment
    return obj


def entry_json(e: HarEntry) -> dict:
    """One entry as HAR 1.2 has it (what read_har reads back to the same HarEntry)."""
    req, resp = e.request, e.response
    request = _commented({"method": req.method, "url": req.url, "httpVersion": req.http_version,
                          "headers": _header_list(req.headers), "queryString": [], "cookies": [], "headersSize": -1,
                          "bodySize": len(req.body) if req.body is not None else req.body_size}, req.comment)
    if req.body is not None:
        content_type = next((v for n, v in req.headers if n.lower() == "content-type"), "")
        request["postData"] = {"mimeType": content_type, **{k: v for k, v in _content(req.body, -1, "").items()
                                                            if k in ("text", "encoding")}}
    whole = resp.body is not None and len(resp.body) >= resp.body_size  # bodySize: only of a body kept whole
    response = _commented({"status": resp.status, "statusText": resp.reason, "httpVersion": resp.http_version,
                           "headers": _header_list(resp.headers), "cookies": [],
                           "content": _content(resp.body, resp.body_size, resp.mime_type, resp.content_comment),
                           "redirectURL": "", "headersSize": resp.headers_size,
                           "bodySize": len(resp.body) if whole and resp.body is not None else -1}, resp.comment)
    out = {"startedDateTime": format_time(e.started), "time": max(e.time_ms, 0), "request": request,
           "response": response, "cache": {},
           "timings": e.timings or {"send": 0, "wait": max(e.wait_ms, 0),
                                    "receive": max(e.time_ms - max(e.wait_ms, 0), 0)}}
    if e.connection is not None:
        out["connection"] = e.connection
    if e.pageref is not None:
        out["pageref"] = e.pageref
    return {**_commented(out, e.comment), **{k: v for k, v in e.extensions.items() if k.startswith("_")}}


def page_json(p: HarPage) -> dict:
    return _commented({"startedDateTime": format_time(p.started), "id": p.id, "title": p.title,
                       "pageTimings": {"onContentLoad": p.on_content_load_ms, "onLoad": p.on_load_ms}}, p.comment)


def har_document(entries: Iterable[HarEntry], creator: str = "SPE", comment: str = "",
                 pages: Iterable[HarPage] = ()) -> dict:
    log = {"version": HAR_VERSION, "creator": {"name": creator, "version": HAR_VERSION}}
    if page_list := [page_json(p) for p in pages]:  # optional in HAR 1.2: a recording without pages has none
        log["pages"] = page_list
    log["entries"] = [entry_json(e) for e in entries]
    if comment:
        log["comment"] = comment
    return {"log": log}


def write_har(path: Path | str, entries: Iterable[HarEntry], creator: str = "SPE", comment: str = "",
              pages: Iterable[HarPage] = ()) -> None:
    Path(path).write_text(json.dumps(har_document(entries, creator, comment, pages), indent=1) + "\n")
