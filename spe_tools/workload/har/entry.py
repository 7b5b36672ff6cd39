"""One HAR entry read into a HarEntry: checked field by field, and what browsers and tools write that cannot go on
the wire as is put right, each fix counted.

An entry that cannot be replayed or served (no request.url, a method that is no token, a status that is no
number...) is a HarError naming the entry's index and the field. What is read past or fixed, by the name the
replay's and the origin's summaries count it under (FIXES):
- no_body: a response without `content.text` (DevTools' "not included", a redirect's): the origin sends a
  filler of the recorded size; no_size: and without a `content.size` either (-1): the recorded Content-Length
  is that size, else none;
- no_wait: `timings.wait` is -1 or absent (the spec's "unknown"): no server time is waited;
- extensions: fields named with a leading `_` (Chromium's `_initiator`, `_fromCache`, `_priority`...): read past;
- pseudo_headers: HTTP/2 pseudo-headers (`:method`, `:authority`, `:status`) dropped, the request line and status
  say them; authority_to_host: a request with `:authority` and no Host gets that Host;
- split_fields: repeated fields a tool joined into one value split back: Firefox joins them with newlines,
  mitmproxy's har_dump joins Set-Cookie fields with ", ";
- duplicate_fields: a field that may appear once (Content-Length, Content-Type, Host, ETag...) repeated: the first
  is kept;
- body_from_params: a request body recorded as `postData.params` only: sent URL-encoded.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from urllib.parse import urlencode

from spe_tools.workload.har.archive import FIELD_NAME, HarEntry, HarError, HarRequest, HarResponse, parse_time
from spe_tools.workload.har.bodies import BodyStore

FIXES = ("no_body", "no_size", "no_wait", "extensions", "pseudo_headers", "authority_to_host", "split_fields",
         "duplicate_fields", "body_from_params")
# Fields RFC 9110 allows once in a message (no list syntax): a second one is a recording's duplicate.
SINGLE_REQUEST = frozenset({"host", "content-length", "content-type", "authorization", "user-agent", "referer",
                            "origin", "if-modified-since", "if-unmodified-since", "range", "if-range"})
SINGLE_RESPONSE = frozenset({"content-length", "content-type", "date", "etag", "last-modified", "expires",
                             "location", "age", "content-range", "content-location", "retry-after"})
# Where a Set-Cookie value that mitmproxy joined with ", " starts its next cookie: ", NAME=" (an Expires date's
# "Wed, 21 Oct 2015" has no "=" after its comma).
JOINED_COOKIE = re.compile(r",\s*(?=[!#$%&'*+.^_`|~0-9A-Za-z-]+=)")
NO_BODY_STATUS = frozenset({0, 204, 304})

Bodies = str | BodyStore  # "keep" (in memory), "drop" (the replay needs none) or a spill file (the origin)


def _object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise HarError(f"{where} is {'missing' if value is None else 'no JSON object'}")
    return value


def _text(obj: dict, name: str, where: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise HarError(f"{where}.{name} is {'missing' if value is None else 'no text' if value == '' else 'no string'}")
    return value


def _number(value: object, default: float = -1) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _status(resp: dict) -> int:
    status = resp.get("status")
    if status is None:
        raise HarError("response.status is missing")
    if isinstance(status, bool) or not isinstance(status, int) or not (status == 0 or 100 <= status <= 599):
        raise HarError(f"response.status {status!r} is no status (0, or a whole number from 100 to 599)")
    return status


def _split(name: str, value: str, fixes: Counter) -> list[str]:
    """One recorded value as the values it stands for (a tool's joined repeats split back)."""
    parts = [p.strip() for p in value.splitlines()] if "\n" in value or "\r" in value else [value]
    if name.lower() == "set-cookie":
        parts = [c for p in parts for c in JOINED_COOKIE.split(p)]
    parts = [p for p in parts if p]
    if len(parts) > 1:
        fixes["split_fields"] += 1
    return parts


def _raw_headers(raw: object, where: str) -> list[tuple[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise HarError(f"{where} is no list")
    out = []
    for i, h in enumerate(raw):
        if not isinstance(h, dict) or not isinstance(h.get("name"), str) or not h["name"]:
            raise HarError(f"{where}[{i}] has no name")
        value = h.get("value", "")
        out.append((h["name"], value if isinstance(value, str) else "" if value is None else str(value)))
    return out


def headers(raw: object, where: str, single: frozenset[str], fixes: Counter,
            is_request: bool = False) -> list[tuple[str, str]]:
    """The recorded fields, in order, without pseudo-headers, joined repeats split, repeated singletons once;
    a request's `:authority` becomes its Host where it has none."""
    recorded = _raw_headers(raw, where)
    pseudo = [(n.lower(), v) for n, v in recorded if n.startswith(":")]
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, value in recorded:
        low = name.lower()
        if low.startswith(":"):
            continue
        for part in _split(name, value, fixes):
            if low in single and low in seen:
                fixes["duplicate_fields"] += 1
                continue
            seen.add(low)
            out.append((name, part))
    if pseudo:
        fixes["pseudo_headers"] += 1
    authority = next((v for n, v in pseudo if n == ":authority"), None)
    if authority and is_request and "host" not in seen:
        out.insert(0, ("Host", authority))
        fixes["authority_to_host"] += 1
    return out


def content_body(content: dict, where: str) -> bytes | None:
    """A recorded body's bytes: base64 when `encoding` says so, else the text as UTF-8; None when not kept."""
    text = content.get("text")
    if text is None:
        return None
    if not isinstance(text, str):
        raise HarError(f"{where}.text is no string")
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise HarError(f"{where}.text is not valid base64") from None
    return text.encode("utf-8", "surrogatepass")


def _post_body(req: dict, fixes: Counter) -> bytes | None:
    post = req.get("postData")
    if post is None:
        return None
    post = _object(post, "request.postData")
    body = content_body(post, "request.postData")
    if body is None and isinstance(post.get("params"), list) and post["params"]:
        fixes["body_from_params"] += 1
        return urlencode([(str(p.get("name", "")), str(p.get("value", ""))) for p in post["params"]
                          if isinstance(p, dict)]).encode()
    return body


def request_of(req: dict, fixes: Counter) -> HarRequest:
    method = _text(req, "method", "request")
    if not FIELD_NAME.fullmatch(method):
        raise HarError(f"request.method {method!r} is no HTTP method")
    return HarRequest(method, _text(req, "url", "request"), str(req.get("httpVersion") or "HTTP/1.1"),
                      headers(req.get("headers"), "request.headers", SINGLE_REQUEST, fixes, is_request=True),
                      _post_body(req, fixes))


def dropped_body_size(content: dict) -> int | None:
    """The size of a recorded body the reader drops, without decoding it (the replay sends no response body, and
    decoding each was a fifth of its reading): the bytes base64 text stands for, or the text's UTF-8 length; None
    when not kept. Its encoding is not checked: what is never sent cannot be wrong on the wire."""
    text = content.get("text")
    if not isinstance(text, str):
        return None
    if content.get("encoding") == "base64":
        return len(text) * 3 // 4 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def response_of(resp: dict, method: str, bodies: Bodies, fixes: Counter) -> HarResponse:
    status = _status(resp)
    content = _object(resp.get("content") or {}, "response.content")
    if bodies == "drop":
        size = dropped_body_size(content)
        data = None if size is None else b""
    else:
        data = content_body(content, "response.content")
        size = None if data is None else len(data)
    out = HarResponse(status, str(resp.get("statusText") or ""), str(resp.get("httpVersion") or "HTTP/1.1"),
                      headers(resp.get("headers"), "response.headers", SINGLE_RESPONSE, fixes),
                      body_size=int(_number(content.get("size"))), mime_type=str(content.get("mimeType") or ""))
    if data is None:
        if status not in NO_BODY_STATUS and method != "HEAD":
            fixes["no_body"] += 1
            if out.body_size < 0:
                fixes["no_size"] += 1
        return out
    out.body_size = size
    if isinstance(bodies, BodyStore):
        out.spilled = bodies.put(data)
    elif bodies == "keep":
        out.body = data
    return out


def _has_extensions(raw: dict) -> bool:
    parts = (raw, raw.get("request"), raw.get("response"), (raw.get("response") or {}).get("content"),
             raw.get("timings"))
    return any(isinstance(p, dict) and any(k.startswith("_") for k in p) for p in parts)


def parse_entry(raw: object, index: int, bodies: Bodies = "keep", fixes: Counter | None = None) -> HarEntry:
    """Entry `index` of a file (its place in log.entries), its fixes added to `fixes`."""
    fixes = Counter() if fixes is None else fixes
    if not isinstance(raw, dict):
        raise HarError(f"entry {index} is no JSON object")
    entry = raw
    try:
        started = parse_time(_text(entry, "startedDateTime", "entry"))
        request = request_of(_object(entry.get("request"), "request"), fixes)
        response = response_of(_object(entry.get("response"), "response"), request.method, bodies, fixes)
    except HarError as e:
        raise HarError(f"entry {index}: {str(e).removeprefix('entry.')}") from None
    timings = entry.get("timings") if isinstance(entry.get("timings"), dict) else {}
    wait = _number(timings.get("wait"))
    if wait < 0 and response.status >= 100:  # a response the origin serves, without the server's time
        fixes["no_wait"] += 1
    if _has_extensions(entry):
        fixes["extensions"] += 1
    connection, cached = entry.get("connection"), entry.get("_fromCache")
    return HarEntry(started, request, response, _number(entry.get("time")), wait,
                    None if connection in (None, "") else str(connection),
                    entry.get("pageref") if isinstance(entry.get("pageref"), str) else None, index,
                    from_cache=cached if isinstance(cached, str) and cached else None)
