"""A hung leg costs only itself, and a slow proxy gets every request: a leg waits for the same proxy's earlier legs
--order-wait at most (2 s by default), then sets them aside and goes on another connection, and its record lists
what it overtook (`overtook`). Before, a leg waited for its turn up to --timeout and a second and was then dropped
(`busy`): one hang after a 103 cost nginx hundreds of legs in a demo, and a proxy that answered everything 200 ms
late lost most of a four-connection client's requests.

The proxies under test are tests/fixtures/fault_proxy.py behind the conftest lab's Collector (Debian's Squid, which
relays the origin's interim responses): `interim_hang` relays a 103 and then says nothing until the Multiplier's
--timeout, on the one request whose origin reply has one; `slow` answers every request 200 ms late."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from httpclient import Connection, request_bytes
from mini_origin import body_for

from analysis.report import build_report, text_report

LATER = 500  # the client's requests after the one that hangs


def by_name(record: dict) -> dict[str, dict]:
    return {p["name"]: p for p in record["proxies"]}


def test_a_proxy_that_hangs_after_a_103_loses_that_request_only(lab, start_multiplier):
    hang = lab.fault_proxy("order-wait-hang", "interim_hang")
    good = lab.fault_proxy("order-wait-good", "ok")
    m = start_multiplier("--timeout", "30", "--proxy", f"hang=127.0.0.1:{hang.port}",
                         "--proxy", f"good=127.0.0.1:{good.port}")
    run = f"hung-{time.monotonic_ns()}"
    with Connection(m.port, timeout=30) as c:
        c.send(request_bytes("GET", lab.url(f"/status/200?interim=103&stamp=1&n={run}")))
        assert c.read_reply().status == 103
        assert c.read_reply().status == 200
        for i in range(LATER):  # the same client, the same connection, right behind it
            reply = c.get(lab.url(f"/c/{run}-{i}?size=300"))
            assert reply.status == 200 and reply.body == body_for(f"{run}-{i}", 300)
    records = m.records(LATER + 1, deadline_s=90)  # the hung leg's record waits for its --timeout
    assert len(records) == LATER + 1
    first, later = records[0], records[1:]

    hung = by_name(first)["hang"]
    assert (hung["status"], hung["error"]) == (None, "timeout"), hung
    assert "interim" in {v["rule"] for v in hung["cache"]["violations"]}  # the hang is still a finding
    # Every later request was measured at the hanging proxy, and at the good one.
    outcomes = Counter((name, leg["result"], leg["error"]) for r in later for name, leg in by_name(r).items())
    assert outcomes == Counter({("hang", "OK", None): LATER, ("good", "OK", None): LATER}), \
        (outcomes, later[-1]["ts"] - later[0]["ts"])
    assert not [r for r in later if "overtook" in by_name(r)["good"]]  # the good proxy kept the client's order
    # The legs sent while the hung one was still out say so, naming it. The first leg behind it waited
    # --order-wait for it and went; the ones that came during the hang and had waited as long by then went
    # past the leg just ahead of them too (each still answering for a few ms), the rest in order behind them.
    out_of_order = [r for r in later if "overtook" in by_name(r)["hang"]]
    overtaken = Counter(tuple(by_name(r)["hang"]["overtook"]) for r in out_of_order)
    assert all(ids[0] == first["id"] and list(ids) == sorted(set(ids)) for ids in overtaken), overtaken
    assert overtaken[(first["id"],)] >= 0.9 * len(out_of_order), overtaken
    # The first waited its --order-wait; none waited for the hung leg's --timeout (30 s): the bound is loose, for a
    # loaded machine, not a measure.
    assert by_name(later[0])["hang"]["queued_us"] >= 1_900_000
    assert max(by_name(r)["hang"]["queued_us"] for r in later) < 10_000_000
    # The report counts them under "Can I trust this run?", for the hanging proxy only.
    rep = build_report(m.log, engine="duckdb")
    rows = {row["name"]: row for row in rep.rows[1:]}
    assert rows["hang"]["out_of_order_legs"] == len(out_of_order)
    assert rows["good"]["out_of_order_legs"] == 0
    assert f"hang {len(out_of_order):,} of {LATER + 1:,}" in text_report(rep)


CONNECTIONS, PER_CONNECTION = 4, 40


def test_a_proxy_200ms_late_behind_a_four_connection_client_gets_every_request(lab, start_multiplier):
    slow = lab.fault_proxy("order-wait-slow", "slow", "--delay-ms", "200")
    m = start_multiplier("--timeout", "2", "--proxy", f"slow=127.0.0.1:{slow.port}")
    run = f"slow4-{time.monotonic_ns()}"
    errors: list[str] = []

    def client(conn: int) -> None:
        try:
            with Connection(m.port, timeout=30) as c:
                for i in range(PER_CONNECTION):
                    name = f"{run}-{conn}-{i}"
                    reply = c.get(lab.url(f"/c/{name}?size=500"))
                    if reply.status != 200 or reply.body != body_for(name, 500):
                        errors.append(name)
        except OSError as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    records = m.records(CONNECTIONS * PER_CONNECTION, deadline_s=60)
    assert len(records) == CONNECTIONS * PER_CONNECTION
    legs = [r["proxies"][0] for r in records]
    # Every leg measured, none dropped: the proxy is slow, not hung, and SPE measures all of it.
    assert [leg for leg in legs if leg["result"] != "OK"] == []
    assert all(leg["ttfb_us"] >= 190_000 for leg in legs)  # its own lateness, in its own times
    # The client ran ahead of it (160 x 200 ms one at a time would take 32 s): no leg waited far past
    # --order-wait, and the ones that went out of order say so.
    assert max(leg["queued_us"] for leg in legs) < 10_000_000
    assert any("overtook" in leg for leg in legs)


@pytest.mark.parametrize("conns", ["1", "16"])
def test_after_order_wait_a_leg_goes_on_another_connection_unless_the_proxy_holds_them_all(
        lab, start_multiplier, conns):
    slower = lab.fault_proxy(f"order-wait-slower-{conns}", "slow", "--delay-ms", "1500")
    m = start_multiplier("--timeout", "5", "--order-wait", "300ms", "--max-conns-per-proxy", conns,
                         "--proxy", f"slower=127.0.0.1:{slower.port}")
    names = [f"ow{conns}-{time.monotonic_ns()}-{i}" for i in range(3)]
    with Connection(m.port, timeout=30) as c:  # pipelined: the three reach the Multiplier at once
        c.send(b"".join(request_bytes("GET", lab.url(f"/c/{name}?size=1000")) for name in names))
        for name in names:
            assert c.read_reply().body == body_for(name, 1000)
    first, *later = [r["proxies"][0] for r in m.records(3, deadline_s=30)]
    assert first["result"] == "OK" and first["total_us"] >= 1_400_000, first
    for leg in later:
        if conns == "16":  # each went after 300 ms, past the legs still out, on a connection of its own
            assert leg["result"] == "OK" and leg["overtook"], leg
            assert 250_000 <= leg["queued_us"] < 1_400_000, leg
        else:  # the one connection allowed was still busy: not sent, and the detail says why
            assert (leg["result"], leg["error"]) == ("NO_RESPONSE", "busy"), leg
            assert "--max-conns-per-proxy" in leg["error_detail"], leg
