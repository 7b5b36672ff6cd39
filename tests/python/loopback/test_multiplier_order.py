"""Each proxy sees each client connection's requests in the client's order, one at a time, even when every
proxy is slower than the client: the leg of request N+1 goes out once that proxy has answered N."""

from __future__ import annotations

import contextlib
import http.client
import random
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from httpclient import Connection

from spe_tools.process import free_port

REQUESTS = 6  # per client connection, back to back
# The stand-ins answer in 200-400 ms, so the sixth request of a connection may wait two seconds for the five
# before it: longer than --order-wait's default, past which a leg goes out of order on purpose
# (test_multiplier_order_wait.py). These tests are about the order itself.
KEEP_ORDER = ("--order-wait", "30s")
CONNECTIONS = ("a", "b")


@dataclass
class Seen:
    connection: str
    n: int
    method: str
    arrived: float
    replying: float = 0.0  # when the stand-in began to write its reply: the next request cannot come before


class SlowProxy(ThreadingHTTPServer):
    """A stand-in proxy under test on 127.0.0.1: delays each reply 200-400 ms, then relays the origin's reply.
    One thread per connection, so requests that overlap are served (and seen) at the same time."""

    daemon_threads = True

    def __init__(self, origin_port: int):
        self.origin_port, self.lock, self.seen = origin_port, threading.Lock(), []
        self.random = random.Random(27)
        super().__init__(("127.0.0.1", 0), SlowHandler)


class SlowHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SlowProxy

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.relay()

    def do_POST(self) -> None:  # noqa: N802
        self.relay()

    def relay(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path)
        _, connection, n = path.path.rsplit("/", 2)
        seen = Seen(connection.removeprefix("order-"), int(n), self.command, time.monotonic())
        with self.server.lock:
            self.server.seen.append(seen)
            delay = self.server.random.uniform(0.2, 0.4)
        time.sleep(delay)
        origin = http.client.HTTPConnection("127.0.0.1", self.server.origin_port, timeout=10)
        origin.request(self.command, path.path + (f"?{path.query}" if path.query else ""), body=body)
        reply = origin.getresponse()
        data = reply.read()
        origin.close()
        seen.replying = time.monotonic()
        self.send_response(reply.status)
        for name, value in reply.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextlib.contextmanager
def slow_proxies(origin_port: int, count: int):
    servers = [SlowProxy(origin_port) for _ in range(count)]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        yield servers
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
        for t in threads:
            t.join(timeout=10)


def client(port: int, origin: str, connection: str, run: str, errors: list) -> None:
    """One client connection: REQUESTS requests back to back, a POST among them (an unsafe request whose
    invalidation the GET after it must not overtake)."""
    try:
        with Connection(port, timeout=30) as c:
            for n in range(REQUESTS):
                if n == 2:
                    reply = c.get(f"{origin}/post/order-{connection}/{n}?run={run}", method="POST", body=b"x" * n)
                else:
                    reply = c.get(f"{origin}/c/{run}/order-{connection}/{n}")
                assert reply.status == 200
    except Exception as e:  # noqa: BLE001 (reported by the test's thread)
        errors.append(e)


@pytest.mark.parametrize("mode,legs", [("sequential", "parallel"), ("concurrent", "parallel"),
                                       ("sequential", "serial")])
def test_each_proxy_sees_each_connection_in_order_when_every_proxy_is_slower(lab, start_multiplier, mode, legs):
    run = f"{mode}-{legs}-{time.monotonic_ns()}"
    with slow_proxies(lab.origin_port, 2) as proxies:
        dead = free_port()  # a proxy that refuses: its failed legs must pass their turn on too
        slow = [a for i, p in enumerate(proxies) for a in ("--proxy", f"slow{i}=127.0.0.1:{p.server_port}")]
        m = start_multiplier("--mode", mode, "--legs", legs, "--timeout", "10", *KEEP_ORDER, *slow,
                             "--proxy", f"dead=127.0.0.1:{dead}")
        origin = f"http://127.0.0.1:{lab.origin_port}"
        errors: list = []
        threads = [threading.Thread(target=client, args=(m.port, origin, conn, run, errors)) for conn in CONNECTIONS]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        client_s = time.monotonic() - start
        assert not errors
        records = m.records(REQUESTS * len(CONNECTIONS), deadline_s=30)
        seen = [list(p.seen) for p in proxies]

    # No record lost, every leg accounted for.
    assert len(records) == REQUESTS * len(CONNECTIONS)
    for proxy, server_seen in zip(("slow0", "slow1"), seen, strict=True):
        for conn in CONNECTIONS:
            mine = sorted((s for s in server_seen if s.connection == conn), key=lambda s: s.arrived)
            # In the client's order ...
            assert [s.n for s in mine] == list(range(REQUESTS)), f"{proxy} saw connection {conn} out of order"
            # ... and one at a time: each request arrived after the proxy began its reply to the one before.
            for before, after in zip(mine, mine[1:], strict=False):
                assert after.arrived >= before.replying, (
                    f"{proxy}: request {after.n} of connection {conn} arrived "
                    f"{before.replying - after.arrived:.3f} s before the reply to {before.n}")
    for r in records:
        legs_by_name = {p["name"]: p for p in r["proxies"]}
        assert set(legs_by_name) == {"slow0", "slow1", "dead"}
        for name in ("slow0", "slow1"):
            leg = legs_by_name[name]
            assert leg["status"] == 200, leg
            assert "queued_us" in leg
            # The proxy's own times leave SPE's queueing out: its delay is at most 0.4 s.
            assert leg["ttfb_us"] < 1_500_000, leg
        assert legs_by_name["dead"]["error"] == "refused"
        assert "queued_us" in legs_by_name["dead"]
    queued = [p["queued_us"] for r in records for p in r["proxies"] if p["name"].startswith("slow")]
    assert max(queued) > 150_000, "the client was faster than the proxies, so some legs waited for their turn"
    # The client ran ahead of the proxies and was never held back for them: its six requests took less than
    # one proxy needs for them (6 x 0.2 s at least), by the Multiplier's clock (each request's arrival). The
    # Multiplier holds a client only while its own measuring is more than --max-fanout-backlog (64) of the
    # connection's requests behind, and records each hold (client_held_us): six requests make none.
    assert not [r for r in records if "client_held_us" in r]
    for conn in CONNECTIONS:
        arrivals = sorted(r["ts"] for r in records if f"/order-{conn}/" in r["url"])
        assert arrivals[-1] - arrivals[0] < REQUESTS * 0.2, arrivals
    assert client_s < 30


def dependent_pairs(port: int, origin: str, run: str, pairs: int, client_name: str | None = None) -> None:
    """A client that sends request 2 of each pair on another connection after reading reply 1 (as a browser
    with six connections per host, or a test client, does): a POST on connection a, then a GET on b."""
    named = {"X-SPE-Client": client_name} if client_name else {}
    with Connection(port, timeout=30) as a, Connection(port, timeout=30) as b:
        for n in range(pairs):
            assert a.get(f"{origin}/post/order-a/{n}?run={run}", method="POST", body=b"x", headers=named).status == 200
            assert b.get(f"{origin}/c/{run}/order-b/{n}", headers=named).status == 200


PAIRS = 4


@pytest.mark.parametrize("order", ["client", "connection"])
def test_each_proxy_sees_a_clients_dependent_requests_in_its_order_across_connections(lab, start_multiplier, order):
    """With --order client (the default) the GET a client sent after reading the POST's reply, on another
    connection, reaches each proxy after that proxy answered the POST, and its leg says it waited for it
    (waited_for). With --order connection it overtakes: the proxies are slower than the Collector."""
    run = f"cross-{order}-{time.monotonic_ns()}"
    with slow_proxies(lab.origin_port, 2) as proxies:
        slow = [a for i, p in enumerate(proxies) for a in ("--proxy", f"slow{i}=127.0.0.1:{p.server_port}")]
        m = start_multiplier("--order", order, "--timeout", "10", *KEEP_ORDER, "--unsafe-requests", "send", *slow)
        dependent_pairs(m.port, f"http://127.0.0.1:{lab.origin_port}", run, PAIRS)
        records = m.records(2 * PAIRS, deadline_s=30)
        seen = [list(p.seen) for p in proxies]

    overtaken = 0
    for server_seen in seen:
        by_request = {(s.connection, s.n): s for s in server_seen}
        assert len(by_request) == 2 * PAIRS
        for n in range(PAIRS):
            post, get = by_request[("a", n)], by_request[("b", n)]
            overtaken += get.arrived < post.replying
    posts = {int(r["url"].split("/")[-1].split("?")[0]): r["id"] for r in records if r["method"] == "POST"}
    gets = [r for r in records if r["method"] == "GET"]
    if order == "connection":
        assert overtaken > 0, "the proxies are slower than the Collector: a GET on another connection overtakes"
        assert not [p for r in gets for p in r["proxies"] if "waited_for" in p]
        return
    assert overtaken == 0, f"{overtaken} GETs reached a proxy before it answered the POST the client had read"
    for r in gets:
        n = int(r["url"].rsplit("/", 1)[1])
        for leg in r["proxies"]:
            assert leg["status"] == 200, leg
            assert leg.get("waited_for") == [posts[n]], leg  # the POST it came after, still being answered


def test_clients_named_apart_at_one_address_keep_their_own_order(lab, start_multiplier):
    """X-SPE-Client tells a load generator's users apart: one user's requests never wait for another's."""
    run = f"named-{time.monotonic_ns()}"
    origin = f"http://127.0.0.1:{lab.origin_port}"
    with slow_proxies(lab.origin_port, 1) as proxies:
        m = start_multiplier("--timeout", "10", *KEEP_ORDER, "--unsafe-requests", "send",
                             "--proxy", f"slow0=127.0.0.1:{proxies[0].server_port}")
        with Connection(m.port, timeout=30) as first, Connection(m.port, timeout=30) as second:
            assert first.get(f"{origin}/c/{run}/order-a/0", headers={"X-SPE-Client": "user-1"}).status == 200
            assert second.get(f"{origin}/c/{run}/order-b/0", headers={"X-SPE-Client": "user-2"}).status == 200
        records = m.records(2, deadline_s=30)
    assert len(records) == 2
    assert not [p for r in records for p in r["proxies"] if "waited_for" in p]
