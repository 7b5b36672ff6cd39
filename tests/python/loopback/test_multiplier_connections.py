"""How client connections end: long tunnels, refusals a client mid-upload still reads, stopping under churn."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest
from httpclient import Connection, request_bytes
from mini_origin import body_for


@pytest.fixture(scope="module")
def child(lab):
    return lab.squid_child("connections")


@contextlib.contextmanager
def paced_sender(chunks: int, chunk: bytes, pause_s: float):
    """A loopback TCP server that, to its one client, sends `chunks` times `chunk`, `pause_s` apart, then closes."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(15)
    done = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                for _ in range(chunks):
                    conn.sendall(chunk)
                    if done.wait(pause_s):
                        return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        done.set()
        server.close()
        thread.join(timeout=20)


def test_a_one_way_tunnel_outlives_the_client_timeout(lab, start_multiplier):
    # A download through CONNECT: the client sends nothing for 3 s, three times --client-timeout,
    # but the bytes coming down every 0.3 s keep the tunnel alive (one idle deadline per tunnel).
    chunks, chunk = 10, b"d" * 1000
    with paced_sender(chunks, chunk, 0.3) as port:
        m = start_multiplier("--connect-port", str(port), "--client-timeout", "1")
        with Connection(m.port, timeout=15) as c:
            assert c.connect_tunnel(f"127.0.0.1:{port}").status == 200
            received = c.file.read()  # until the server's close comes through the tunnel
    assert received == chunk * chunks
    record = m.records(1)[0]
    assert record["method"] == "CONNECT" and record["client_status"] == 200
    assert f"{chunks * len(chunk)} bytes down" in record["note"]


def test_an_idle_tunnel_still_closes_after_the_client_timeout(lab, start_multiplier):
    # The other half of the rule: with no bytes either way, the tunnel ends after --client-timeout.
    with paced_sender(1, b"hello", 30) as port:
        m = start_multiplier("--connect-port", str(port), "--client-timeout", "1")
        with Connection(m.port, timeout=15) as c:
            assert c.connect_tunnel(f"127.0.0.1:{port}").status == 200
            assert c.file.read() == b"hello"  # then EOF from the Multiplier, long before the server's 30 s
        record = m.records(1)[0]
        assert "5 bytes down" in record["note"]


def test_a_413_reaches_a_client_still_uploading(lab, start_multiplier):
    # The client sends its whole 8 MB body before it reads (as most clients do). The Multiplier refuses
    # after 1,000 bytes; it must read and discard the rest rather than close with unread bytes, which
    # makes Linux send a reset that destroys the reply (RFC 9112 9.6).
    m = start_multiplier("--max-request-body", "1000")
    body = b"u" * (8 << 20)
    with Connection(m.port, timeout=15) as c:
        c.send(request_bytes("POST", lab.url("/post/big"), body=body))
        reply = c.read_reply()
    assert reply.status == 413
    assert b"max-request-body" in reply.body
    assert len(reply.body) == int(reply.headers["content-length"])
    assert m.records(1)[0]["client_status"] == 413


def test_an_http10_client_gets_no_100_continue(lab, child, start_multiplier):
    # RFC 9110 10.1.1: a server must not send 100 Continue to an HTTP/1.0 client.
    m = start_multiplier("--proxy", f"c=127.0.0.1:{child.port}")
    body = b"hello"
    header = request_bytes("POST", lab.url("/post/old10"), {"Expect": "100-continue", "Content-Length": "5"},
                           version="HTTP/1.0")
    with Connection(m.port, timeout=10) as c:
        c.send(header)
        time.sleep(0.3)  # a 100 Continue, if any, would be sent now
        c.send(body)
        reply = c.read_reply()
    assert reply.status == 200, reply.raw_header
    assert m.records(1)[0]["client_status"] == 200


def test_an_http11_client_still_gets_100_continue(lab, child, start_multiplier):
    m = start_multiplier("--proxy", f"c=127.0.0.1:{child.port}")
    header = request_bytes("POST", lab.url("/post/new11"), {"Expect": "100-continue", "Content-Length": "5"})
    with Connection(m.port, timeout=10) as c:
        c.send(header)
        assert c.read_reply().status == 100
        c.send(b"hello")
        assert c.read_reply().status == 200


def test_sigterm_on_two_threads_while_connections_come_and_go(lab, child, start_multiplier):
    # Connections open, are served and close on two I/O threads while SIGTERM closes the acceptor and
    # drains: the acceptor lives on its own strand, so the close never races an accept. Under the ASan
    # build a memory error fails the test (the fixture reads the Multiplier's output).
    m = start_multiplier("--threads", "2", "--proxy", f"c=127.0.0.1:{child.port}")
    completed = [0] * 6

    def client(i: int, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            try:
                with Connection(m.port, timeout=10) as c:
                    reply = c.get(lab.url(f"/c/churn{i}-{n % 5}?size=500"))
            except (ConnectionError, OSError, ValueError):
                return  # refused or closed: the Multiplier is stopping
            assert reply.status == 200 and reply.body == body_for(f"churn{i}-{n % 5}", 500)
            completed[i] += 1
            n += 1

    records = m.sigterm_under_load(client, len(completed))
    assert sum(completed) > 20
    assert len(records) == sum(completed)
    assert len({r["id"] for r in records}) == len(records)
    # The run's summary at exit counts the same records, none dropped.
    assert f"stopped; {len(records)} record(s) written, 0 dropped" in m.child.log.read_text()
