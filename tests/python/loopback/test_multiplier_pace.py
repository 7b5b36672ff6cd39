"""How far the client and the proxies may run ahead of SPE: the three bounds are flags, and the one
wait they can put on the client is measured.

When SPE's own measuring (the fan-out executor) is more than --max-fanout-backlog of a connection's fan-outs
behind, the session holds the client before it reads the next request. The hold goes on the record of that
request (client_held_us), into /metrics and into ./spe report, and nothing is lost. A client that pipelines
runs ahead of the measuring at once: with the fan-out on the client's own thread (--fanout-threads 0) a
fan-out handed over is not reached before the session turns to the next request already buffered, so with
--max-fanout-backlog 0 every pipelined request after the first waits for the one before it to be taken up."""

from __future__ import annotations

import http.client
import time

import pytest
from httpclient import Connection, request_bytes
from mini_origin import body_for
from prometheus_client.parser import text_string_to_metric_families

from analysis.report import build_report, text_report
from spe_tools.process import free_port

PIPELINED = 20


@pytest.fixture(scope="module")
def good(lab):
    return lab.squid_child("pace-good")


@pytest.fixture(scope="module")
def slow(lab):
    """A proxy a tenth of a second slower than the Collector: the legs queue for its turns, the client does not."""
    return lab.fault_proxy("pace-slow", "slow", "--delay-ms", "100")


def pipeline(lab, port: int, run: str, count: int) -> None:
    """`count` requests in one write, then every reply, in order: a client faster than anything it talks to."""
    names = [f"{run}-{time.monotonic_ns()}-{i}" for i in range(count)]
    with Connection(port, timeout=30) as c:
        c.send(b"".join(request_bytes("GET", lab.url(f"/c/{name}?size=1000")) for name in names))
        for name in names:
            reply = c.read_reply()
            assert reply.status == 200 and reply.body == body_for(name, 1000), name


def counters(port: int, written: int, deadline_s: float = 10) -> dict[str, float]:
    """The unlabelled samples of /metrics, once the counters have taken `written` records (they follow the
    writer thread)."""
    end = time.monotonic() + deadline_s
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        found = {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
                 if not s.labels}
        if found["spe_records_written_total"] >= written or time.monotonic() > end:
            return found
        time.sleep(0.05)


@pytest.mark.parametrize("backlog", ["0", "64"])
def test_a_client_ahead_of_spes_measuring_is_held_and_each_hold_is_on_a_record(lab, good, slow, start_multiplier,
                                                                             backlog):
    metrics = free_port()
    m = start_multiplier("--fanout-threads", "0", "--max-fanout-backlog", backlog, "--metrics-listen",
                         f"127.0.0.1:{metrics}", "--proxy", f"good=127.0.0.1:{good.port}",
                         "--proxy", f"slow=127.0.0.1:{slow.port}")
    pipeline(lab, m.port, f"hold{backlog}", PIPELINED)
    records = m.records(PIPELINED, deadline_s=30)
    found = counters(metrics, PIPELINED)

    # Nothing lost: a record for every request, in order, every leg sent and answered whole.
    assert [r["id"] for r in records] == list(range(records[0]["id"], records[0]["id"] + PIPELINED))
    for r in records:
        assert r["client_status"] == 200
        assert {p["name"]: p["result"] for p in r["proxies"]} == {"good": "OK", "slow": "OK"}, r["proxies"]
    held = {r["id"]: r["client_held_us"] for r in records if "client_held_us" in r}
    if backlog == "0":
        # Each request after the first was read only once the fan-out before it had been taken up: a hold of
        # one timer's tick (1 ms) or more, on the record of the request read after it.
        assert sorted(held) == [r["id"] for r in records[1:]]
        assert all(us > 0 for us in held.values()), held
    else:
        assert held == {}  # twenty requests ahead is within a backlog of 64: the slow proxy's queue holds no one
    assert found["spe_client_holds_total"] == len(held)
    assert found["spe_client_held_seconds_total"] == pytest.approx(sum(held.values()) / 1e6, abs=1e-6)
    assert found["spe_records_written_total"] == PIPELINED
    # ./spe report counts them, whichever engine reads the log, under its per-proxy table.
    for engine in ("duckdb", "memory"):
        rep = build_report(m.log, engine=engine)
        assert rep.held == {"requests": len(held), "total_s": pytest.approx(sum(held.values()) / 1e6)}
        assert (f"client held back before {len(held)} request(s)" in text_report(rep)) == bool(held)


def test_a_proxy_too_far_behind_loses_the_legs_past_max_queued_legs(lab, good, start_multiplier):
    slower = lab.fault_proxy("pace-queue", "slow", "--delay-ms", "500")
    m = start_multiplier("--max-queued-legs", "2", "--proxy", f"good=127.0.0.1:{good.port}",
                         "--proxy", f"slower=127.0.0.1:{slower.port}")
    count = 8
    pipeline(lab, m.port, "queued", count)
    records = m.records(count, deadline_s=30)
    assert len(records) == count
    assert all(r["proxies"][0]["result"] == "OK" for r in records)
    slow_legs = [r["proxies"][1] for r in records]
    busy = [leg for leg in slow_legs if leg["error"] == "busy"]
    # The Collector answers the eight in a few milliseconds, the proxy takes half a second each: the first leg
    # is sent, two wait for their turn, and the rest would wait behind more than two.
    assert slow_legs[0]["result"] == "OK" and busy, slow_legs
    for leg in busy:
        assert leg["result"] == "NO_RESPONSE" and "--max-queued-legs 2" in leg["error_detail"], leg
    assert all(leg["result"] == "OK" for leg in slow_legs if leg not in busy)
