"""The HTTPS lab of the interception tests: the synthetic origin over TLS behind the patched Collector, every
proxy kind, the Multiplier intercepting (but one host), beside an origin whose CA nobody trusts and a WebSocket
echo server with the origin's certificate."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from labsupport import ALL_CACHEABLE, LabUnderTest, lab_session
from parts import require

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.process import ProcessGroup, free_port

KINDS_UNDER_TEST = ("squid", "trafficserver", "nginx", "varnish", "apache", "dummy")


NOT_INTERCEPTED = "127.0.0.1"  # [multiplier] no_intercept; the origin's certificate names it too


def lab_text(workdir: Path, untrusted_port: int, ws_port: int) -> str:
    model = workdir / "model.json"
    model.write_text(json.dumps(ALL_CACHEABLE))
    proxies = "".join(f'[[proxy]]\nname = "{k}"\nkind = "{k}"\n' + ("cache_mb = 16\n" if k != "dummy" else "")
                      for k in KINDS_UNDER_TEST)
    return (f'name = "https"\n[origin]\nthink_mean_ms = 0\nmodel = "{model}"\ntls = true\n'
            f'[multiplier]\ntimeout_s = 20\nintercept_tls = true\nca_dir = "{workdir / "ca"}"\n'
            f'no_intercept = ["{NOT_INTERCEPTED}"]\n'
            f'extra_args = ["--connect-port", "{untrusted_port}", "--connect-port", "{ws_port}"]\n'
            + proxies)


WS_ECHO = """\
import asyncio, ssl, sys
import websockets

async def echo(ws):
    async for message in ws:
        await ws.send(message)

async def main(port, cert, key):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    async with websockets.serve(echo, "127.0.0.1", port, ssl=context):
        await asyncio.Future()

asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
"""


def untrusted_origin(group: ProcessGroup, workdir: Path, port: int) -> None:
    """An HTTPS server whose CA nobody handed to the Collector."""
    _, cert, key = spe_ca.test_origin_tls(workdir / "untrusted")
    script = ("import http.server, ssl, sys\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers()\n"
              "        self.wfile.write(b'ok')\n"
              f"s = http.server.HTTPServer(('127.0.0.1', {port}), H)\n"
              "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
              f"c.load_cert_chain('{cert}', '{key}')\n"
              "s.socket = c.wrap_socket(s.socket, server_side=True)\n"
              "s.serve_forever()\n")
    group.start("untrusted-origin", [sys.executable, "-c", script], port=port)


@contextlib.contextmanager
def https_lab() -> Iterator[LabUnderTest]:
    """The lab up, the untrusted origin and the WebSocket echo server beside it; everything stopped after."""
    require(collector.missing("spe"), "the patched Collector")
    require([p for kind in KINDS_UNDER_TEST for p in KINDS[kind].missing()], "a proxy kind under test")
    untrusted_port, ws_port = free_port(), free_port()
    workdir_holder: list[Path] = []

    def text(workdir: Path) -> str:
        workdir_holder.append(workdir)
        return lab_text(workdir, untrusted_port, ws_port)

    with lab_session(text, before=lambda users: untrusted_origin(users, workdir_holder[0], untrusted_port)) as lab:
        lab.tls_port = lab.run.ports.origin_tls
        lab.spe_ca = workdir_holder[0] / "ca" / "spe-ca.pem"
        lab.origin_ca = lab.rundir / "origin-tls" / "origin-ca.pem"
        lab.untrusted_port = untrusted_port
        lab.ws_port = ws_port
        with ProcessGroup(lab.workdir) as websocket:  # a WebSocket echo server with the origin's certificate
            tls = lab.rundir / "origin-tls"
            websocket.start("ws-echo", [sys.executable, "-c", WS_ECHO, str(ws_port), str(tls / "origin-cert.pem"),
                                        str(tls / "origin-key.pem")], port=ws_port)
            yield lab


def complete(lab, url_part: str, count: int) -> list[dict]:
    """The records for url_part once `count` of them have every proxy's leg."""
    end = time.monotonic() + 30
    while True:
        records = lab.records(url_part, count)
        if (len(records) >= count and all(len(r["proxies"]) == len(KINDS_UNDER_TEST) for r in records)) \
                or time.monotonic() > end:
            return records
        time.sleep(0.1)
