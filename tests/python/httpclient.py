"""A raw HTTP/1.1 client for tests: exact bytes out, replies parsed by hand, pipelining allowed."""

from __future__ import annotations

import socket
from dataclasses import dataclass


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
    """One client connection to a proxy."""

    def __init__(self, port: int, timeout: float = 10.0, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_reply(self, head: bool = False) -> Reply:
        status_line = self.file.readline()
        if not status_line:
            raise ConnectionError("connection closed before a reply")
        raw = status_line
        headers: dict[str, str] = {}
        while True:
            line = self.file.readline()
            raw += line
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        status = int(status_line.split()[1])
        return Reply(status, headers, self._body(status, headers, head), raw)

    def _body(self, status: int, headers: dict[str, str], head: bool) -> bytes:
        if head or status in (204, 304) or status < 200:
            return b""
        if headers.get("transfer-encoding", "").lower().endswith("chunked"):
            body = b""
            while True:
                size = int(self.file.readline().split(b";")[0], 16)
                if size == 0:
                    while self.file.readline() not in (b"\r\n", b""):
                        pass
                    return body
                body += self.file.read(size)
                self.file.readline()
        if "content-length" in headers:
            return self.file.read(int(headers["content-length"]))
        return self.file.read()

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
