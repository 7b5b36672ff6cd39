"""TLS interception on live traffic (issue 26, B): what a long run and a machine shared with other clients
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
    if problems := collector.missing("spe"):
        pytest.fail("the patched Collector is unavailable: " + "; ".join(problems))
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
        assert code in (0, None), m.child.log.read_text(errors="replace")[-2000:]


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
