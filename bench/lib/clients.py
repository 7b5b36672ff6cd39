"""The benchmarks' own HTTP clients: one GET on a new connection (checks, warm-up, timed fetches) and an
open-loop client at a fixed rate over persistent connections."""

from __future__ import annotations

import asyncio
import collections
import http.client
import time
from collections.abc import Callable

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
               timeout_s: float = 10) -> dict:
    """Open-loop client: request i is due at start + i/rate (a fixed rate) and goes out on a free one of
    `connections` persistent connections (absolute-form GET of urls(i), as to a proxy). A request that
    finds every connection busy waits and counts as late. Returns the latencies (s, from sending to the
    last body byte), the lateness of each send (s), statuses, errors and the elapsed time."""
    n = max(1, int(rate * seconds))
    result: dict = {"latency": [], "late": [], "status": collections.Counter(), "errors": [], "bytes": 0}

    async def main() -> None:
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05

        async def worker() -> None:
            reader = writer = None
            while True:
                item = await queue.get()
                if item is None:
                    break
                i, due = item
                url = urls(i)
                host = url.split("/")[2]
                sent = loop.time()
                result["late"].append(max(0.0, sent - due))
                try:
                    if writer is None:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout_s)
                        parser = h11.Connection(h11.CLIENT)
                    else:
                        parser.start_next_cycle()
                    writer.write(parser.send(h11.Request(method="GET", target=url, headers=[("Host", host)])))
                    parser.send(h11.EndOfMessage())
                    status, size = await asyncio.wait_for(read_reply(reader, parser), timeout_s)
                    result["latency"].append(loop.time() - sent)
                    result["status"][status] += 1
                    result["bytes"] += size
                    if parser.their_state is not h11.DONE:  # the server closes the connection
                        writer.close()
                        writer = None
                except (OSError, TimeoutError, h11.ProtocolError) as e:
                    result["errors"].append(f"{type(e).__name__}: {e}")
                    if writer is not None:
                        writer.close()
                    writer = None
            if writer is not None:
                writer.close()

        workers = [asyncio.create_task(worker()) for _ in range(connections)]
        for i in range(n):
            due = start + i / rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            queue.put_nowait((i, due))
        for _ in workers:
            queue.put_nowait(None)
        await asyncio.wait_for(asyncio.gather(*workers), timeout_s * 2 + 5)
        result["elapsed"] = loop.time() - start

    asyncio.run(main())
    return result
