"""A raw HTTP/1.1 client for tests: exact bytes out, replies framed by h11, pipelining allowed."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import h11


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lowercase names; repeated names joined with ", "
    body: bytes
    raw_header: bytes


def request_bytes(method: str, url: str, headers: dict[str, str] | None = None, body: bytes = b"",
                  version: str = "HTTP/1.1") -> bytes:
    host = url.split("/")[2]
    lines = [f"{method} {url} {version}", f"Host: {host}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k in (headers or {})):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Connection:
    """One client connection to a proxy. Requests go out as the test wrote them; each reply is read
    by a fresh h11 client connection told only the request's method (what framing depends on)."""

    def __init__(self, port: int, timeout: float = 10.0, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rb")
        self.pending = b""  # bytes read past the previous reply (a pipelined one's)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _head(self) -> bytes:
        """The next head, line by line: nothing past it is read, so a tunnel's bytes stay in self.file."""
        raw = b""
        while not raw.endswith((b"\r\n\r\n", b"\n\n")):
            line = self._line()
            if not line:
                raise ConnectionError("connection closed before a reply" if not raw else "closed inside a head")
            raw += line
        return raw

    def _line(self) -> bytes:
        if b"\n" in self.pending:
            line, _, self.pending = self.pending.partition(b"\n")
            return line + b"\n"
        line, self.pending = self.pending + self.file.readline(), b""
        return line

    def read_reply(self, head: bool = False) -> Reply:
        raw = self._head()
        parser = h11.Connection(h11.CLIENT)
        parser.send(h11.Request(method="HEAD" if head else "GET", target="/", headers=[("Host", "spe")]))
        try:
            parser.receive_data(raw)
            start = parser.next_event()
            if start is h11.NEED_DATA:
                raise ValueError(f"not a reply head: {raw[:80]!r}")
            body = b"" if isinstance(start, h11.InformationalResponse) or head else self._body(parser)
        except h11.RemoteProtocolError as e:
            raise ValueError(f"bad reply: {e}") from e
        headers: dict[str, str] = {}
        for name, value in start.headers:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return Reply(start.status_code, headers, body, raw)

    def _body(self, parser: h11.Connection) -> bytes:
        body = b""
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                data, self.pending = self.pending or self.file.read1(65536), b""
                parser.receive_data(data)
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                self.pending = parser.trailing_data[0]
                return body

    def get(self, url: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes = b"") -> Reply:
        self.send(request_bytes(method, url, headers, body))
        return self.read_reply(head=method == "HEAD")

    def connect_tunnel(self, target: str) -> Reply:
        """CONNECT to `target` (HOST:PORT); after a 2xx reply the connection is the tunnel."""
        self.send(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return self.read_reply(head=True)  # no body: the tunnel's bytes follow the header

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
