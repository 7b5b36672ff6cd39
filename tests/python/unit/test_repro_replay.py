"""The replay's lab and verdict, without processes: the lab a case describes (validated like a lab
file), and what the last record says about the expected violation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from spe_tools.repro.case import Case, Finding, OriginReply, ProxyOfCase, Step
from spe_tools.repro.replay_case import (
    AGEING_MARGIN_S,
    ReplayError,
    judge,
    replay_lab,
    same_phase_delay,
    send_offsets,
)

AGE = Finding("age", "4", "Age 0 s, but the copy was 2.6 s old")
STEP = Step(1, 0.0, "GET", {}, OriginReply(200, {"cache-control": "max-age=600"}, 5, 0.0), True)
CASE = Case(source="/run", request_id=2, url="http://localhost:1/a", path="/a", recorded_start=1.0,
            proxy=ProxyOfCase("edge", "squid", {"cache_mb": 16}), expected=(AGE,), steps=(STEP, STEP),
            collector={"cache_mb": 32}, multiplier={"mode": "sequential", "legs": "serial"})


def leg(name: str = "edge", violations: list | None = None, **extra) -> dict:
    return {"name": name, "result": "OK", "status": 200, "error": None,
            "cache": {"violations": violations or [], "reused": True, "provenance": "origin"}, **extra}


def test_the_lab_has_the_patched_collector_no_origin_and_one_proxy_as_recorded():
    lab = replay_lab(CASE, 4321)
    assert lab.collector.kind == "spe" and lab.collector.cache_mb == 32
    assert lab.origin.kind == "none"
    assert [(p.name, p.kind, p.cache_mb, p.port) for p in lab.proxies] == [("edge", "squid", 16, 0)]
    assert lab.multiplier.legs == "serial"


def test_apache_caches_the_stand_in_origin_s_port_not_the_recorded_one():
    apache = ProxyOfCase("web", "apache", {"cache_mb": 16, "cache_ports": [8080]})
    assert replay_lab(dataclasses.replace(CASE, proxy=apache), 4321).proxies[0].cache_ports == (4321,)


@pytest.mark.parametrize("proxy, message", [
    (ProxyOfCase("mine", "external"), "you run it"),
    (ProxyOfCase("mine", "polipo"), "unknown kind 'polipo'"),
    (ProxyOfCase("edge", "squid", {"cache_mb": 0}), "cache_mb"),
    (ProxyOfCase("edge", "squid", {"colour": "red"}), "colour"),
])
def test_a_case_that_cannot_be_replayed_says_why(proxy, message):
    with pytest.raises(ReplayError, match=message):
        replay_lab(dataclasses.replace(CASE, proxy=proxy), 4321)


def test_the_expected_rule_found_again_is_reproduced_with_the_replay_s_reason():
    again = {"rule": "age", "section": "4", "reason": "Age 0 s, but the copy was 3.1 s old"}
    verdict = judge(CASE, {"id": 2, "proxies": [leg(violations=[again])]}, Path("/r"))
    assert verdict.ok
    assert verdict.lines() == ["reproduced: age (4) — Age 0 s, but the copy was 3.1 s old"]


def test_a_reply_without_the_rule_is_not_reproduced_and_says_how_it_was_judged():
    other = {"rule": "stale", "section": "4.2.4", "reason": "served stale"}
    verdict = judge(CASE, {"id": 2, "proxies": [leg(violations=[other])]}, Path("/r"))
    assert not verdict.ok
    assert verdict.lines() == ["not reproduced: age: the proxy's reply was judged OK (status 200), a reused copy, "
                               "violations: stale (4.2.4) — served stale"]
    failed = leg(violations=[], result="NO_RESPONSE", status=None, error="timeout")
    failed["cache"]["reused"] = False
    assert judge(CASE, {"id": 2, "proxies": [failed]}, Path("/r")).lines() == [
        "not reproduced: age: the proxy's reply was judged NO_RESPONSE (timeout), provenance origin, "
        "with no violation"]


def test_a_record_without_the_proxy_is_an_error():
    with pytest.raises(ReplayError, match="no leg of 'edge'"):
        judge(CASE, {"id": 2, "proxies": [leg("other")]}, Path("/r"))


@pytest.mark.parametrize("recorded, now, wait", [(100.25, 500.75, 0.5), (100.25, 500.25, 0.0), (100.9, 7.1, 0.8)])
def test_the_replay_starts_at_the_recorded_fraction_of_a_second(recorded, now, wait):
    """Dates and ages have one-second resolution: at the recorded phase each step's Date rounds as it did."""
    assert same_phase_delay(recorded, now) == pytest.approx(wait)
    assert (now + same_phase_delay(recorded, now)) % 1 == pytest.approx(recorded % 1)


def test_a_case_of_an_ageing_rule_sends_its_judged_request_a_little_later():
    """A copy only grows older: `age` and `stale` found 0.05 s past their bound are still found 0.5 s later,
    where the replay's clocks cannot land them on the other side; other rules keep the recorded offsets."""
    later = dataclasses.replace(CASE, steps=(STEP, dataclasses.replace(STEP, offset_s=1.5)))
    assert send_offsets(later) == [0.0, 1.5 + AGEING_MARGIN_S]
    stored = dataclasses.replace(later, expected=(AGE, Finding("stored-fields", "3.1", "r")))
    assert send_offsets(stored) == [0.0, 1.5]
    # a Date written in a later second: found past a second's tick, beside whatever else the reuse broke
    dated = dataclasses.replace(later, expected=(Finding("validator-precedence", "9110 13.2.2", "r"),
                                                 Finding("date", "9110 6.6.1", "r")))
    assert send_offsets(dated) == [0.0, 1.5 + AGEING_MARGIN_S]
