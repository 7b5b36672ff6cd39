"""What clients may throw at the Multiplier, and stopping it: clear answers, no lost record."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

import pytest
from conftest import ROOT, read_records
from httpclient import Connection, request_bytes
from mini_origin import body_for

from spe_tools.process import free_port


@pytest.fixture(scope="module")
def child(lab):
    return lab.squid_child("safety")


def raw_exchange(port: int, data: bytes, host: str = "127.0.0.1") -> bytes:
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


@pytest.mark.parametrize("data, status, reason", [
    (b"NONSENSE\r\n\r\n", 400, b"malformed request"),
    (b"GET /local/path HTTP/1.1\r\nHost: x\r\n\r\n", 400, b"absolute http:// URL"),
    (b"POST http://127.0.0.1:1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n", 400, b""),
    (b"GET https://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, b"CONNECT"),
    (b"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", 431, b"max-header"),
])
def test_bad_requests_get_a_status_with_a_reason_and_a_record(lab, start_multiplier, data, status, reason):
    m = start_multiplier()
    reply = raw_exchange(m.port, data)
    assert reply.startswith(b"HTTP/1.1 %d" % status), reply[:200]
    assert reason in reply
    record = m.records(1)[0]
    assert record["client_status"] == status
    assert record["note"]


POST = b"POST http://127.0.0.1:1/post HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize("data, status", [
    (b"GET http://127.0.0.1:1/ HTTP/1.1\nHost: x\n\n", 400),  # bare LF
    (POST + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
    (POST + b"Content-Length: -1\r\n\r\n", 400),
    (POST + b"Content-Length: +3\r\n\r\nabc", 400),
    (POST + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400),  # chunked not last
    (POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 400),
    (POST + b"Transfer-Encoding: gzip\r\n\r\n", (400, 501)),  # the parser or the request check refuses it
    (POST + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),  # space before the colon
    (POST + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n", 400),  # chunk size
    (POST + b"Transfer-Encoding: chunked\r\n\r\n3;" + b"e" * 200_000 + b"\r\nabc\r\n0\r\n\r\n", 400),
    (b"GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),  # NUL in a value
])
def test_request_smuggling_attempts_are_refused_and_the_connection_closed(lab, start_multiplier, data, status):
    m = start_multiplier()
    # A smuggled second request after the first must never be answered: the connection closes.
    smuggled = b"GET http://127.0.0.1:1/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
    reply = raw_exchange(m.port, data + smuggled)
    allowed = status if isinstance(status, tuple) else (status,)
    assert int(reply[9:12]) in allowed, reply[:200]
    assert reply.count(b"HTTP/1.1 ") == 1
    records = m.records(1)
    assert len(records) == 1 and records[0]["client_status"] in allowed


def test_requests_to_the_multiplier_itself_are_loops(lab, start_multiplier):
    m = start_multiplier()
    reply = raw_exchange(m.port, request_bytes("GET", f"http://127.0.0.1:{m.port}/"))
    assert reply.startswith(b"HTTP/1.1 508")


def test_another_loopback_address_on_the_listening_port_is_not_a_loop(lab, start_multiplier):
    """Listening on 127.0.0.2:P, the Multiplier is not 127.0.0.1:P: an origin there is served (a check
    by port alone would answer every 127.x host on it with 508); 127.0.0.2:P itself is still a loop."""
    m = start_multiplier(host="127.0.0.2")
    beside = lab.group.start(f"origin-beside-{m.port}", [sys.executable, str(ROOT / "tests/fixtures/mini_origin.py"),
                                                          "--port", str(m.port)],
                             port=m.port, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        with Connection(m.port, host="127.0.0.2") as c:
            reply = c.get(f"http://127.0.0.1:{m.port}/c/beside?size=100")
        assert reply.status == 200 and reply.body == body_for("beside", 100)
        looped = raw_exchange(m.port, request_bytes("GET", f"http://127.0.0.2:{m.port}/"), host="127.0.0.2")
        assert looped.startswith(b"HTTP/1.1 508")
    finally:
        beside.stop()
    records = m.records(2)
    assert [r["client_status"] for r in records] == [200, 508]


def test_connect_only_to_allowed_ports(lab, start_multiplier):
    m = start_multiplier()
    reply = raw_exchange(m.port, b"CONNECT 127.0.0.1:25 HTTP/1.1\r\nHost: 127.0.0.1:25\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403") and b"--connect-port" in reply
    assert m.records(1)[0]["method"] == "CONNECT"


def test_connect_tunnels_through_the_collector(lab, start_multiplier):
    m = start_multiplier("--connect-port", str(lab.origin_port))
    with Connection(m.port) as c:
        assert c.connect_tunnel(f"127.0.0.1:{lab.origin_port}").status == 200
        # Inside the tunnel: plain HTTP to the origin, end to end.
        assert c.get("http://x/c/tunnel?size=5", headers={"Connection": "close"}).status == 200
    record = m.records(1)[0]
    assert record["method"] == "CONNECT" and record["proxies"] == [] and "tunnel" in record["note"]


def test_collector_down_gives_502_with_a_reason_and_a_record(lab, start_multiplier, child):
    dead = free_port()
    m = start_multiplier("--collector", f"127.0.0.1:{dead}", "--proxy", f"c=127.0.0.1:{child.port}", collector=False)
    with Connection(m.port) as c:
        reply = c.get(lab.url("/c/down?size=10"))
        assert reply.status == 502
        assert b"refused" in reply.body
        assert c.get(lab.url("/c/down?size=10")).status == 502  # the connection stays usable
    records = m.records(2)
    assert [r["client_status"] for r in records] == [502, 502]
    assert records[0]["collector"]["error"] == "refused"
    assert records[0]["proxies"] == [] and "Collector" in records[0]["note"]


def exchange_from(source: str, port: int, data: bytes) -> bytes:
    """raw_exchange from another loopback address (the client address the allow-list sees)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(data)
        return b"".join(iter(lambda: s.recv(65536), b""))


def test_clients_outside_the_allow_list_are_refused(lab, start_multiplier):
    m = start_multiplier("--allow", "127.0.0.2/32")
    allowed = request_bytes("GET", lab.url("/c/allowed?size=1"), {"Connection": "close"})
    assert exchange_from("127.0.0.2", m.port, allowed).startswith(b"HTTP/1.1 200")
    reply = exchange_from("127.0.0.1", m.port, request_bytes("GET", lab.url("/c/refused?size=1")))
    assert reply.startswith(b"HTTP/1.1 403")
    # The log is flushed every second and at exit: after the exit it holds every record there is.
    assert m.stop() == 0
    records = read_records(m.log)
    assert [(r["client"].rsplit(":", 1)[0], r["url"]) for r in records] == [
        ("127.0.0.2", lab.url("/c/allowed?size=1"))]


def test_sigterm_under_load_loses_no_record(lab, child, start_multiplier):
    slow = lab.fault_proxy("slow-sigterm", "slow", "--delay-ms", "200")
    m = start_multiplier("--proxy", f"c=127.0.0.1:{child.port}", "--proxy", f"slow=127.0.0.1:{slow.port}")
    completed = [0] * 4

    def client(i: int, stop: threading.Event) -> None:
        try:
            with Connection(m.port, timeout=10) as c:
                n = 0
                while not stop.is_set():
                    reply = c.get(lab.url(f"/c/load{i}-{n % 7}?size=2000"))
                    assert reply.status == 200
                    completed[i] += 1
                    n += 1
                    # Paced slower than the slow proxy (200 ms), which gets each connection's requests one at a
                    # time: it keeps up, so at the signal every leg is in flight or done, none left waiting (a
                    # client faster than a proxy is never held back; that proxy loses legs instead).
                    time.sleep(0.25)
                    if reply.headers.get("connection") == "close":
                        return
        except (ConnectionError, OSError, ValueError):
            return  # the Multiplier closed an idle connection: requests not sent are not requests

    records = m.sigterm_under_load(client, len(completed))
    assert sum(completed) > 10
    assert len(records) == sum(completed)
    assert len({r["id"] for r in records}) == len(records)
    # Fan-outs in flight at the signal were finished, not dropped.
    assert all(len(r["proxies"]) == 2 for r in records)
    not_ok = [(r["id"], p["name"], p["result"], p["error"])
              for r in records for p in r["proxies"] if p["result"] != "OK"]
    assert not_ok == []
