"""Components that die mid-run: measured as failures, then recovery; no record lost."""

from __future__ import annotations

import signal
import socket
import sys

from conftest import ENV, ROOT
from httpclient import Connection

from spe_tools.process import free_port
from spe_tools.squid import start_squid


def start_fault_proxy(lab, name: str, port: int):
    return lab.group.start(name, [sys.executable, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                                  "--parent", f"127.0.0.1:{lab.collector_port}", "--mode", "ok"], port=port, env=ENV)


def test_a_proxy_killed_mid_run_is_measured_as_failing_then_recovers(lab, start_multiplier):
    port = free_port()
    victim = start_fault_proxy(lab, "victim", port)
    good = lab.squid_child("steady")
    m = start_multiplier("--timeout", "2", "--proxy", f"victim=127.0.0.1:{port}",
                         "--proxy", f"steady=127.0.0.1:{good.port}")
    with Connection(m.port) as c:
        for i in range(3):
            assert c.get(lab.url(f"/c/kill{i}?size=500")).status == 200
        assert len(m.records(3)) == 3  # the fan-outs run after the replies: let them finish first
        victim.stop(sig=signal.SIGKILL)
        for i in range(3, 6):
            assert c.get(lab.url(f"/c/kill{i}?size=500")).status == 200
        assert len(m.records(6)) == 6
        start_fault_proxy(lab, "victim-again", port)
        for i in range(6, 9):
            assert c.get(lab.url(f"/c/kill{i}?size=500")).status == 200
    records = m.records(9)
    victim_results = [{p["name"]: p for p in r["proxies"]}["victim"] for r in records]
    assert [v["result"] for v in victim_results[:3]] == ["OK"] * 3
    assert [v["result"] for v in victim_results[3:6]] == ["NO_RESPONSE"] * 3
    assert {v["error"] for v in victim_results[3:6]} <= {"refused", "reset", "closed"}
    assert [v["result"] for v in victim_results[6:]] == ["OK"] * 3
    assert all({p["name"]: p for p in r["proxies"]}["steady"]["result"] == "OK" for r in records)


def test_the_collector_killed_mid_run_gives_502_with_a_reason(lab, start_multiplier):
    collector = start_squid(lab.group, "doomed-collector", free_port())
    m = start_multiplier("--collector", f"127.0.0.1:{collector.port}", collector=False)
    with Connection(m.port) as c:
        assert c.get(lab.url("/c/doomed?size=100")).status == 200
        collector.stop(sig=signal.SIGKILL)
        reply = c.get(lab.url("/c/doomed2?size=100"))
        assert reply.status == 502
        assert b"Collector" in reply.body and b"refused" in reply.body
    records = m.records(2)
    assert [r["client_status"] for r in records] == [200, 502]
    assert records[1]["collector"]["error"] == "refused"


def test_a_collector_reply_that_breaks_off_is_noted_also_when_the_proxies_answered_first(lab, start_multiplier):
    """Concurrent mode: the proxy has answered long before the Collector's reply breaks off (half the body,
    then silence until --client-timeout). The record still says why its reference is incomplete: the note
    once arrived after the record had been logged, and was lost."""
    collector = lab.fault_proxy("breaking-collector", "short_body_hang")
    proxy = lab.fault_proxy("quick-proxy", "ok")
    m = start_multiplier("--collector", f"127.0.0.1:{collector.port}", "--mode", "concurrent", "--client-timeout", "1",
                         "--proxy", f"quick=127.0.0.1:{proxy.port}", collector=False)
    with socket.create_connection(("127.0.0.1", m.port), timeout=10) as s:
        s.sendall(f"GET {lab.url('/c/breaks-off?size=1000')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        while s.recv(65536):  # the Multiplier closes the connection once the Collector's reply broke off
            pass
    [record] = m.records(1)
    assert record["collector"]["error"] == "timeout"
    assert record["proxies"][0]["total_us"] < 1_000_000  # the proxy had answered before the Collector gave up
    assert (record["note"] or "").startswith("no fan-out: the Collector's reply broke off")
