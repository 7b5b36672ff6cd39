"""The workload's connection pool under overload: a connect that times out gives its slot back, so a
robot keeps trying instead of blocking for good once `max_conns` connects have timed out."""

from __future__ import annotations

import asyncio
import socket
import time

from spe_tools.workload.client.connections import Exchange, Pool, fetch

REQUEST = b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def full_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket that never accepts, its accept queue (backlog 0) filled, so the kernel drops
    further SYNs and a connect to it neither succeeds nor fails: it hangs until the client gives up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(listener.getsockname())
        fillers.append(filler)
    time.sleep(0.1)  # let the handshakes that fit complete
    return listener, fillers


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(REPLY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def timeouts_then_accepting(listener: socket.socket, fillers: list[socket.socket]) -> list[Exchange]:
    loop = asyncio.get_running_loop()
    pool = Pool(*listener.getsockname(), max_conns=1)
    results = []
    for _ in range(3):  # more timeouts than the pool has connections
        results.append(await fetch(pool, REQUEST, "GET", Exchange(loop.time()), timeout=0.3))
    for filler in fillers:
        filler.close()
    listener.setblocking(False)
    server = await asyncio.start_server(serve, sock=listener)
    try:  # the listener accepts now: the next request must get through, not wait for a slot forever
        results.append(await fetch(pool, REQUEST, "GET", Exchange(loop.time()), timeout=5))
    finally:
        pool.close()
        server.close()
    return results


def test_connect_timeouts_give_the_connection_slot_back():
    listener, fillers = full_listener()
    try:
        *timed_out, last = asyncio.run(timeouts_then_accepting(listener, fillers))
    finally:
        listener.close()
    assert [ex.error for ex in timed_out] == ["connect: TimeoutError: "] * 3
    assert last.error == "" and last.status == 200, last.error
