"""TLS interception on live traffic: what a long run and a machine shared with other clients
need. Leaf certificates are renewed before they expire (--leaf-validity makes that visible in seconds);
--no-intercept matches the ClientHello's SNI as well as the CONNECT host, so an app that CONNECTs by IP
address to a host it names in its SNI is not intercepted; and a client that refused SPE's certificate is
remembered by its address and TLS fingerprint for a minute, so another client on the same address (the
browser beside a tool that does not trust SPE's CA) is still intercepted.

One bed per module: SPE's CA, a TLS origin with a certificate for www.bank.example, localhost and
127.0.0.1 from a test CA, the patched Collector (trusting that CA, CONNECT allowed to the origin's
port); each test starts its own Multiplier (the refusal memory is per process).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SERIAL, Multiplier
from parts import require

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.process import ProcessGroup, free_port

ORIGIN = """\
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'origin:' + self.path.encode()
        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = c.wrap_socket(s.socket, server_side=True)
s.serve_forever()
"""


@dataclass
class Bed:
    group: ProcessGroup
    workdir: Path
    spe_ca: Path  # SPE's CA certificate (what a client that trusts SPE trusts)
    ca_dir: Path
    origin_ca: Path  # the origin's test CA (what a client reaching the origin itself trusts)
    origin_port: int
    collector_port: int


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    require(collector.missing("spe"), "the patched Collector")
    workdir = Path(tempfile.mkdtemp(prefix="spe-intercept-live-"))
    workdir.chmod(0o755)
    try:
        files, _ = spe_ca.create_spe_ca(workdir / "ca")
        origin_ca, cert, key = spe_ca.test_origin_tls(workdir / "origin-tls",
                                                      ["www.bank.example", "localhost", "127.0.0.1"])
        with ProcessGroup(workdir) as group:
            origin_port, direct = free_port(), free_port()
            group.start("origin", [sys.executable, "-c", ORIGIN, str(origin_port), str(cert), str(key)],
                        port=origin_port)
            collector.start_collector(group, "collector", "spe", direct, {}, origin_ca_files=(str(origin_ca),),
                                      connect_ports=(443, origin_port))
            yield Bed(group, workdir, files.cert, files.directory, origin_ca, origin_port, direct)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def start(bed):
    """Start an intercepting Multiplier in front of the bed's Collector; stopped when the test ends."""
    started: list[Multiplier] = []

    def run(*args: str) -> Multiplier:
        m = Multiplier(bed.group, bed.workdir, f"mult-live-{next(SERIAL)}",
                       ["--collector", f"127.0.0.1:{bed.collector_port}", "--intercept-tls", "--ca-dir",
                        str(bed.ca_dir), "--connect-port", str(bed.origin_port), *args])
        started.append(m)
        return m

    yield run
    for m in started:
        code = m.stop()
        output = m.child.log.read_text(errors="replace")
        assert code in (0, None), output[-2000:]
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):  # the ASan build
            assert marker not in output, output[-3000:]


def tunnel(multiplier: Multiplier, target: str) -> socket.socket:
    """A client connection with an open CONNECT tunnel to `target`."""
    sock = socket.create_connection(("127.0.0.1", multiplier.port), timeout=10)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(1)
        assert chunk, reply
        reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    return sock


def client_context(cafile: Path, *, other_stack: bool = False) -> ssl.SSLContext:
    """A TLS client trusting `cafile` only. `other_stack`: a ClientHello of another make (ciphers, ALPN), as a
    command-line tool's differs from a browser's."""
    context = ssl.create_default_context(cafile=str(cafile))
    if other_stack:
        context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")
        context.set_alpn_protocols(["http/1.1"])
    return context


def handshake(multiplier: Multiplier, target: str, sni: str, context: ssl.SSLContext) -> ssl.SSLSocket:
    sock = tunnel(multiplier, target)
    try:
        return context.wrap_socket(sock, server_hostname=sni)
    except BaseException:
        sock.close()
        raise


def get(tls: ssl.SSLSocket, path: str, host: str) -> bytes:
    tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := tls.recv(65536):
        data += chunk
    return data


def connect_notes(multiplier: Multiplier, target: str, count: int, deadline_s: float = 10) -> list[str]:
    """The notes of the CONNECT records for `target`, once `count` of them are in the log."""
    end = time.monotonic() + deadline_s
    while True:
        notes = [r["note"] for r in multiplier.records(0, deadline_s=0)
                 if r["method"] == "CONNECT" and r["url"] == target]
        if len(notes) >= count or time.monotonic() > end:
            return notes
        time.sleep(0.05)


def test_a_leaf_is_renewed_before_it_expires(bed, start):
    """--leaf-validity 3s: the same leaf while two thirds of its validity remain, a new one after."""
    m = start("--leaf-validity", "3s")
    target = f"localhost:{bed.origin_port}"
    context = client_context(bed.spe_ca)
    certs = []
    for wait_s in (0, 0.2, 2.3):  # the third handshake comes after 2.5 s of 3: a third left
        time.sleep(wait_s)
        with handshake(m, target, "localhost", context) as tls:
            certs.append(tls.getpeercert())
            assert get(tls, "/renew", target).endswith(b"origin:/renew")  # intercepted, and served
    first, again, renewed = certs
    assert again["serialNumber"] == first["serialNumber"]
    assert renewed["serialNumber"] != first["serialNumber"]
    not_after = ssl.cert_time_to_seconds(first["notAfter"])
    assert not_after - ssl.cert_time_to_seconds(first["notBefore"]) == 86400 + 3  # backdated a day, 3 s ahead
    assert ssl.cert_time_to_seconds(renewed["notAfter"]) >= not_after + 2
    assert all("certificate for localhost" in n for n in connect_notes(m, target, 3))


def get_records(multiplier: Multiplier, path: str) -> list[dict]:
    return [r for r in multiplier.records(0, deadline_s=0) if r["method"] == "GET" and r["url"].endswith(path)]


def issuer_name(tls: ssl.SSLSocket) -> str:
    return dict(pair[0] for pair in tls.getpeercert()["issuer"])["commonName"]


def test_no_intercept_matches_the_sni_of_a_connect_by_address(bed, start):
    """CONNECT 127.0.0.1:PORT with SNI www.bank.example under --no-intercept '*.bank.example': the tunnel is
    passed unread (the ClientHello the Multiplier read to learn the SNI reaches the origin whole), and the
    client sees the origin's own certificate."""
    m = start("--no-intercept", "*.bank.example")
    target = f"127.0.0.1:{bed.origin_port}"
    with handshake(m, target, "www.bank.example", client_context(bed.origin_ca)) as tls:
        assert issuer_name(tls) == "SPE test origin CA"
        assert get(tls, "/bank", "www.bank.example").endswith(b"origin:/bank")
    note = connect_notes(m, target, 1)[0]
    assert note.startswith("CONNECT tunnel (not multiplied: --no-intercept *.bank.example (SNI www.bank.example)): ")
    # The same CONNECT naming another host in its SNI is intercepted: the leaf follows the SNI.
    with handshake(m, target, "localhost", client_context(bed.spe_ca)) as tls:
        assert issuer_name(tls) != "SPE test origin CA"
        assert get(tls, "/shop", "localhost").endswith(b"origin:/shop")
    assert "CONNECT intercepted: TLSv1.3, certificate for localhost" in connect_notes(m, target, 2)[1]
    time.sleep(0.3)
    assert not get_records(m, "/bank")
    assert [r["intercepted"] for r in get_records(m, "/shop")] == [True]


def test_a_refusal_is_remembered_for_that_client_not_for_its_address(bed, start):
    """Two clients on 127.0.0.1: a tool that does not trust SPE's CA refuses its certificate, and is given plain
    tunnels to that host for a minute; the browser beside it, which trusts SPE's CA, is still intercepted."""
    m = start()
    target = f"localhost:{bed.origin_port}"
    tool = client_context(bed.origin_ca, other_stack=True)
    browser = client_context(bed.spe_ca)
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(m, target, "localhost", tool)
    with handshake(m, target, "localhost", tool) as tls:  # again, from a new port: a plain tunnel
        assert issuer_name(tls) == "SPE test origin CA"
        assert get(tls, "/tool", target).endswith(b"origin:/tool")
    with handshake(m, target, "localhost", browser) as tls:
        assert issuer_name(tls) != "SPE test origin CA"
        assert get(tls, "/browser", target).endswith(b"origin:/browser")
    refused, tunnelled, intercepted = connect_notes(m, target, 3)[:3]
    assert "TLS handshake failed: the client refused SPE's certificate" in refused
    assert "(the same address and TLS fingerprint" in refused and "tunnelled for the next 60 s" in refused
    assert "not multiplied: this client refused SPE's certificate for localhost in the last 60 s (the same " \
           "address 127.0.0.1 and TLS fingerprint " in tunnelled
    assert intercepted.startswith("CONNECT intercepted: TLSv1.3, certificate for localhost")
    time.sleep(0.3)
    assert not get_records(m, "/tool")
    assert [r["intercepted"] for r in get_records(m, "/browser")] == [True]


class BioClient:
    """A TLS client over memory BIOs, so that the test chooses how its bytes reach the socket."""

    def __init__(self, sock: socket.socket, sni: str, cafile: Path):
        self.sock, self.incoming, self.outgoing = sock, ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ssl.create_default_context(cafile=str(cafile)).wrap_bio(self.incoming, self.outgoing,
                                                                            server_hostname=sni)

    def first_flight(self) -> bytes:
        with pytest.raises(ssl.SSLWantReadError):
            self.tls.do_handshake()
        return self.outgoing.read()

    def flush(self) -> None:
        if data := self.outgoing.read():
            self.sock.sendall(data)

    def receive(self) -> bool:
        chunk = self.sock.recv(65536)
        if chunk:
            self.incoming.write(chunk)
        else:
            self.incoming.write_eof()
        return bool(chunk)

    def finish_handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                assert self.receive(), "closed during the handshake"
        self.flush()

    def get(self, path: str, host: str) -> bytes:
        self.tls.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        self.flush()
        data = b""
        while True:
            try:
                chunk = self.tls.read(65536)
            except ssl.SSLWantReadError:
                if not self.receive():
                    return data
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return data
            if not chunk:
                return data
            data += chunk


@pytest.mark.parametrize("sni, intercepted", [("www.bank.example", False), ("localhost", True)])
def test_a_client_hello_in_pieces_and_records_is_read_whole(bed, start, sni, intercepted):
    """A ClientHello in two TLS records (legal, RFC 8446 5.1), sent in three pieces with the first record's
    header cut in two: the Multiplier reads all of it before deciding, then hands every byte on, to its own
    TLS (intercepted) or through the plain tunnel to the origin (the SNI matches --no-intercept)."""
    m = start("--no-intercept", "*.bank.example")
    target = f"127.0.0.1:{bed.origin_port}"
    with tunnel(m, target) as sock:
        client = BioClient(sock, sni, bed.spe_ca if intercepted else bed.origin_ca)
        hello = client.first_flight()
        assert hello[0] == 22 and len(hello) == 5 + int.from_bytes(hello[3:5], "big")  # one record
        body = hello[5:]
        records = b"".join(hello[:3] + len(part).to_bytes(2, "big") + part for part in (body[:40], body[40:]))
        for piece in (records[:3], records[3:60], records[60:]):
            sock.sendall(piece)
            time.sleep(0.1)
        client.finish_handshake()
        issuer = dict(pair[0] for pair in client.tls.getpeercert()["issuer"])["commonName"]
        assert (issuer != "SPE test origin CA") == intercepted
        assert client.get("/pieces", sni).endswith(b"origin:/pieces")
    note = connect_notes(m, target, 1)[0]
    if intercepted:
        assert note.startswith(f"CONNECT intercepted: TLSv1.3, certificate for {sni}")
    else:
        assert note.startswith("CONNECT tunnel (not multiplied: --no-intercept *.bank.example (SNI www.bank.")


@pytest.mark.parametrize("cut", [1, 3, 5, 40, -1])
def test_a_client_hello_cut_short_ends_at_once(bed, start, cut):
    """A client that closes mid-ClientHello is closed at once with a record, not after --client-timeout."""
    m = start("--client-timeout", "30")
    target = f"localhost:{bed.origin_port}"
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    with tunnel(m, target) as sock:
        sock.sendall(hello[:cut])
        sock.shutdown(socket.SHUT_WR)
        t0 = time.monotonic()
        sock.settimeout(10)
        assert sock.recv(4096) == b""
        assert time.monotonic() - t0 < 2
    assert connect_notes(m, target, 1)[0] == ("CONNECT intercepted: TLS handshake failed: the client closed the "
                                               "connection during the handshake")


def test_a_client_hello_that_trickles_in_is_bounded_by_one_deadline(bed, start):
    """A byte every 0.3 s never lets a per-read deadline pass; the whole ClientHello has --client-timeout."""
    m = start("--client-timeout", "1.5")
    target = f"localhost:{bed.origin_port}"
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    t0 = time.monotonic()
    with tunnel(m, target) as sock:
        try:
            for byte in hello:
                sock.sendall(bytes([byte]))
                time.sleep(0.3)
                assert time.monotonic() - t0 < 10, "still reading after 10 s"
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed by the Multiplier
    assert time.monotonic() - t0 < 5
    assert connect_notes(m, target, 1)[0] == ("CONNECT intercepted: TLS handshake failed: the client did not "
                                               "finish the handshake in time")
