"""Components that die mid-run: measured as failures, then recovery; no record lost."""

from __future__ import annotations

import signal
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
