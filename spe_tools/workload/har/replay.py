"""Browsers' HAR recordings replayed through a proxy (`./spe replay FILE.har ...`; replay.py hands .har files
here): each entry's request as recorded, at its recorded start (startedDateTime from the file's first, divided by
--speed), on as many connections as the recording used.

- Headers as recorded, cookies included, but the hop-by-hop ones (Connection and the fields it names, Keep-Alive,
  Proxy-Connection, TE, Upgrade, Transfer-Encoding, Proxy-Authorization) and HTTP/2's pseudo-headers
  (":authority", Chromium's HTTP/2 recordings); Host is set from the URL and Content-Length from the body. The
  Cookie fields an HTTP/2 recording splits are joined into one (RFC 9113 8.2.3).
- Connections: one per recorded connection id, its requests one after another on it (keep-alive); entries
  without an id get a browser's six connections per host, a request waiting for a free one of its host.
- Clients: each file is a client of its own (its own connections) and names itself in X-SPE-Client (its stem):
  the Multiplier keeps each client's order by it, and removes it.
- URLs: with --origin (the lab's HAR origin, which serves every recorded host) each becomes
  har.lab_url(url, origin); without it only loopback URLs are replayed unless --allow-any-host.
- Not sent: what the browser answered from its own cache (Chromium's `_fromCache`), what got no response
  (status 0), URLs that are not http(s): refused, by reason.
The summary adds to the exchanges' how many replies had the recorded status (a first look at whether the site
behaves as recorded) and `fixes`: what reading the files put right (har_entry.FIXES), and content_length (a
recorded Content-Length that disagreed with the recorded body: the body's is sent) and request_body_missing
(a POST, PUT or PATCH whose body was not recorded: sent empty). The files are streamed, their response bodies
dropped as they are read: the replay needs none.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from spe_tools.workload.client.connections import Exchange, Pool, fetch
from spe_tools.workload.client.logparse import is_loopback_host
from spe_tools.workload.client.schedule import Schedule, exchange_summary, print_exchanges, run_closing, within
from spe_tools.workload.har.archive import FIELD_NAME, HarEntry, HarError, connection_listed, lab_url
from spe_tools.workload.har.read import read_har_file
from spe_tools.workload.http11 import CLIENT_HEADER, request_bytes

BROWSER_CONNECTIONS_PER_HOST = 6  # what Chromium and Firefox open to one host over HTTP/1.1
# Hop-by-hop fields (RFC 9110 7.6.1): they were meant for the recording's next hop, not for this proxy.
# Proxy-Authorization too: the recording's proxy credentials.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "upgrade", "transfer-encoding",
                        "proxy-authorization"})
# What the replay writes itself: Host from the URL, Content-Length from the body, the client's name.
WRITTEN = frozenset({"host", "content-length", CLIENT_HEADER.lower()})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # sent with a Content-Length even when the body was not kept
URL_SAFE = "!#$%&'()*+,/:;=?@[]~"  # what stays as it is in a URL: the rest (spaces, non-ASCII) is percent-encoded


class RefusedError(ValueError):
    """An entry the replay does not send; the message is the reason the summary counts."""


@dataclass(frozen=True)
class Lane:
    """Where a request waits for a connection to the proxy: one recorded connection (`size` 1, its requests in
    their recorded order) or a browser's connections to one host (`size` 6)."""

    client: str
    name: str
    size: int


@dataclass(frozen=True)
class HarSend:
    """One recorded request as the replay sends it."""

    lane: Lane
    method: str
    url: str  # absolute: the proxy's request target
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    recorded_status: int  # 0: the recording has none (a request the browser cancelled)
    wire: bytes  # the request as sent, head and body: made when planned, not at its send time (HarSend.planned)

    @staticmethod
    def planned(lane: Lane, method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes | None,
                recorded_status: int) -> HarSend:
        wire = request_bytes(method, url, urlsplit(url).netloc, headers, body)
        return HarSend(lane, method, url, headers, body, recorded_status, wire)


def wire_text(text: str) -> str:
    """A recorded value as text whose latin-1 bytes (what request_bytes writes) are its UTF-8: DevTools decodes the
    bytes a browser sent as UTF-8."""
    return text.encode("utf-8").decode("latin-1")


def request_headers(recorded: list[tuple[str, str]], client: str) -> list[tuple[str, str]]:
    """The recorded header fields as the replay sends them, in their order, and the client's name last."""
    dropped = HOP_BY_HOP | WRITTEN | connection_listed(recorded)
    out: list[tuple[str, str]] = []
    cookies: list[str] = []
    cookie_at = -1
    for name, value in recorded:
        low = name.lower()
        # A pseudo-header (":authority") is HTTP/2's request line, which the URL makes; a name or value that would
        # break the head is not sent.
        if low.startswith(":") or low in dropped or not FIELD_NAME.fullmatch(name) or any(c in value for c in "\r\n\0"):
            continue
        if low == "cookie":
            cookie_at = len(out) if cookie_at < 0 else cookie_at
            cookies.append(wire_text(value))
            continue
        out.append((name, wire_text(value)))
    if cookies:
        out.insert(cookie_at, ("Cookie", "; ".join(cookies)))
    return [*out, (CLIENT_HEADER, client)]


def target_url(recorded: str, origin: str | None, allow_any_host: bool) -> str:
    """Where the replay asks for a recorded URL: the lab origin's URL for it, or the URL itself on a loopback host
    (or any with `allow_any_host`)."""
    parts = urlsplit(recorded)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RefusedError("not an http(s) URL")
    if origin:
        return quote(lab_url(recorded, origin), safe=URL_SAFE)
    if not allow_any_host and not is_loopback_host(parts.hostname):
        raise RefusedError("host outside the lab (use --origin)")
    return quote(urlsplit(recorded)._replace(fragment="").geturl(), safe=URL_SAFE)


def _url_port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def connection_ids(entries: list[HarEntry]) -> dict[int, str]:
    """Each entry's recorded connection id (by its index), for the ids that name a connection. Chromium writes its
    socket's id; Firefox writes the server's port there: an id that is its URL's port, or that several hosts share,
    names none (nor Chromium's "0", no socket)."""
    hosts: defaultdict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e.connection not in (None, "0"):
            hosts[e.connection].add(urlsplit(e.request.url).netloc)
    return {e.index: e.connection for e in entries if e.connection in hosts and len(hosts[e.connection]) == 1
            and e.connection != str(_url_port(e.request.url))}


def lane_of(entry: HarEntry, client: str, ids: dict[int, str]) -> Lane:
    if (connection := ids.get(entry.index)) is not None:
        return Lane(client, f"connection {connection}", 1)
    return Lane(client, f"host {urlsplit(entry.request.url).netloc}", BROWSER_CONNECTIONS_PER_HOST)


def refusal(e: HarEntry) -> str | None:
    """Why an entry is not sent before its URL is looked at (None: it is)."""
    if e.from_cache is not None:  # the browser never asked the network: neither will the replay
        return "answered from the browser's cache (_fromCache)"
    if e.response.status == 0:  # blocked or cancelled in the browser: no origin answered it (nor serves it)
        return "no response recorded (the browser blocked or cancelled it)"
    return None


def body_sent(e: HarEntry, fixes: Counter) -> bytes | None:
    """The request body as sent, its recorded Content-Length checked against it (the body wins: it is framed by
    its own length)."""
    method, body = e.request.method, e.request.body
    if body is None and method in BODY_METHODS:
        fixes["request_body_missing"] += 1
        body = b""
    recorded = next((v.strip() for n, v in e.request.headers if n.lower() == "content-length"), None)
    if recorded is not None and recorded != str(len(body or b"")):
        fixes["content_length"] += 1
    return body


def plan_har(entries: list[HarEntry], client: str, origin: str | None, speed: float,
             allow_any_host: bool, fixes: Counter | None = None) -> tuple[list[tuple[float, HarSend]], Counter]:
    """(offset seconds, request) for each entry replayed, by offset (entries as read_har orders them), and the
    entries refused, by reason; what was put right is added to `fixes`."""
    refused: Counter = Counter()
    fixes = Counter() if fixes is None else fixes
    if not entries:
        return [], refused
    t0, ids = entries[0].started, connection_ids(entries)
    out = []
    for e in entries:
        try:
            if (why := refusal(e)) is not None:
                raise RefusedError(why)
            url = target_url(e.request.url, origin, allow_any_host)
        except RefusedError as why:
            refused[str(why)] += 1
            continue
        send = HarSend.planned(lane_of(e, client, ids), e.request.method, url,
                               tuple(request_headers(e.request.headers, client)), body_sent(e, fixes),
                               e.response.status)
        out.append(((e.started - t0) / speed, send))
    return out, refused


def client_names(files: list[str]) -> list[str]:
    """Each file's client name: its stem in the characters a header value keeps plainly, made unique."""
    names: list[str] = []
    for file in files:
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(file).stem) or "har"
        name, n = stem, 1
        while name in names:
            n += 1
            name = f"{stem}-{n}"
        names.append(name)
    return names


class HarClients:
    """The replayed browsers' connections to the proxy: a pool per lane (one connection per recorded id, six per
    host for the rest)."""

    def __init__(self, proxy: tuple[str, int], timeout: float):
        self.proxy, self.timeout = proxy, timeout
        self.pools: dict[Lane, Pool] = {}
        self.turns: dict[Lane, asyncio.Lock] = {}

    def pool(self, lane: Lane) -> Pool:
        if lane not in self.pools:
            self.pools[lane] = Pool(self.proxy[0], self.proxy[1], lane.size)
            self.turns[lane] = asyncio.Lock()
        return self.pools[lane]

    async def send(self, request: HarSend, at: float) -> Exchange:
        ex = Exchange(at, info={"client": request.lane.client, "recorded": request.recorded_status})
        pool = self.pool(request.lane)
        if request.lane.size == 1:
            # A recorded connection's requests go in their recorded order: asyncio's Lock is first come, first
            # served, and each request queues at its scheduled time (the pool's own wait lets a newcomer pass).
            async with self.turns[request.lane]:
                await fetch(pool, request.wire, request.method, ex, self.timeout)
        else:
            await fetch(pool, request.wire, request.method, ex, self.timeout)
        ex.reply = None
        return ex

    @property
    def connections(self) -> int:
        return sum(pool.opened for pool in self.pools.values())


@dataclass
class Recording:
    file: str
    client: str
    entries: list[HarEntry]
    fixes: Counter  # what reading it put right, and planning its requests


def status_check(results: list[Exchange]) -> dict:
    """How many answered requests got the status their recording had (where it has one)."""
    compared = [ex for ex in results if not ex.error and ex.info["recorded"] > 0]
    mismatches = Counter(f"{ex.info['recorded']}->{ex.status}" for ex in compared if ex.status != ex.info["recorded"])
    return {"status_compared": len(compared), "status_matched": len(compared) - sum(mismatches.values()),
            "status_mismatches": dict(mismatches.most_common())}


def summarize(args: argparse.Namespace, recordings: list[Recording], refused: Counter, schedule: Schedule,
              clients: HarClients, elapsed: float) -> dict:
    sent = Counter(ex.info["client"] for ex in schedule.results)
    return {
        "tool": "replay", "format": "har", "files": [r.file for r in recordings], "speed": args.speed,
        "proxy": f"{args.proxy[0]}:{args.proxy[1]}", "origin": args.origin,
        "entries": sum(len(r.entries) for r in recordings), "refused": dict(refused),
        "clients": len(recordings),
        "per_client": {r.client: {"file": r.file, "entries": len(r.entries), "sent": sent[r.client]}
                       for r in recordings},
        "fixes": dict(sum((r.fixes for r in recordings), Counter())), "connections": clients.connections,
        "recorded_connections": sum(1 for lane in clients.pools if lane.size == 1),
        **exchange_summary(schedule, elapsed), **status_check(schedule.results),
    }


def print_summary(s: dict) -> None:
    print(f"replay: {s['sent']} of {s['entries']} HAR entries sent (refused {s['refused']}) from {s['clients']} "
          f"clients ({', '.join(s['per_client'])}) on {s['connections']} connections "
          f"({s['recorded_connections']} recorded ones) in {s['elapsed_s']:.1f} s "
          f"(trace span {s['trace_span_s']:.1f} s at speed {s['speed']})")
    print_exchanges(s)
    print(f"replay: the recorded status in {s['status_matched']} of {s['status_compared']} replies "
          f"(others {s['status_mismatches']}); put right: {s['fixes'] or 'nothing'}")


def read_recording(file: str, client: str) -> Recording:
    har = read_har_file(file, bodies="drop")  # streamed; the replay sends requests and needs no response body
    return Recording(file, client, har.entries, har.fixes)


def read_recordings(files: list[str]) -> list[Recording]:
    return [read_recording(file, client) for file, client in zip(files, client_names(files), strict=True)]


def replay(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """Replay args.files (HAR) as replay.py's options say; the summary, printed too."""
    try:
        recordings = read_recordings(args.files)
    except HarError as e:
        parser.error(str(e))
    timed: list[tuple[float, HarSend]] = []
    refused: Counter = Counter()
    for r in recordings:
        r.entries = r.entries[:args.max_requests]
        planned, why = plan_har(r.entries, r.client, args.origin, args.speed, args.allow_any_host, r.fixes)
        timed += planned
        refused += why
    timed.sort(key=lambda pair: pair[0])  # stable: a file's entries keep their order
    clients = HarClients(args.proxy, args.timeout)
    schedule = Schedule(within(timed, args.duration), clients.send, args.timeout, args.report_every)
    elapsed = asyncio.run(run_closing(schedule, clients.pools))
    summary = summarize(args, recordings, refused, schedule, clients, elapsed)
    print_summary(summary)
    return summary
