"""Chromium's DevTools Network events as HAR entries: pure functions over the events of one page session, no
browser (the recorder that listens to a live Chromium is har_recorder.py).

A request is what one DevTools requestId saw: a requestWillBeSent per hop (a redirect reuses the id; the next hop's
event carries the redirect response), its ExtraInfo events (the headers as they went over the wire, cookies
included, which the other events leave out), then responseReceived, dataReceived and loadingFinished or
loadingFailed. Each hop that got a response from the network is an entry; left out are the hops that failed, that
never got a response, that Chromium answered from its own cache, and URLs other than http(s) (data:, blob:).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

from spe_tools.workload.har.archive import HarEntry, HarPage, HarRequest, HarResponse

# HTTP versions as DevTools names them (Response.protocol) and as HAR writes them.
PROTOCOLS = {"http/0.9": "HTTP/0.9", "http/1.0": "HTTP/1.0", "http/1.1": "HTTP/1.1", "h2": "HTTP/2", "h3": "HTTP/3",
             "quic": "HTTP/3"}
NO_BODY_STATUSES = (204, 304)


@dataclass
class RequestEvents:
    """What DevTools said about one requestId, as it said it (each list in hop order)."""
    sent: list[dict] = field(default_factory=list)  # requestWillBeSent params, one per hop
    sent_extra: list[dict] = field(default_factory=list)  # requestWillBeSentExtraInfo params
    received_extra: list[dict] = field(default_factory=list)  # responseReceivedExtraInfo params
    pagerefs: list[str | None] = field(default_factory=list)  # the page shown when each hop was sent
    response: dict | None = None  # responseReceived params: the last hop's response
    finished: dict | None = None  # loadingFinished params
    failed: dict | None = None  # loadingFailed params
    from_cache: bool = False  # requestServedFromCache: Chromium's memory cache answered
    data_length: int = 0  # the decoded body's length, summed over dataReceived
    post_data: dict[int, bytes] = field(default_factory=dict)  # hop -> body from Network.getRequestPostData
    body: bytes | None = None  # from Network.getResponseBody, None while (or if) Chromium gave none

    def ended(self) -> bool:
        return self.finished is not None or self.failed is not None


@dataclass
class PageEvents:
    """A page the driver loaded, timed from its document request's clocks (wall and monotonic)."""
    id: str
    url: str
    started: float  # Unix seconds: the driver's clock until the document request gives Chromium's
    first_timestamp: float | None = None  # that request's monotonic timestamp, the base of the page's timings
    dom_content_timestamp: float | None = None
    load_timestamp: float | None = None


class NetworkLog:
    """The Network and Page events of one page session, by requestId, each hop tagged with the page shown."""

    def __init__(self) -> None:
        self.requests: dict[str, RequestEvents] = {}
        self.pages: list[PageEvents] = []

    def begin_page(self, url: str, now: float) -> None:
        self.pages.append(PageEvents(f"page_{len(self.pages) + 1}", url, now))

    def running(self) -> bool:
        """Whether a request of the page shown (the last one begun) is still running."""
        page = self.pages[-1].id if self.pages else None
        return any(r.sent and r.pagerefs[-1] == page and not r.ended() for r in self.requests.values())

    def add(self, method: str, params: dict) -> RequestEvents | None:
        """Take one event; the request it is about (None for a page event or one this log does not keep)."""
        if method in PAGE_EVENTS:
            if self.pages:
                PAGE_EVENTS[method](self.pages[-1], params.get("timestamp"))
            return None
        keep = REQUEST_EVENTS.get(method)
        if keep is None or "requestId" not in params:
            return None
        request = self.requests.setdefault(params["requestId"], RequestEvents())
        keep(self, request, params)
        return request

    def _sent(self, request: RequestEvents, params: dict) -> None:
        request.sent.append(params)
        page = self.pages[-1] if self.pages else None
        request.pagerefs.append(page.id if page else None)
        # The page's navigation (its document request) starts its clocks: a late request of the page before
        # (a favicon) may come first.
        if page and page.first_timestamp is None and params.get("type") == "Document":
            page.first_timestamp = params.get("timestamp")
            page.started = params.get("wallTime", page.started)


def _set_dom_content(page: PageEvents, timestamp: float | None) -> None:
    page.dom_content_timestamp = page.dom_content_timestamp or timestamp


def _set_load(page: PageEvents, timestamp: float | None) -> None:
    page.load_timestamp = page.load_timestamp or timestamp


PAGE_EVENTS: dict[str, Callable[[PageEvents, float | None], None]] = {
    "Page.domContentEventFired": _set_dom_content, "Page.loadEventFired": _set_load}


def _set(name: str) -> Callable[[NetworkLog, RequestEvents, dict], None]:
    def keep(_log: NetworkLog, request: RequestEvents, params: dict) -> None:
        setattr(request, name, params)
    return keep


def _append(name: str) -> Callable[[NetworkLog, RequestEvents, dict], None]:
    def keep(_log: NetworkLog, request: RequestEvents, params: dict) -> None:
        getattr(request, name).append(params)
    return keep


def _data(_log: NetworkLog, request: RequestEvents, params: dict) -> None:
    request.data_length += int(params.get("dataLength") or 0)


def _served_from_cache(_log: NetworkLog, request: RequestEvents, _params: dict) -> None:
    request.from_cache = True


REQUEST_EVENTS: dict[str, Callable[[NetworkLog, RequestEvents, dict], None]] = {
    "Network.requestWillBeSent": NetworkLog._sent,
    "Network.requestWillBeSentExtraInfo": _append("sent_extra"),
    "Network.responseReceivedExtraInfo": _append("received_extra"),
    "Network.responseReceived": _set("response"),
    "Network.dataReceived": _data,
    "Network.loadingFinished": _set("finished"),
    "Network.loadingFailed": _set("failed"),
    "Network.requestServedFromCache": _served_from_cache,
}


def header_pairs(headers: dict | None) -> list[tuple[str, str]]:
    """DevTools' header object as (name, value) pairs: it joins a repeated field's values with newlines (two
    Set-Cookie fields are one entry); HTTP/2 pseudo-headers (:path, :status) are left out, the request line and
    the status say them."""
    return [(name, value) for name, joined in (headers or {}).items() if not name.startswith(":")
            for value in str(joined).split("\n")]


def parse_headers_text(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A response head as received (ExtraInfo's headersText, HTTP/1.x only): its status line and its fields in
    their order, repeats kept."""
    lines = text.split("\r\n")
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            break
        if line[0] in " \t" and fields:  # an obsolete folded line continues the field before it
            fields[-1] = (fields[-1][0], f"{fields[-1][1]} {line.strip()}")
            continue
        name, _, value = line.partition(":")
        fields.append((name, value.strip()))
    return lines[0], fields


def http_version(response: dict, status_line: str = "") -> str:
    if status_line.startswith("HTTP/"):
        return status_line.split(" ", 1)[0]
    protocol = str(response.get("protocol") or "http/1.1").lower()
    return PROTOCOLS.get(protocol, protocol.upper())


def decode_body(text: str, base64_encoded: bool) -> bytes:
    """getResponseBody's or getRequestPostData's body: base64 for bytes, else Chromium's text (as UTF-8)."""
    return base64.b64decode(text) if base64_encoded else text.encode("utf-8")


def request_body(request: RequestEvents, hop: int) -> bytes | None:
    """The hop's request body: the bytes of postDataEntries (exact), else the text DevTools gave, else what
    Network.getRequestPostData returned; None without a body."""
    sent = request.sent[hop]["request"]
    entries = sent.get("postDataEntries")
    if entries and all("bytes" in e for e in entries):
        return b"".join(base64.b64decode(e["bytes"]) for e in entries)
    if sent.get("postData") is not None:
        return str(sent["postData"]).encode("utf-8")
    return request.post_data.get(hop)


def needs_post_data(params: dict) -> bool:
    """Whether a requestWillBeSent announces a body without giving it (Chromium leaves out large ones)."""
    sent = params.get("request", {})
    return bool(sent.get("hasPostData")) and sent.get("postData") is None and not sent.get("postDataEntries")


def hop_response(request: RequestEvents, hop: int) -> tuple[dict | None, dict | None]:
    """The hop's response and the event that ended it: the next hop's requestWillBeSent for a redirect, else
    loadingFinished (None while the request runs, or when it failed)."""
    if hop + 1 < len(request.sent):
        following = request.sent[hop + 1]
        return following.get("redirectResponse"), following
    if request.failed is not None:
        return None, None
    return (request.response or {}).get("response"), request.finished


def _extra_index(request: RequestEvents, hop: int) -> int | None:
    """Which of the request's ExtraInfo events belong to this hop: Chromium says per hop whether it sent any
    (redirectHasExtraInfo on the next hop, hasExtraInfo on the last response); they come in hop order."""
    def has_extra(h: int) -> bool:
        if h + 1 < len(request.sent):
            return bool(request.sent[h + 1].get("redirectHasExtraInfo"))
        return bool((request.response or {}).get("hasExtraInfo"))
    return sum(map(has_extra, range(hop))) if has_extra(hop) else None


def wire_request_headers(request: RequestEvents, hop: int) -> list[tuple[str, str]]:
    index = _extra_index(request, hop)
    if index is not None and index < len(request.sent_extra):
        return header_pairs(request.sent_extra[index].get("headers"))
    return header_pairs(request.sent[hop]["request"].get("headers"))


def _received_extra(request: RequestEvents, hop: int) -> dict | None:
    index = _extra_index(request, hop)
    return request.received_extra[index] if index is not None and index < len(request.received_extra) else None


def wire_status(request: RequestEvents, hop: int, response: dict) -> int:
    """The status the server sent. When Chromium revalidated its own copy, the server's 304 is only in the
    ExtraInfo event: responseReceived reports the cached 200 it was merged into. The HAR keeps the 304 that went
    over the wire, as DevTools' own export does (a replay's origin must answer that request 304 again)."""
    status = int(response.get("status", 0))
    extra = _received_extra(request, hop)
    return 304 if status == 200 and extra is not None and extra.get("statusCode") == 304 else status


def wire_response_head(request: RequestEvents, hop: int, status: int, response: dict,
                       ) -> tuple[str, list[tuple[str, str]]]:
    """The hop's status line (when Chromium kept it) and response fields as received, cookies included; the
    filtered fields of responseReceived when there is no ExtraInfo for it (or it is for another status)."""
    extra = _received_extra(request, hop)
    if extra is not None:
        if extra.get("statusCode") in (None, status):
            if extra.get("headersText"):
                return parse_headers_text(extra["headersText"])
            return "", header_pairs(extra.get("headers"))
    return "", header_pairs(response.get("headers"))


def _span(timing: dict, start: str, end: str) -> float:
    """A phase's length in ms from two of Chromium's offsets (ms after requestTime; -1 not happened)."""
    a, b = timing.get(start, -1), timing.get(end, -1)
    return round(b - a, 3) if a is not None and b is not None and a >= 0 and b >= 0 else -1


def har_timings(timing: dict | None, end_timestamp: float | None) -> dict[str, float]:
    """HAR's timings from a response's ResourceTiming: send sendStart..sendEnd, wait sendEnd..receiveHeadersEnd,
    receive from there to the end of the body (`end_timestamp`, Chromium's monotonic seconds); dns, connect and
    ssl where a new connection was made (-1 else), blocked until the first of them began."""
    if not timing:
        return {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 0, "receive": 0}
    first = next((timing[k] for k in ("dnsStart", "connectStart", "sendStart") if timing.get(k, -1) >= 0), 0)
    headers_end = timing["requestTime"] * 1000 + timing.get("receiveHeadersEnd", 0)
    receive = end_timestamp * 1000 - headers_end if end_timestamp is not None else 0
    return {"blocked": round(first, 3), "dns": _span(timing, "dnsStart", "dnsEnd"),
            "connect": _span(timing, "connectStart", "connectEnd"), "ssl": _span(timing, "sslStart", "sslEnd"),
            "send": max(_span(timing, "sendStart", "sendEnd"), 0),
            "wait": max(_span(timing, "sendEnd", "receiveHeadersEnd"), 0), "receive": round(max(receive, 0), 3)}


def total_ms(timings: dict[str, float]) -> float:
    """HAR's `time`: the phases' sum (ssl is part of connect; -1 is a phase that did not happen)."""
    return round(sum(v for k, v in timings.items() if k != "ssl" and v > 0), 3)


def from_network(response: dict) -> bool:
    return not any(response.get(k) for k in ("fromDiskCache", "fromPrefetchCache", "fromServiceWorker"))


def response_body(request: RequestEvents, hop: int, status: int) -> tuple[bytes | None, int]:
    """The hop's body and content.size: a redirect's body Chromium never keeps (-1, unknown); a 204 or 304 has
    none on the wire (Chromium would give the cached body of a 304); else what getResponseBody returned, or
    None with the length of the data received when Chromium no longer held it."""
    if hop + 1 < len(request.sent):
        return None, -1
    method = request.sent[hop]["request"].get("method", "GET")
    if status in NO_BODY_STATUSES or status < 200 or method == "HEAD":
        return b"", 0
    if request.body is not None:
        return request.body, len(request.body)
    return None, request.data_length


def hop_entry(request: RequestEvents, hop: int) -> HarEntry | None:
    """One hop as a HAR entry; None for a hop that has none (see the module's docstring)."""
    sent = request.sent[hop]
    response, ended = hop_response(request, hop)
    url = sent["request"].get("url", "")
    if response is None or ended is None or request.from_cache or not from_network(response) or \
            not url.startswith(("http://", "https://")):
        return None
    status = wire_status(request, hop, response)
    status_line, headers = wire_response_head(request, hop, status, response)
    version = http_version(response, status_line)
    body, size = response_body(request, hop, status)
    timings = har_timings(response.get("timing"), ended.get("timestamp"))
    connection = response.get("connectionId")
    return HarEntry(
        float(sent["wallTime"]),
        HarRequest(sent["request"].get("method", "GET"), url, version, wire_request_headers(request, hop),
                   request_body(request, hop)),
        HarResponse(status, str(response.get("statusText", "")), version, headers, body, size,
                    str(response.get("mimeType", ""))),
        time_ms=total_ms(timings), wait_ms=timings["wait"], connection=None if connection is None else str(connection),
        pageref=request.pagerefs[hop], timings=timings)


def har_entries(log: NetworkLog) -> list[HarEntry]:
    """Every hop's entry, by start time (then by the order DevTools announced them)."""
    entries = [entry for request in log.requests.values() for hop in range(len(request.sent))
               if (entry := hop_entry(request, hop)) is not None]
    for index, entry in enumerate(entries):
        entry.index = index
    return sorted(entries, key=lambda e: (e.started, e.index))


def har_pages(log: NetworkLog) -> list[HarPage]:
    def after_start(page: PageEvents, timestamp: float | None) -> float:
        if timestamp is None or page.first_timestamp is None:
            return -1
        return round((timestamp - page.first_timestamp) * 1000, 3)
    return [HarPage(p.id, p.url, p.started, after_start(p, p.dom_content_timestamp), after_start(p, p.load_timestamp))
            for p in log.pages]


def cached(request: RequestEvents) -> bool:
    """Answered by Chromium's own cache (memory, disk, prefetch) or a service worker, not the network."""
    return request.from_cache or not from_network((request.response or {}).get("response") or {})


def recording_counts(log: NetworkLog) -> dict[str, int]:
    """What the recording holds and what it left out (by request), for the driver's summary. A last hop's entry
    without a body is one Chromium no longer held: a redirect, the only bodiless entry else, is never last."""
    sent = [r for r in log.requests.values() if r.sent]
    last = [hop_entry(r, len(r.sent) - 1) for r in sent]
    return {"entries": len(har_entries(log)),
            "bodies_missing": sum(e is not None and e.response.body is None for e in last),
            "failed": sum(r.failed is not None for r in sent), "from_cache": sum(map(cached, sent)),
            "unfinished": sum(not r.ended() for r in sent)}
