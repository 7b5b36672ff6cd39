"""The benchmarks' own HTTP clients: one GET on a new connection (checks, warm-up, timed fetches) and an
open-loop client at a fixed rate over persistent connections."""

from __future__ import annotations

import asyncio
import collections
import http.client
import time
from collections.abc import Callable
from dataclasses import dataclass

import h11


def get(port: int, target: str, host: str) -> tuple[int, dict[str, str], bytes]:
    """One GET on a new connection: (status, lowercase headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", target, headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def timed_get(port: int, target: str) -> float:
    """Seconds one GET takes on a new connection, from connecting to the last body byte (as a proxy under
    test fetching a miss would: a client connection of its own per request)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", target)
        conn.getresponse().read()
        return time.monotonic() - start
    finally:
        conn.close()


async def read_reply(reader: asyncio.StreamReader, parser: h11.Connection) -> tuple[int, int]:
    """Reads one reply to the request sent on `parser` (h11 frames it): (status, body bytes)."""
    status = size = 0
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            parser.receive_data(await reader.read(1 << 16))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            size += len(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return status, size
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionError("closed before a reply")


def fixed_rate(port: int, urls: Callable[[int], str], rate: float, seconds: float, connections: int = 16,
               timeout_s: float = 10, headers: tuple[tuple[str, str], ...] = ()) -> dict:
    """Open-loop client: request i is due at start + i/rate (a fixed rate) and goes out on a free one of
    `connections` persistent connections (absolute-form GET of urls(i), as to a proxy, with `headers`). A
    request that finds every connection busy waits and counts as late. Returns the latencies (s, from sending
    to the last body byte), the lateness of each send (s), statuses, errors and the elapsed time."""
    client = FixedRateClient(port, urls, timeout_s, headers)
    asyncio.run(client.run(rate, max(1, int(rate * seconds)), connections))
    return client.result


@dataclass
class ClientConnection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    parser: h11.Connection


class FixedRateClient:
    """fixed_rate's run: a schedule that queues each request when it is due, and workers that each send the
    queued requests on a persistent connection of their own; result holds what fixed_rate returns."""

    def __init__(self, port: int, urls: Callable[[int], str], timeout_s: float,
                 headers: tuple[tuple[str, str], ...] = ()):
        self.port, self.urls, self.timeout_s, self.headers = port, urls, timeout_s, headers
        self.result: dict = {"latency": [], "late": [], "status": collections.Counter(), "errors": [], "bytes": 0}

    async def run(self, rate: float, n: int, connections: int) -> None:
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05
        workers = [asyncio.create_task(self.worker(queue)) for _ in range(connections)]
        for i in range(n):
            due = start + i / rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            queue.put_nowait((i, due))
        for _ in workers:
            queue.put_nowait(None)
        await asyncio.wait_for(asyncio.gather(*workers), self.timeout_s * 2 + 5)
        self.result["elapsed"] = loop.time() - start

    async def worker(self, queue: asyncio.Queue) -> None:
        conn = None
        while (item := await queue.get()) is not None:
            i, due = item
            conn = await self.request(conn, self.urls(i), due)
        if conn is not None:
            conn.writer.close()

    async def request(self, conn: ClientConnection | None, url: str, due: float) -> ClientConnection | None:
        """One GET on `conn` (a new connection if None); the connection to use next (None: open a new one)."""
        loop = asyncio.get_running_loop()
        sent = loop.time()
        self.result["late"].append(max(0.0, sent - due))
        try:
            if conn is None:
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port),
                                                        self.timeout_s)
                conn = ClientConnection(reader, writer, h11.Connection(h11.CLIENT))
            else:
                conn.parser.start_next_cycle()
            request = h11.Request(method="GET", target=url, headers=[("Host", url.split("/")[2]), *self.headers])
            conn.writer.write(conn.parser.send(request))
            conn.parser.send(h11.EndOfMessage())
            status, size = await asyncio.wait_for(read_reply(conn.reader, conn.parser), self.timeout_s)
        except (OSError, TimeoutError, h11.ProtocolError) as e:
            self.result["errors"].append(f"{type(e).__name__}: {e}")
            if conn is not None:
                conn.writer.close()
            return None
        self.result["latency"].append(loop.time() - sent)
        self.result["status"][status] += 1
        self.result["bytes"] += size
        if conn.parser.their_state is not h11.DONE:  # the server closes the connection
            conn.writer.close()
            return None
        return conn
