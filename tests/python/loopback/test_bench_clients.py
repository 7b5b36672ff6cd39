"""The benchmarks' fixed-rate client (bench/lib/clients.py) against a small loopback server: every request
goes out, on persistent connections unless the server closes them, and failures are counted, not raised."""

import http.server
import threading

import pytest

from bench.lib.clients import fixed_rate
from spe_tools.process import free_port


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    close_after_reply = False
    peers: set = set()  # client ports seen: one per connection

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).peers.add(self.client_address[1])
        body = b"x" * 100
        self.send_response(404 if self.path.endswith("/missing") else 200)
        self.send_header("Content-Length", str(len(body)))
        if self.close_after_reply:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(params=[False, True], ids=["keep-alive", "close"])
def server(request):
    handler = type("H", (Handler,), {"close_after_reply": request.param, "peers": set()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, handler
    httpd.shutdown()
    httpd.server_close()


def test_every_request_goes_out_and_its_status_is_counted(server):
    httpd, handler = server
    port = httpd.server_address[1]
    urls = [f"http://127.0.0.1:{port}/{'missing' if i % 4 == 3 else 'obj'}" for i in range(40)]
    result = fixed_rate(port, urls.__getitem__, rate=100, seconds=0.4, connections=2)
    assert result["status"] == {200: 30, 404: 10} and not result["errors"]
    assert len(result["latency"]) == len(result["late"]) == 40 and result["bytes"] == 4000
    assert 0.35 < result["elapsed"] < 5
    if handler.close_after_reply:
        assert len(handler.peers) == 40  # a new connection once the server closed the last one
    else:
        assert len(handler.peers) <= 2  # the two persistent connections


def test_a_refused_connection_is_an_error_for_each_request():
    port = free_port()  # nothing listens there
    result = fixed_rate(port, lambda i: f"http://127.0.0.1:{port}/obj", rate=50, seconds=0.1, connections=2)
    assert len(result["errors"]) == 5 and not result["latency"]
    assert all(e.startswith("ConnectionRefusedError") for e in result["errors"])
