"""Interim (1xx) responses (RFC 9110 15.2): the Multiplier relays the Collector's to an HTTP/1.1 client before the
final reply, records every leg's, and the cache-rule judge names a proxy that drops one, gives one as its final
response, or hangs after one (rule `interim`).

The test bed is the conftest lab: tests/fixtures/mini_origin.py (`?interim=103,102` sends those first; `stamp=1`
stamps each fetch as the patched Collector does) behind Debian's stock Squid playing the Collector, which fetches an
uncacheable URL (`/status/200`: no-store, the same body
every time) again for each proxy's request and relays the origin's interim responses (what
test_interim_real_proxies.py checks the patched Collector does, and where it does not). The proxies under test are
tests/fixtures/fault_proxy.py: `ok` relays the interims, `interim_drop` drops them, `interim_final` ends with the
first, `interim_hang` goes silent after them.
"""

from __future__ import annotations

import pytest
from httpclient import Connection, request_bytes

MODES = ("ok", "interim_drop", "interim_final", "interim_hang")


@pytest.fixture(scope="module")
def proxies(lab):
    return {mode: lab.fault_proxy(f"interim-{mode}", mode).port for mode in MODES}


@pytest.fixture
def multiplier(proxies, start_multiplier):
    return start_multiplier("--timeout", "2", *[a for mode, port in proxies.items()
                                                for a in ("--proxy", f"{mode}=127.0.0.1:{port}")])


def statuses(leg: dict) -> list[int]:
    return [i["status"] for i in leg.get("interim", [])]


def rules(leg: dict) -> set[str]:
    return {v["rule"] for v in (leg.get("cache") or {}).get("violations", [])}


def test_the_client_gets_each_interim_response_before_the_final_one_in_order(lab, multiplier):
    with Connection(multiplier.port) as c:
        c.send(request_bytes("GET", lab.url("/status/200?interim=103,102&interim_ms=20&stamp=1&n=order")))
        first, second, final = c.read_reply(), c.read_reply(), c.read_reply()
        again = c.get(lab.url("/c/after-interims"))  # the connection goes on
    assert (first.status, second.status, final.status) == (103, 102, 200)
    assert first.headers["link"] == "</style.css>; rel=preload"
    assert "via" in first.headers  # relayed by a proxy (RFC 9110 7.6.3)
    assert final.body == b"status 200\n"
    assert again.status == 200
    record = multiplier.records(2)[0]
    assert statuses(record["collector"]) == [103, 102]
    first_at, second_at = (i["at_us"] for i in record["collector"]["interim"])
    assert record["collector"]["ttfb_us"] <= first_at + 1000 and second_at - first_at >= 15_000
    assert "interim" not in multiplier.records(2)[1]["collector"]  # none: left out


def test_an_http10_client_gets_no_interim_response(lab, multiplier):
    with Connection(multiplier.port) as c:
        c.send(request_bytes("GET", lab.url("/status/200?interim=103&stamp=1&n=old-client"), version="HTTP/1.0"))
        reply = c.read_reply()
    assert reply.status == 200
    assert statuses(multiplier.records(1)[0]["collector"]) == [103]  # the Collector's leg still had it


def test_expect_100_continue_still_works_and_the_origins_103_follows_the_multipliers_100(lab, multiplier):
    # The Multiplier answers Expect itself and sends the body upstream without it (so the 100 it relays, if an
    # origin sends one unasked, is harmless): the client gets 100, sends the body, then 103 and the final reply.
    header = request_bytes("POST", lab.url("/post?interim=103"), {"Expect": "100-continue", "Content-Length": "5"})
    with Connection(multiplier.port) as c:
        c.send(header)
        assert c.read_reply().status == 100
        c.send(b"hello")
        assert c.read_reply().status == 103
        final = c.read_reply()
    assert final.status == 200 and final.body == b"5d41402abc4b2a76b9719d911017c592\n"  # MD5 of "hello"


def test_each_leg_records_its_interims_and_the_judge_names_who_broke_the_rule(lab, multiplier):
    with Connection(multiplier.port) as c:
        c.send(request_bytes("GET", lab.url("/status/200?interim=103&stamp=1&n=judged")))
        assert c.read_reply().status == 103
        assert c.read_reply().status == 200
    record = multiplier.records(1, deadline_s=15)[0]
    legs = {p["name"]: p for p in record["proxies"]}
    assert statuses(legs["ok"]) == [103] and rules(legs["ok"]) == set() and legs["ok"]["result"] == "OK"
    assert "interim" in legs["ok"]["cache"]["exercised"]
    assert statuses(legs["interim_drop"]) == [] and rules(legs["interim_drop"]) == {"interim"}
    assert legs["interim_drop"]["result"] == "OK"  # the bytes of the final reply are right: only the judge sees it
    final = legs["interim_final"]
    assert statuses(final) == [103] and final["status"] is None and final["error"] == "closed"
    assert rules(final) == {"interim"}
    hang = legs["interim_hang"]
    assert statuses(hang) == [103] and hang["status"] is None and hang["error"] == "timeout"
    assert rules(hang) == {"interim"}
    reasons = {name: leg["cache"]["violations"][0]["reason"] for name, leg in legs.items() if rules(leg)}
    assert "dropped the 103" in reasons["interim_drop"]
    assert "as its final response" in reasons["interim_final"]
    assert "hung after" in reasons["interim_hang"]
    assert rules(record["collector"]) == set()


def test_without_interim_responses_nobody_is_named(lab, multiplier):
    with Connection(multiplier.port) as c:
        assert c.get(lab.url("/status/200?stamp=1&n=plain")).status == 200
    record = multiplier.records(1, deadline_s=15)[0]
    for leg in record["proxies"]:
        assert "interim" not in leg and rules(leg) == set(), leg
        assert leg["result"] == "OK"


def test_a_collector_that_hangs_after_an_interim_response_still_gets_the_client_a_final_reply(lab, start_multiplier):
    m = start_multiplier("--client-timeout", "1")
    with Connection(m.port, timeout=10) as c:
        c.send(request_bytes("GET", lab.url("/slow/after-hints?ms=3000&interim=103")))
        assert c.read_reply().status == 103
        final = c.read_reply()
    assert final.status == 504  # the Multiplier's own, after the 103: never the 103 alone
    record = m.records(1)[0]
    assert statuses(record["collector"]) == [103] and record["collector"]["status"] is None
    assert record["collector"]["error"] == "timeout"
