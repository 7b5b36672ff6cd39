"""The Multiplier's /metrics (--metrics-listen): read by Prometheus's own text-format parser, its counters equal
to the records written, only GET /metrics answered, clients outside --metrics-allow closed, and what a bad
client sends never ends it."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import time
from collections import Counter

import pytest
from conftest import ROOT, multiplier_binary
from httpclient import Connection
from prometheus_client.parser import text_string_to_metric_families

from spe_tools.process import free_port

REQUESTS = 24


@pytest.fixture(scope="module")
def child(lab):
    return lab.squid_child("metrics")


def scrape(port: int, host: str = "127.0.0.1", path: str = "/metrics", method: str = "GET",
           source: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection(host, port, timeout=10, source_address=(source, 0) if source else None)
    conn.request(method, path)
    response = conn.getresponse()
    response.body = response.read()
    conn.close()
    return response


def samples(port: int) -> dict[tuple[str, frozenset], float]:
    """Every sample of a scrape, by its name and labels, as Prometheus's parser reads them."""
    response = scrape(port)
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
    out = {}
    for family in text_string_to_metric_families(response.body.decode()):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"{key} twice"
            out[key] = s.value
    return out


def value(found: dict, name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def wait_for_records(m, count: int) -> list[dict]:
    records = m.records(count)
    assert len(records) == count
    return records


def test_the_counters_equal_the_records_written(lab, child, start_multiplier):
    port, dead = free_port(), free_port()  # nothing listens on `dead`: its legs are refused
    m = start_multiplier("--proxy", f"squid=127.0.0.1:{child.port}", "--proxy", f"dead=127.0.0.1:{dead}",
                         "--metrics-listen", f"127.0.0.1:{port}")
    with Connection(m.port) as c:
        for i in range(REQUESTS):
            assert c.get(lab.url(f"/c/{i % 6}")).status == 200
    records = wait_for_records(m, REQUESTS)
    found = samples(port)

    assert value(found, "spe_records_written_total") == REQUESTS
    assert value(found, "spe_records_dropped_total") == 0
    assert value(found, "spe_requests_total", proxy="collector") == REQUESTS
    assert value(found, "spe_results_total", proxy="collector", **{"class": "OK"}) == REQUESTS
    assert value(found, "spe_body_bytes_total", proxy="collector") == sum(r["collector"]["bytes"] for r in records)
    assert value(found, "spe_first_byte_seconds_count", proxy="collector") == REQUESTS
    assert value(found, "spe_first_byte_seconds_bucket", proxy="collector", le="+Inf") == REQUESTS
    for name in ("squid", "dead"):
        legs = [p for r in records for p in r["proxies"] if p["name"] == name]
        assert value(found, "spe_requests_total", proxy=name) == len(legs) == REQUESTS
        for result, count in Counter(p["result"] for p in legs).items():
            assert value(found, "spe_results_total", proxy=name, **{"class": result}) == count
        for error, count in Counter(p["error"] for p in legs if p.get("error")).items():
            assert value(found, "spe_leg_errors_total", proxy=name, kind=error) == count
    assert value(found, "spe_leg_errors_total", proxy="dead", kind="refused") == REQUESTS
    assert value(found, "spe_results_total", proxy="squid", **{"class": "OK"}) == REQUESTS
    assert value(found, "spe_judge_violations_total", proxy="squid", rule="no-store") == 0
    # One request at a time: SPE's measuring never fell behind the client, so it was never held.
    assert value(found, "spe_client_holds_total") == len([r for r in records if "client_held_us" in r]) == 0
    assert value(found, "spe_client_held_seconds_total") == 0
    assert value(found, "spe_client_connections") == 0  # the client has gone
    assert value(found, "spe_requests_in_flight") == 0
    assert value(found, "process_resident_memory_bytes") > 1 << 20


def test_only_get_metrics_is_answered(lab, start_multiplier):
    port = free_port()
    start_multiplier("--metrics-listen", f"127.0.0.1:{port}")
    assert scrape(port, path="/").status == 404
    assert scrape(port, path="/metrics/x").status == 404
    refused = scrape(port, method="POST")
    assert refused.status == 405 and refused.getheader("Allow") == "GET"
    assert scrape(port, path="/metrics?name[]=x").status == 200


def test_clients_outside_the_allow_list_are_closed(lab, start_multiplier):
    port = free_port()
    start_multiplier("--metrics-listen", f"127.0.0.2:{port}", "--metrics-allow", "127.0.0.3/32")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        scrape(port, host="127.0.0.2", source="127.0.0.1")
    assert scrape(port, host="127.0.0.2", source="127.0.0.3").status == 200


def test_the_metrics_port_is_never_the_proxy_port():
    port = free_port()
    checked = subprocess.run([str(multiplier_binary()), "--collector", "127.0.0.1:3128", "--listen",
                              f"127.0.0.1:{port}", "--metrics-listen", f"127.0.0.1:{port}", "--check"],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 2 and "--metrics-listen must not use the --listen port" in checked.stderr


def raw(port: int, data: bytes, wait_s: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        return b"".join(chunks)


def test_bad_clients_do_not_stop_it(lab, child, start_multiplier):
    port = free_port()
    m = start_multiplier("--proxy", f"squid=127.0.0.1:{child.port}", "--metrics-listen", f"127.0.0.1:{port}")
    assert raw(port, b"\x16\x03\x01garbage\r\n\r\n") == b""
    assert raw(port, b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n") == b""
    assert raw(port, b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello") == b""
    # Slow clients hold connections, each up to its deadline; a scrape still gets through at once.
    slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
    for s in slow:
        s.sendall(b"GET /metr")
    started = time.monotonic()
    assert samples(port)
    assert time.monotonic() - started < 1
    # A client that never finishes its request is closed at the deadline (5 s), not held forever.
    slow[0].settimeout(10)
    assert slow[0].recv(100) == b""
    for s in slow:
        s.close()
    with Connection(m.port) as c:
        assert c.get(lab.url("/c/1")).status == 200
    assert len(wait_for_records(m, 1)) == 1
    assert value(samples(port), "spe_requests_total", proxy="squid") == 1


def documented_metrics() -> set[str]:
    """The names in docs/metrics.md's table of every metric."""
    text = (ROOT / "docs/metrics.md").read_text()
    return set(re.findall(r"^\| `([a-z_]+)` \| (?:counter|gauge|histogram) \|", text, re.MULTILINE))


def test_docs_list_exactly_the_metrics_a_scrape_has_and_the_dashboard_uses_only_those(lab, start_multiplier):
    port = free_port()
    start_multiplier("--proxy", "p=127.0.0.1:1", "--metrics-listen", f"127.0.0.1:{port}")
    families = {f.name + ("_total" if f.type == "counter" else "")
                for f in text_string_to_metric_families(scrape(port).body.decode())}
    assert documented_metrics() == families
    dashboard = json.loads((ROOT / "configs/grafana/spe-dashboard.json").read_text())
    used = {name for panel in dashboard["panels"] for target in panel["targets"]
            for name in re.findall(r"\b((?:spe|process)_[a-z_]+?)(?:_bucket)?\{", target["expr"])}
    assert used and used <= families
