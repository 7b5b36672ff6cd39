"""The synthetic origin: replies fixed by the content model, think time and pacing per request.

Run: ./spe origin --listen 127.0.0.1:PORT [--model FILE] [--seed N]
         [--think-mean-ms X] [--think-sd-ms Y]
Prints `origin listening on HOST:PORT` once ready (with --tls, then also
`origin listening with TLS on HOST:PORT (test CA PATH)`); SIGTERM or SIGINT stops it (exit 0).

Query parameters on any object URL override the model for that request (docs/workloads.md):
think=MS (first-byte delay), size=BYTES, chunks=N and gap=MS (body in N writes, MS apart),
rate=BYTES_PER_S (paced body), te=chunked|length (framing), cc=public|private|no-store|no-cache|VALUE,
vary=NAMES (a Vary field added; the reply itself does not change),
interim=103,102 (those interim responses first, in order, to an HTTP/1.1 client: RFC 9110 15.2; a 103 carries a
Link field) and interim_ms=MS (a pause before each), on any URL, the /c/ conformance cases included.
/unsafe/... takes any method and answers status=NNN (default 200) with size=BYTES of body (default: a line
naming the request); /_stats counts every request by "METHOD path" (by_method_path): exactly-once tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import ipaddress
import json
import random
import signal
import socket
import ssl
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from spe_tools.ca import ORIGIN_CA_NAME, ORIGIN_CERT_NAME, ORIGIN_KEY_NAME, test_origin_tls
from spe_tools.workload.content import conditional, conformance
from spe_tools.workload.content import model as cm
from spe_tools.workload.http11 import MAX_HEAD, HttpError, Message, RequestReader, format_date, http_date

REASONS = {200: "OK", 201: "Created", 303: "See Other", 304: "Not Modified", 400: "Bad Request", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 500: "Internal Server Error",
           501: "Not Implemented"} | conformance.STATUS_REASONS
CHUNK = 8192  # chunk size of chunked replies without chunks=N
INTERIM_REASONS = {100: "Continue", 102: "Processing", 103: "Early Hints"}
MAX_INTERIM = 16  # interim responses one reply may ask for
MAX_OVERRIDE_SIZE = 64 << 20


@dataclass
class Delivery:
    """How a reply's bytes leave: after a think time, in pieces, paced."""

    think_ms: float = 0.0
    chunked: bool = False
    pieces: int = 1  # body writes
    gap_ms: float = 0.0  # pause between writes
    rate: int = 0  # bytes per second; 0: unpaced
    interim: tuple[int, ...] = ()  # 1xx responses sent before the reply, in order (before the think time)
    interim_ms: float = 0.0  # pause before each of them
    interim_fields: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # a status's own fields
    cut: bool = False  # half the body, then the connection closes: an origin that fails mid-reply


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    delivery: Delivery
    head_only: bool = False  # HEAD: headers as for GET, no body
    reason: str = ""  # the status line's reason phrase; empty: the usual one (a recorded reply keeps its own)
    own_server: bool = True  # "Server: spe-origin" (a recorded reply carries the recorded origin's fields only)


class Replier(Protocol):
    """The reply logic Server serves: this origin's, the HAR origin's (har_origin.py), a repro case's stand-in."""

    def handle(self, req: Message) -> Reply: ...

    def error(self, status: int, text: str) -> Reply:
        """Also the answer to a request that does not parse."""
        ...


def error_reply(status: int, text: str, extra: list | None = None) -> Reply:
    """A plain-text error, never stored by a cache."""
    return Reply(status, [("Content-Type", "text/plain"), ("Cache-Control", "no-store"), *(extra or [])],
                 f"{status} {REASONS.get(status, '')}: {text}\n".encode(), Delivery())


def query_int(query: dict, name: str, low: int = 0, high: int = 1 << 40) -> int | None:
    values = query.get(name)
    if not values:
        return None
    try:
        return max(low, min(high, int(float(values[-1]))))
    except ValueError:
        return None


def cc_override(model: cm.Model, value: str) -> tuple[str, bool]:
    """(Cache-Control value, cacheable) for a cc= query value."""
    if value == "public":
        return f"public, max-age={model.max_age}", True
    if value == "private":
        return "private", False
    lowered = value.lower()
    return value, not any(word in lowered for word in ("no-store", "no-cache", "private"))


def is_lab_host(authority: str) -> bool:
    """Loopback addresses and localhost only: the origin never poses as another site."""
    host = authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Origin:
    """The reply logic (no sockets): counters, serials and the model."""

    def __init__(self, model: cm.Model, seed: int = 1, think_mean_ms: float | None = None,
                 think_sd_ms: float | None = None):
        self.model = model
        self.rng = random.Random(seed)
        self.think_mean_ms, self.think_sd_ms = think_mean_ms, think_sd_ms
        self.by_path: Counter = Counter()
        self.by_method: Counter = Counter()
        self.by_method_path: Counter = Counter()
        self.by_status: Counter = Counter()
        self.serial = 0
        self.total = 0

    def stats(self) -> dict:
        return {"total": self.total, "by_method": dict(self.by_method), "by_status": dict(self.by_status),
                "by_path": dict(self.by_path), "by_method_path": dict(self.by_method_path), "serial": self.serial}

    def handle(self, req: Message) -> Reply:
        method, target = req.method, req.target
        if method == "CONNECT":
            return self._count(req, "CONNECT", target, self.error(403, "no tunnels: not a lab destination"))
        parts = urlsplit(target)
        if parts.scheme and not is_lab_host(parts.netloc):
            return self._count(req, method, target, self.error(403, "not a lab destination"))
        path = parts.path or "/"
        if path == "/_stats":
            body = json.dumps(self.stats(), sort_keys=True).encode()
            return Reply(200, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body,
                         Delivery(), method == "HEAD")
        query = parse_qs(parts.query)
        return self._count(req, method, path, with_interim(req, self._object(req, method, path, query), query))

    def _count(self, req: Message, method: str, path: str, reply: Reply) -> Reply:
        self.total += 1
        self.by_method[method] += 1
        self.by_status[reply.status] += 1
        self.by_path[path] += 1
        self.by_method_path[f"{method} {path}"] += 1
        reply.headers.append(("X-Origin-Count", str(self.by_path[path])))
        return reply

    def error(self, status: int, text: str, extra: list | None = None) -> Reply:
        return error_reply(status, text, extra)

    def _think(self, query: dict) -> float:
        forced = query_int(query, "think", 0, 600_000)
        if forced is not None:
            return float(forced)
        return cm.think_ms(self.model, self.rng, self.think_mean_ms, self.think_sd_ms)

    def _post(self, req: Message, path: str, query: dict) -> Reply:
        self.serial += 1
        digest = hashlib.md5(req.body).hexdigest()
        body = f"spe post {path} serial {self.serial} length {len(req.body)} md5 {digest}\n".encode()
        headers = [("Content-Type", "text/plain"), ("Cache-Control", "private, no-cache"),
                   ("X-Origin-Serial", str(self.serial))]
        return Reply(200, headers, body, Delivery(think_ms=self._think(query)))

    def _unsafe(self, req: Message, method: str, path: str, query: dict) -> Reply:
        """Any method, the status the query asks for: what a web application answers a form or an API call."""
        self.serial += 1
        status = query_int(query, "status", 200, 599) or 200
        size = query_int(query, "size", 0, MAX_OVERRIDE_SIZE)
        digest = hashlib.md5(req.body).hexdigest()
        line = f"spe {method} {path} serial {self.serial} length {len(req.body)} md5 {digest}\n".encode()
        body = b"" if status in (204, 304) else line if size is None else (line * (size // len(line) + 1))[:size]
        headers = [("Content-Type", "text/plain"), ("X-Origin-Serial", str(self.serial))]
        if status in (201, 303):
            headers.append(("Location", f"/unsafe/created/{self.serial}"))
        return Reply(status, headers, body, Delivery(think_ms=self._think(query)), method == "HEAD")

    def _conformance(self, req: Message, method: str, path: str, query: dict) -> Reply:
        case = conformance.reply(method, path, req.header, self.by_path[path] + 1)
        delivery = Delivery(think_ms=self._think(query), cut=case.cut)
        if case.interim and req.version != "1.0":  # never to an HTTP/1.0 client (RFC 9110 15.2)
            delivery = replace(delivery, interim=tuple(status for status, _ in case.interim),
                               interim_fields=dict(case.interim))
        return Reply(case.status, list(case.headers), case.body, delivery, case.head_only)

    def _object(self, req: Message, method: str, path: str, query: dict) -> Reply:
        """By path: a conformance case, /unsafe/ (any method), /post (POST only), else a content-model object."""
        if path.startswith(conformance.PREFIX):
            return self._conformance(req, method, path, query)
        if path.startswith("/unsafe/"):
            return self._unsafe(req, method, path, query)
        if path.startswith("/post/") or path == "/post":
            if method != "POST":
                return self.error(405, "POST only", [("Allow", "POST")])
            return self._post(req, path, query)
        if method not in ("GET", "HEAD"):
            return self.error(405 if method == "POST" else 501, f"{method} not served here",
                              [("Allow", "GET, HEAD")])
        return self._model_object(req, method, path, query)

    def _model_object(self, req: Message, method: str, path: str, query: dict) -> Reply:
        """GET or HEAD of an object of the content model, with the query's overrides."""
        kind, oid = cm.parse_path(path)
        if kind == "seq" and int(oid.rsplit("/", 1)[1]) >= self.model.seq_length:
            return self.error(404, "past the end of the sequence")
        spec = self._spec(kind, oid, query)
        cc, cacheable = cm.cache_control(self.model, spec.cache), spec.cacheable
        if "cc" in query:
            cc, cacheable = cc_override(self.model, query["cc"][-1])
        variant = req.header("accept-language")[:64] if spec.cache == "vary" else ""
        spec = replace(spec, etag=cm.variant_etag(spec, variant))  # If-None-Match is then answered per variant
        headers = [("Content-Type", spec.content_type), ("Cache-Control", cc),
                   *(_validator_headers(spec) if cacheable else []), *_cache_headers(spec, query),
                   *self._next_in_sequence(kind, oid)]
        delivery = self._delivery(spec, query)
        if cacheable and conditional.not_modified(req, spec.etag, spec.last_modified):
            return Reply(304, headers, b"", delivery)
        serial = None
        if not cacheable:  # each uncacheable reply is told apart by its serial, in a field and in the body
            self.serial += 1
            serial = self.serial
            headers.append(("X-Origin-Serial", str(serial)))
        return Reply(200, headers, cm.body(self.model, spec, serial, variant), delivery, method == "HEAD")

    def _spec(self, kind: str, oid: str, query: dict) -> cm.ObjectSpec:
        """The model's object, resized by size=BYTES (its ETag then names the size)."""
        spec = cm.object_spec(self.model, kind, oid)
        size = query_int(query, "size", 0, MAX_OVERRIDE_SIZE)
        if size is not None:
            spec = replace(spec, size=size, etag=spec.etag.rsplit("-", 1)[0] + f'-{size}"')
        return spec

    def _next_in_sequence(self, kind: str, oid: str) -> list[tuple[str, str]]:
        """A sequence object links to the next one, but the last."""
        if kind != "seq":
            return []
        seq, n = oid.rsplit("/", 1)
        if int(n) + 1 >= self.model.seq_length:
            return []
        return [("Link", f'</seq/{seq}/{int(n) + 1}.jpg>; rel="next"')]

    def _delivery(self, spec: cm.ObjectSpec, query: dict) -> Delivery:
        framing = query.get("te", [""])[-1]
        chunked = framing == "chunked" or (spec.chunked and framing != "length")
        pieces = query_int(query, "chunks", 1, 100_000) or (max(1, -(-spec.size // CHUNK)) if chunked else 1)
        gap = query_int(query, "gap", 0, 600_000) or 0
        rate = query_int(query, "rate", 0, 1 << 40)
        return Delivery(self._think(query), chunked, pieces, float(gap), self.model.rate if rate is None else rate)


def _validator_headers(spec: cm.ObjectSpec) -> list[tuple[str, str]]:
    return [("Last-Modified", format_date(spec.last_modified)), ("ETag", spec.etag)]


def _cache_headers(spec: cm.ObjectSpec, query: dict) -> list[tuple[str, str]]:
    """The fields the object's cache kind adds (a cookie, or Vary), then the Vary that vary=NAMES asks for."""
    headers = []
    if spec.cache == "cookie":
        headers.append(("Set-Cookie", f"spe={hashlib.md5(spec.oid.encode()).hexdigest()[:12]}; Path=/"))
    elif spec.cache == "vary":
        headers.append(("Vary", "Accept-Language"))
    if "vary" in query:
        headers.append(("Vary", query["vary"][-1]))
    return headers


def interim_statuses(query: dict) -> tuple[int, ...]:
    """interim=103,102: the 1xx statuses asked for (101 is an upgrade, not an interim response: never)."""
    codes = [int(c) for c in ",".join(query.get("interim", [])).split(",") if c.strip().isdigit()]
    return tuple(c for c in codes if 100 <= c <= 199 and c != 101)[:MAX_INTERIM]


def with_interim(req: Message, reply: Reply, query: dict) -> Reply:
    """The reply preceded by the interim responses the query asks for; none to an HTTP/1.0 client, which a
    server must not send one (RFC 9110 15.2)."""
    statuses = interim_statuses(query)
    if not statuses or req.version == "1.0":
        return reply
    pause = query_int(query, "interim_ms", 0, 600_000) or 0
    return replace(reply, delivery=replace(reply.delivery, interim=statuses, interim_ms=float(pause)))


def interim_bytes(status: int, fields: tuple[tuple[str, str], ...] | None = None) -> bytes:
    """A 1xx response: its own fields when given (a conformance case's), else a 103's Link a browser preloads."""
    reason = INTERIM_REASONS.get(status, "Interim")
    if fields is None:
        fields = (("Link", "</style.css>; rel=preload"),) if status == 103 else ()
    lines = "".join(f"{name}: {value}\r\n" for name, value in fields)
    return f"HTTP/1.1 {status} {reason}\r\n{lines}\r\n".encode("latin-1")


def head_bytes(reply: Reply, close: bool) -> bytes:
    reason = reply.reason or REASONS.get(reply.status, "Unknown")
    lines = [f"HTTP/1.1 {reply.status} {reason}", *(["Server: spe-origin"] if reply.own_server else [])]
    if not any(name.lower() == "date" for name, _ in reply.headers):  # a conformance case may set its own
        lines.insert(1, f"Date: {http_date()}")
    lines += [f"{k}: {v}" for k, v in reply.headers]
    if reply.status not in (204, 304):  # neither may have a body nor say its length (RFC 9110 8.6)
        if reply.delivery.chunked:
            lines.append("Transfer-Encoding: chunked")
        else:
            lines.append(f"Content-Length: {len(reply.body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def split_body(body: bytes, pieces: int) -> list[bytes]:
    """`pieces` near-equal consecutive slices (fewer if the body is shorter)."""
    pieces = max(1, min(pieces, len(body)))
    step, extra = divmod(len(body), pieces)
    out, at = [], 0
    for i in range(pieces):
        size = step + (1 if i < extra else 0)
        out.append(body[at:at + size])
        at += size
    return out


def frame(piece: bytes, chunked: bool) -> bytes:
    return b"%x\r\n%s\r\n" % (len(piece), piece) if chunked and piece else piece


async def send(writer: asyncio.StreamWriter, reply: Reply, close: bool) -> None:
    # Our own writer, not a library's: think time, chunk gaps and pacing decide when each byte leaves.
    d = reply.delivery
    for status in d.interim:  # each leaves on its own, ahead of the think time (102: "still working")
        if d.interim_ms > 0:
            await asyncio.sleep(d.interim_ms / 1000)
        writer.write(interim_bytes(status, d.interim_fields.get(status)))
        await writer.drain()
    if d.think_ms > 0:
        await asyncio.sleep(d.think_ms / 1000)
    head = head_bytes(reply, close)
    if d.cut:
        writer.write(head + frame(reply.body[:len(reply.body) // 2], d.chunked))
        await writer.drain()
        raise ConnectionAbortedError("the reply is cut on purpose")
    if reply.head_only or reply.status == 304 or not reply.body:
        writer.write(head + (b"0\r\n\r\n" if d.chunked and reply.status != 304 and not reply.head_only else b""))
        await writer.drain()
        return
    if d.rate > 0:  # paced: a twentieth of a second's worth per write
        d_pieces = max(d.pieces, -(-len(reply.body) // max(1, d.rate // 20)))
        gap_ms = max(d.gap_ms, 1000 * len(reply.body) / d.rate / d_pieces)
    else:
        d_pieces, gap_ms = d.pieces, d.gap_ms
    pieces = split_body(reply.body, d_pieces)
    if gap_ms <= 0:  # everything in one write: header and body leave together
        writer.write(head + b"".join(frame(p, d.chunked) for p in pieces) + (b"0\r\n\r\n" if d.chunked else b""))
        await writer.drain()
        return
    writer.write(head)
    for i, piece in enumerate(pieces):
        if i:
            await asyncio.sleep(gap_ms / 1000)
        last = b"0\r\n\r\n" if d.chunked and i == len(pieces) - 1 else b""
        writer.write(frame(piece, d.chunked) + last)
        await writer.drain()


class Server:
    """The socket side: one task per connection, requests answered in order."""

    def __init__(self, origin: Replier):
        self.origin = origin
        self.tasks: set[asyncio.Task] = set()

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tasks.add(asyncio.current_task())
        sock = writer.get_extra_info("socket")
        if sock is not None:  # header and body may leave in separate writes: no Nagle delay
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        requests = RequestReader(reader)
        try:
            while True:
                try:
                    req = await requests.next()
                    if req is None:
                        break
                except HttpError as e:
                    await send(writer, self.origin.error(400, str(e)), close=True)
                    break
                reply = self.origin.handle(req)
                close = not req.keep_alive
                await send(writer, reply, close)
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self.tasks.discard(asyncio.current_task())
            writer.close()


def parse_listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def tls_context(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """The server side of --tls: a certificate for localhost and 127.0.0.1 from a test CA kept in
    `directory` (made there on first use). Returns the context and the CA certificate's path."""
    ca, cert, key = directory / ORIGIN_CA_NAME, directory / ORIGIN_CERT_NAME, directory / ORIGIN_KEY_NAME
    if not (ca.exists() and cert.exists() and key.exists()):
        ca, cert, key = test_origin_tls(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context, ca


async def serve(host: str, port: int, origin: Replier, tls: tuple[str, int, Path] | None = None) -> None:
    server_side = Server(origin)
    server = await asyncio.start_server(server_side.connection, host, port, limit=MAX_HEAD, backlog=1024)
    bound = server.sockets[0].getsockname()
    servers = [server]
    print(f"origin listening on {bound[0]}:{bound[1]}", flush=True)
    if tls:
        context, ca = tls_context(tls[2])
        tls_server = await asyncio.start_server(server_side.connection, tls[0], tls[1], limit=MAX_HEAD, backlog=1024,
                                                ssl=context, ssl_handshake_timeout=10)
        servers.append(tls_server)
        tls_bound = tls_server.sockets[0].getsockname()
        print(f"origin listening with TLS on {tls_bound[0]}:{tls_bound[1]} (test CA {ca})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for each in servers:
        each.close()
    for task in list(server_side.tasks):
        task.cancel()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(each.wait_closed() for each in servers)), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./spe origin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", type=parse_listen, required=True, metavar="HOST:PORT",
                        help="address to listen on (port 0: any free port, printed)")
    parser.add_argument("--model", help="JSON file of content-model parameters (docs/workloads.md)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the per-request think times")
    parser.add_argument("--think-mean-ms", type=float, help="think time mean (default: the model's, 300)")
    parser.add_argument("--think-sd-ms", type=float, help="think time deviation (default: the model's, 150)")
    parser.add_argument("--tls", type=parse_listen, metavar="HOST:PORT",
                        help="also serve the same content over HTTPS here (port 0: any free port, printed)")
    parser.add_argument("--tls-dir", type=Path, default=Path("origin-tls"),
                        help="where --tls keeps its test CA (origin-ca.pem: hand it to the Collector) and its "
                             "certificate for localhost and 127.0.0.1; made on first use (default ./origin-tls)")
    args = parser.parse_args(argv)
    try:
        model = cm.Model.load(args.model)
    except (OSError, ValueError, TypeError) as e:
        parser.error(f"--model: {e}")
    origin = Origin(model, args.seed, args.think_mean_ms, args.think_sd_ms)
    tls = (args.tls[0], args.tls[1], args.tls_dir) if args.tls else None
    asyncio.run(serve(args.listen[0], args.listen[1], origin, tls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
