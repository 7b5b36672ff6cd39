"""CONNECT on live traffic: a CONNECT reaches only an allowed port, whoever parses its target.

A "banner server" stands in for sshd on a random local port P. The Collector (Squid) reads a CONNECT
target's host up to its first colon; a Multiplier that took the port after the last one would pass
`CONNECT 127.0.0.1:P:443` through its --connect-port check as port 443 while the Collector connected to
port P, a raw tunnel to any local port. So the Multiplier accepts authority-form only
(RFC 9110 9.3.6) and refuses anything else with 400 and a reason; and the Collector itself refuses
CONNECT to any port outside the Multiplier's --connect-port list and to its own ports, so a CONNECT
sent to it directly reaches no local service either. Both with the patched Collector and Debian's
stock Squid (the same template).
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Multiplier
from parts import require

from spe_tools import collector
from spe_tools.process import Child, ProcessGroup, free_port

BANNER = b"SSH-2.0-OpenSSH_9.2 banner-server\r\n"
ALLOWED_BANNER = b"hello from the allowed port\r\n"


class BannerServer:
    """Sends its banner to whoever connects (like sshd) and counts the connections; on 127.0.0.1 and,
    when the port is free there too, ::1."""

    def __init__(self, banner: bytes, port: int | None = None):
        self.banner, self.accepted, self.sockets = banner, 0, []
        self.port = port or free_port()
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, self.port))
            except OSError:
                s.close()
                continue
            s.listen(16)
            self.sockets.append(s)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, listening: socket.socket) -> None:
        while True:
            try:
                conn, _ = listening.accept()
            except OSError:
                return  # closed
            self.accepted += 1
            try:
                conn.sendall(self.banner)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        for s in self.sockets:
            s.close()


def exchange(port: int, data: bytes) -> bytes:
    """Send `data`, read everything until the peer closes (or 5 s of silence: an open tunnel)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
        return b"".join(chunks)


def connect_request(target: str, close: bool = False) -> bytes:
    extra = "Connection: close\r\n" if close else ""
    return f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n".encode()


@dataclass
class Bed:
    kind: str  # the Collector's: "spe" (patched) or "squid" (Debian's)
    collector: Child
    proxy_port: int  # the Collector's port for a proxy under test
    multiplier: Multiplier
    banner: BannerServer  # the local service nobody may reach (port P)
    allowed: BannerServer  # a server on a --connect-port


@pytest.fixture(scope="module", params=["spe", "squid"])
def bed(request):
    kind = request.param
    require(collector.missing(kind), f"the {kind} Collector")
    banner, allowed = BannerServer(BANNER), BannerServer(ALLOWED_BANNER)
    workdir = Path(tempfile.mkdtemp(prefix="spe-connect-"))
    workdir.chmod(0o755)
    try:
        with ProcessGroup(workdir) as group:
            direct, proxy_port = free_port(), free_port()
            # The Collector's own direct port is listed too, as a mistaken --connect-port might: still refused.
            child = collector.start_collector(group, "collector", kind, direct, {"p1": proxy_port},
                                              connect_ports=(443, allowed.port, direct))
            multiplier = Multiplier(group, workdir, "multiplier",
                                    ["--collector", f"127.0.0.1:{direct}",
                                     "--connect-port", "443", "--connect-port", str(allowed.port)])
            yield Bed(kind, child, proxy_port, multiplier, banner, allowed)
            code = multiplier.stop()
            output = multiplier.child.log.read_text(errors="replace")
            assert code in (0, None), output[-2000:]
            for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):  # the ASan build
                assert marker not in output, output[-3000:]
    finally:
        banner.close()
        allowed.close()
        shutil.rmtree(workdir, ignore_errors=True)


def record_of(multiplier: Multiplier, target: str, deadline_s: float = 10) -> dict:
    """The last record of CONNECT `target`, once it is in the log (written within about 100 ms)."""
    end = time.monotonic() + deadline_s
    while not (records := [r for r in multiplier.records(0, deadline_s=0) if r["url"] == target]):
        assert time.monotonic() < end, f"no record for CONNECT {target}"
        time.sleep(0.05)
    return records[-1]


@pytest.mark.parametrize("template, why", [
    ("127.0.0.1:{P}:443", "more than one ':'"),
    ("localhost:{P}:443", "more than one ':'"),
    ("[::1]:{P}:443", "more than one port"),
    ("127.0.0.1:443:{P}", "more than one ':'"),
    ("user@127.0.0.1:443", "userinfo"),
    ("user@127.0.0.1:{P}", "userinfo"),
    ("::1:{P}", "must be in brackets"),
    ("[::1]", "no port"),
    ("127.0.0.1", "no port"),
    (":{P}", "no host"),
    ("127.0.0.1:+{P}", "from 1 to 65535"),
    ("127.0.0.1%3a{P}:443", "percent-encoding"),
    ("127.1:{P}", "four decimal parts"),
])
def test_a_connect_target_that_is_not_authority_form_is_a_400_and_reaches_nothing(bed, template, why):
    multiplier, banner = bed.multiplier, bed.banner
    target = template.format(P=banner.port)
    before = banner.accepted
    reply = exchange(multiplier.port, connect_request(target))
    assert reply.startswith(b"HTTP/1.1 400 "), reply[:300]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"\r\nX-SPE-Error: bad CONNECT target: " in head
    assert why.encode() in body and b"RFC 9110 9.3.6" in body
    assert BANNER not in reply and banner.accepted == before
    record = record_of(multiplier, target)
    assert record["method"] == "CONNECT" and record["client_status"] == 400
    assert why in record["note"] and record["proxies"] == []


def test_a_connect_to_a_port_not_allowed_is_a_403(bed):
    multiplier, banner = bed.multiplier, bed.banner
    target = f"127.0.0.1:{banner.port}"
    before = banner.accepted
    reply = exchange(multiplier.port, connect_request(target))
    assert reply.startswith(b"HTTP/1.1 403 ") and b"--connect-port" in reply, reply[:300]
    assert BANNER not in reply and banner.accepted == before
    # [::1]:P is good syntax: the port list decides.
    reply = exchange(multiplier.port, connect_request(f"[::1]:{banner.port}"))
    assert reply.startswith(b"HTTP/1.1 403 "), reply[:300]
    assert banner.accepted == before
    assert record_of(multiplier, target)["client_status"] == 403


def test_an_allowed_port_still_tunnels(bed):
    multiplier, allowed = bed.multiplier, bed.allowed
    before = allowed.accepted
    reply = exchange(multiplier.port, connect_request(f"127.0.0.1:{allowed.port}"))
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:300]
    assert reply.endswith(ALLOWED_BANNER)
    assert allowed.accepted == before + 1
    assert "CONNECT tunnel" in record_of(multiplier, f"127.0.0.1:{allowed.port}")["note"]


@pytest.mark.parametrize("which", ["banner", "two ports", "own direct port", "own proxy port"])
def test_the_collector_refuses_a_direct_connect_to_a_port_not_allowed(bed, which):
    """Bypassing the Multiplier: the Collector's own rules (configs/collector/squid.conf.in). Its direct
    port is in its allowed list (as a mistaken --connect-port would put it): its own ports stay refused."""
    direct = bed.collector.port
    target = {"banner": f"127.0.0.1:{bed.banner.port}", "two ports": f"127.0.0.1:{bed.banner.port}:443",
              "own direct port": f"127.0.0.1:{direct}", "own proxy port": f"127.0.0.1:{bed.proxy_port}"}[which]
    before = bed.banner.accepted
    reply = exchange(direct, connect_request(target, close=True))
    assert reply.startswith(b"HTTP/1.1 403 "), (bed.kind, reply[:300])
    assert BANNER not in reply and bed.banner.accepted == before
    # An allowed port is still open to a direct CONNECT (the Multiplier's tunnels go this way).
    assert exchange(direct, connect_request(f"127.0.0.1:{bed.allowed.port}")).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("kind", ["spe", "squid"])
def test_the_collector_config_refuses_connect_outside_the_list_before_it_allows_clients(tmp_path, kind):
    require(collector.missing(kind), f"the {kind} Collector")
    text = collector.collector_config(kind, tmp_path, 3128, {"p1": 3129, "v@accel": 3130},
                                      connect_ports=(443, 8443, 443))
    lines = text.splitlines()
    assert "acl spe_connect_ports port 443 8443" in lines
    assert "acl spe_collector_ports port 3128 3129 3130" in lines
    allow = lines.index("http_access allow spe_clients")
    assert lines.index("http_access deny spe_connect !spe_connect_ports") < allow
    assert lines.index("http_access deny spe_connect spe_collector_ports") < allow
    conf = tmp_path / "squid.conf"
    conf.write_text(text)
    code, output = collector.parse_check(kind, conf)
    assert code == 0 and "ERROR" not in output, output
    # The default list is the Multiplier's default, 443; an empty list refuses every CONNECT.
    assert "acl spe_connect_ports port 443" in collector.collector_config(kind, tmp_path, 3128, {}).splitlines()
    assert "http_access deny spe_connect" in collector.collector_config(kind, tmp_path, 3128, {},
                                                                        connect_ports=()).splitlines()
    with pytest.raises(ValueError, match="not 1-65535"):
        collector.collector_config(kind, tmp_path, 3128, {}, connect_ports=(0,))
