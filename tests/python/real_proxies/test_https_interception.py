"""HTTPS through the lab with interception (--intercept-tls): curl trusting SPE's CA asks for https URLs
through the Multiplier; the patched Collector fetches them over TLS from the synthetic origin (which
serves HTTPS with a test CA the lab hands to it) and every proxy kind gets the same request in the form
it can cache (http://host:port/path marked X-SPE-Scheme: https). Then what must not be intercepted
and what goes wrong: a --no-intercept host, a client that refuses SPE's certificate, plain HTTP,
a truncated ClientHello, a client gone mid-handshake, an HTTP/2-only client, an origin the Collector
cannot verify. Each ends as docs/https.md says, with a record, and no other connection notices.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from interceptionlab import KINDS_UNDER_TEST, NOT_INTERCEPTED, complete, https_lab


@pytest.fixture(scope="module")
def lab():
    with https_lab() as lab:
        yield lab


def curl(lab, url: str, *extra: str, cacert: Path | None = None, interface: str | None = None
         ) -> subprocess.CompletedProcess:
    args = ["curl", "-sS", "--max-time", "20", "-x", f"http://127.0.0.1:{lab.multiplier_port}",
            "-w", "\\n%{http_code}", *extra]
    if cacert:
        args += ["--cacert", str(cacert)]
    if interface:
        args += ["--interface", interface]
    return subprocess.run([*args, url], capture_output=True, timeout=30)


def body_and_status(result: subprocess.CompletedProcess) -> tuple[bytes, int]:
    body, _, status = result.stdout.rpartition(b"\n")
    return body, int(status or 0)


def direct(lab, path: str) -> bytes:
    """The same URL straight from the origin over TLS, not through SPE."""
    context = ssl.create_default_context(cafile=str(lab.origin_ca))
    with socket.create_connection(("127.0.0.1", lab.tls_port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost:{lab.tls_port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1]


def connect_records(lab, target: str, after: int) -> list[dict]:
    end = time.monotonic() + 10
    while True:
        found = [r for r in lab.records(target, 0) if r["method"] == "CONNECT"][after:]
        if found or time.monotonic() > end:
            return found
        time.sleep(0.1)


def test_https_pages_reach_the_client_whole_and_every_proxy_kind_matches(lab):
    paths = [f"/obj/tls-{i}?size={size}" for i, size in enumerate((300, 5000, 70000))]
    for path in paths * 2:  # the second round: the proxies' hits
        body, status = body_and_status(curl(lab, f"https://localhost:{lab.tls_port}{path}", cacert=lab.spe_ca))
        assert status == 200, path
        assert hashlib.md5(body).hexdigest() == hashlib.md5(direct(lab, path)).hexdigest(), path
    for path in paths:
        records = complete(lab, f"localhost:{lab.tls_port}{path}", 2)
        assert len(records) == 2
        for r in records:
            assert r["url"] == f"https://localhost:{lab.tls_port}{path}"
            assert r.get("intercepted") is True
            assert r["collector"]["status"] == 200
            assert {p["name"]: p["result"] for p in r["proxies"]} == dict.fromkeys(KINDS_UNDER_TEST, "OK")


def test_one_origin_fetch_serves_the_client_and_every_proxy_over_tls(lab):
    """The proxies' http://host:port form and the client's https URL are one object in the Collector."""
    path = "/obj/tls-shared?size=1200"
    assert body_and_status(curl(lab, f"https://localhost:{lab.tls_port}{path}", cacert=lab.spe_ca))[1] == 200
    record = complete(lab, f"localhost:{lab.tls_port}{path}", 1)[0]
    assert {p["result"] for p in record["proxies"]} == {"OK"}
    assert lab.origin_count("/obj/tls-shared") == 1
    lines = [line.split() for line in (lab.rundir / "collector/access.log").read_text().splitlines()
             if f":{lab.tls_port}/obj/tls-shared" in line]
    assert {fields[6] for fields in lines} == {f"https://localhost:{lab.tls_port}{path}"}
    assert {lab.port_names[int(fields[10])] for fields in lines} == {"direct", *KINDS_UNDER_TEST}


def test_an_http_url_and_the_https_url_of_the_same_path_stay_apart(lab):
    path = "/obj/both-schemes?size=800"
    assert body_and_status(curl(lab, f"https://localhost:{lab.tls_port}{path}", cacert=lab.spe_ca))[1] == 200
    plain = curl(lab, f"http://localhost:{lab.run.ports.origin}{path}")
    assert body_and_status(plain)[1] == 200
    urls = {r["url"] for r in complete(lab, "/obj/both-schemes", 2)}
    assert urls == {f"https://localhost:{lab.tls_port}{path}", f"http://localhost:{lab.run.ports.origin}{path}"}
    assert lab.origin_count("/obj/both-schemes") == 2  # one fetch per scheme, none shared


def test_a_no_intercept_host_is_tunnelled_unread(lab):
    before = len([r for r in lab.records(NOT_INTERCEPTED, 0) if r["method"] == "CONNECT"])
    # Through a plain tunnel the client talks to the origin itself: it must trust the origin's CA.
    result = curl(lab, f"https://{NOT_INTERCEPTED}:{lab.tls_port}/obj/opaque?size=100", cacert=lab.origin_ca)
    assert body_and_status(result)[1] == 200, result.stderr
    record = connect_records(lab, f"{NOT_INTERCEPTED}:{lab.tls_port}", before)[0]
    assert record["client_status"] == 200
    assert "not multiplied: --no-intercept 127.0.0.1" in record["note"]
    assert not [r for r in lab.records("/obj/opaque", 0) if r["method"] == "GET"]


def test_a_client_that_refuses_the_certificate_gets_a_plain_tunnel_next_time(lab):
    host = f"localhost:{lab.tls_port}"
    before = len([r for r in lab.records(host, 0) if r["method"] == "CONNECT" and "refused" in (r["note"] or "")])
    # From 127.0.0.2, so only this client is remembered as refusing.
    refused = curl(lab, f"https://{host}/obj/refuse?size=100", interface="127.0.0.2")
    assert refused.returncode == 60, refused.stderr  # curl: the peer certificate cannot be authenticated
    again = curl(lab, f"https://{host}/obj/refuse?size=100", cacert=lab.origin_ca, interface="127.0.0.2")
    assert body_and_status(again)[1] == 200, again.stderr
    notes: list[str] = []
    end = time.monotonic() + 10
    while len(notes) < before + 2 and time.monotonic() < end:
        notes = [r["note"] for r in lab.records(host, 0) if r["method"] == "CONNECT" and "refused" in (r["note"] or "")]
        time.sleep(0.1)
    assert "TLS handshake failed: the client refused SPE's certificate" in notes[before]
    assert "not multiplied: this client refused SPE's certificate" in notes[before + 1]
    # Another client is still intercepted.
    assert body_and_status(curl(lab, f"https://{host}/obj/refuse?size=100", cacert=lab.spe_ca))[1] == 200


def open_tunnel(lab, target: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", lab.multiplier_port), timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    return sock


def client_hello(host: str, alpn: list[str] | None = None) -> bytes:
    context = ssl.create_default_context()
    if alpn:
        context.set_alpn_protocols(alpn)
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_hostname=host)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def drain_until_closed(sock: socket.socket) -> None:
    """Read until the Multiplier (or the tunnel behind it) closes; a reset counts as closed."""
    sock.settimeout(15)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    finally:
        sock.close()


def connect_note_of(lab, target: str, client: str) -> str:
    """The note of the CONNECT record from this client address (its source port tells it apart)."""
    end = time.monotonic() + 10
    while True:
        found = [r for r in lab.records(target, 0) if r["method"] == "CONNECT" and r["client"] == client]
        if found or time.monotonic() > end:
            assert found, f"no CONNECT record from {client}"
            return found[0]["note"]
        time.sleep(0.1)


@pytest.mark.parametrize("case", ["plain-http", "truncated-hello", "gone-mid-handshake", "h2-only"])
def test_bad_tls_input_ends_cleanly_with_a_record(lab, case):
    target = f"localhost:{lab.tls_port}"
    sock = open_tunnel(lab, target)
    client = f"127.0.0.1:{sock.getsockname()[1]}"
    if case == "plain-http":
        sock.sendall(f"GET /obj/plain HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    elif case == "truncated-hello":
        sock.sendall(client_hello("localhost")[:40])
        sock.shutdown(socket.SHUT_WR)
    elif case == "gone-mid-handshake":
        sock.sendall(client_hello("localhost"))
        sock.close()
    else:
        sock.sendall(client_hello("localhost", ["h2"]))
    if case != "gone-mid-handshake":
        drain_until_closed(sock)  # a timeout here is a connection left hanging: the test fails
    note = connect_note_of(lab, target, client)
    expected = {"plain-http": "not multiplied: the client's first bytes are not TLS",
                "truncated-hello": "TLS handshake failed",
                "gone-mid-handshake": "TLS handshake failed: the client closed the connection during the handshake",
                "h2-only": "TLS handshake failed: the client offers only h2 (SPE speaks http/1.1 only)"}[case]
    assert expected in note
    # Nobody else noticed.
    after = curl(lab, f"https://{target}/obj/after-{case}?size=100", cacert=lab.spe_ca)
    assert body_and_status(after)[1] == 200, (after.stderr, note)


def test_an_origin_the_collector_cannot_verify_is_a_502_naming_the_reason(lab):
    url = f"https://localhost:{lab.untrusted_port}/"
    body, status = body_and_status(curl(lab, url, cacert=lab.spe_ca))
    assert status == 502
    assert b"X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY" in body  # the reason, not a generic TLS error
    record = lab.records(f"localhost:{lab.untrusted_port}/", 1)[-1]
    assert record["collector"]["status"] == 502
    assert record["url"] == url


def ws_frame(text: str) -> bytes:
    """A client's text frame: FIN, masked (RFC 6455 5.3), a short payload."""
    payload, mask = text.encode(), b"\x01\x02\x03\x04"
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_a_websocket_in_an_intercepted_tunnel_is_tunnelled_through_the_collector_not_multiplied(lab):
    target = f"localhost:{lab.ws_port}"
    raw = open_tunnel(lab, target)
    client = f"127.0.0.1:{raw.getsockname()[1]}"
    tls = ssl.create_default_context(cafile=str(lab.spe_ca)).wrap_socket(raw, server_hostname="localhost")
    tls.sendall(f"GET /chat HTTP/1.1\r\nHost: {target}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += tls.recv(4096)
    head, _, rest = head.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head  # RFC 6455 1.3: that key's answer
    tls.sendall(ws_frame("hello through SPE"))
    echo = rest
    while len(echo) < 2 + len("hello through SPE"):
        echo += tls.recv(4096)
    assert echo[:2] == bytes([0x81, len("hello through SPE")]) and echo[2:] == b"hello through SPE"
    tls.close()
    end = time.monotonic() + 10
    while True:
        found = [r for r in lab.records(target, 0) if r["method"] == "GET" and r["client"] == client]
        if found or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert found, "no record of the upgrade"
    record = found[0]
    assert record["url"] == f"https://{target}/chat" and record.get("intercepted") is True
    assert record["client_status"] == 101 and record["collector"]["status"] == 101
    assert record["proxies"] == []  # tunnelled, never multiplied
    assert "upgraded to websocket, tunnelled (not multiplied)" in record["note"]


def test_a_resumed_tls_session_is_intercepted_and_named_as_such(lab):
    target = f"localhost:{lab.tls_port}"
    context = ssl.create_default_context(cafile=str(lab.spe_ca))
    notes, session = [], None
    for attempt in range(2):
        raw = open_tunnel(lab, target)
        client = f"127.0.0.1:{raw.getsockname()[1]}"
        with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            tls.sendall(f"GET /obj/resume-{attempt}?size=10 HTTP/1.1\r\nHost: {target}\r\n"
                        "Connection: close\r\n\r\n".encode())
            reply = b""
            while chunk := tls.recv(65536):
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200 "), reply[:100]
            session = tls.session  # TLS 1.3: the ticket came after the handshake
            assert tls.session_reused == (attempt == 1)
        notes.append(connect_note_of(lab, target, client))
    assert notes[0] == "CONNECT intercepted: TLSv1.3, certificate for localhost"
    assert notes[1] == "CONNECT intercepted: TLSv1.3, resumed session for localhost"
