"""Persistent client connections (one pool per robot or per replayed client) and one timed exchange."""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass, field

from spe_tools.workload.http11 import MAX_HEAD, HttpError, Message, read_reply


@dataclass
class Exchange:
    """One request's outcome and its times (event-loop clock, seconds)."""

    scheduled: float
    sent: float = 0.0
    first_byte: float = 0.0
    done: float = 0.0
    status: int = 0
    length: int = 0
    error: str = ""
    reply: Message | None = None
    info: dict = field(default_factory=dict)

    @property
    def late_ms(self) -> float:
        return (self.sent - self.scheduled) * 1000

    @property
    def response_ms(self) -> float:
        return (self.done - self.sent) * 1000


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


@dataclass(frozen=True)
class TlsTarget:
    """HTTPS on a pooled connection: through a proxy's CONNECT tunnel to host:port (`tunnel`), or
    straight to the origin; then TLS for host with `context` (which trusts the CA that signs what
    answers: SPE's behind an intercepting Multiplier, the origin's own otherwise)."""

    host: str
    port: int
    context: ssl.SSLContext
    tunnel: bool = True

    async def start(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.tunnel:
            authority = f"{self.host}:{self.port}"
            writer.write(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1] if head.count(b" ") >= 1 else b""
            if status != b"200":
                raise HttpError(f"CONNECT {authority} refused: {head.splitlines()[0].decode(errors='replace')}")
        await writer.start_tls(self.context, server_hostname=self.host)


class Pool:
    """Keep-alive connections to one address: an idle one is reused, else a new one is opened,
    up to `max_conns`; past that a request waits (and is reported late)."""

    def __init__(self, host: str, port: int, max_conns: int = 8, tls: TlsTarget | None = None):
        self.host, self.port, self.max_conns, self.tls = host, port, max_conns, tls
        self.idle: list[Connection] = []
        self.open = 0
        self.opened = 0  # connections opened over the pool's life (a replay reports how many it used)
        self.freed = asyncio.Condition()

    async def acquire(self) -> Connection:
        async with self.freed:
            while not self.idle and self.open >= self.max_conns:
                await self.freed.wait()
            if self.idle:
                return self.idle.pop()
            self.open += 1
            self.opened += 1
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
        except BaseException:  # also the CancelledError of a connect timeout: the slot must come back
            await self._gone()
            raise
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            try:
                await self.tls.start(reader, writer)
            except BaseException:
                writer.close()
                await self._gone()
                raise
        return Connection(reader, writer)

    async def release(self, conn: Connection, reusable: bool) -> None:
        if reusable:
            async with self.freed:
                self.idle.append(conn)
                self.freed.notify()
        else:
            conn.close()
            await self._gone()

    async def _gone(self) -> None:
        async with self.freed:
            self.open -= 1
            self.freed.notify()

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()


async def _exchange(conn: Connection, data: bytes, method: str, result: Exchange, keep_body: bool) -> bool:
    loop = asyncio.get_running_loop()
    conn.writer.write(data)
    result.sent = loop.time()
    reply = await read_reply(conn.reader, method, keep_body)
    result.first_byte, result.done = reply.head_at, loop.time()
    result.status, result.length, result.reply = reply.status, reply.length, reply
    return reply.keep_alive


async def fetch(pool: Pool, data: bytes, method: str, result: Exchange, timeout: float,
                keep_body: bool = False) -> Exchange:
    """Send one request on a pooled connection and read its reply; errors end up in result.error."""
    loop = asyncio.get_running_loop()
    try:
        conn = await asyncio.wait_for(pool.acquire(), timeout)
    except (TimeoutError, OSError, HttpError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        result.error = f"connect: {type(e).__name__}: {e}"
        result.sent = result.done = loop.time()
        return result
    reusable = False
    try:
        reusable = await asyncio.wait_for(_exchange(conn, data, method, result, keep_body), timeout)
    except TimeoutError:
        result.error = "timeout"
    except (OSError, HttpError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
            IndexError) as e:
        result.error = f"{type(e).__name__}: {e}"
    finally:
        if not result.sent:
            result.sent = loop.time()
        if result.error:
            result.done = loop.time()
        await pool.release(conn, reusable and not result.error)
    return result
