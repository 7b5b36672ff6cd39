"""Interim (1xx) responses through a real lab: the real Debian proxies, tests/fixtures/mini_origin.py as the
origin (`?interim=103` sends a 103 Early Hints first).

Behind the patched Collector (the `spe` lab): it relays the origin's interim responses to an HTTP/1.1 client of
the fetch they belong to, in order, keeps them with the copy and sends them, just before the final header, to
every proxy request answered from it (patch 0021, docs/collector.md). So the client gets the 103 before the 200,
and each proxy does what it does in front of the origin (PATCHED_EXPECTED): in one write with the final reply,
Traffic Server drops a 103 (below: timing decides that behind stock Squid, never here).

Behind Debian's stock Squid as the Collector (the `stock` lab: no sharing, so each proxy's request for an
uncacheable URL is an origin fetch of its own, relayed with the origin's interims; the origin stamps each fetch,
`stamp=1`, as the patched Collector would), what each Debian proxy does with an interim response from its parent:

| origin sends | squid 5.7 | trafficserver 9.2 | nginx 1.22 | varnish 7.1 | apache 2.4 |
|---|---|---|---|---|---|
| 103, 200 ms, 200 | relays both | relays both | hangs: `interim` | 503: `interim` | both |
| 102, 200 | relays both | the 102, then nothing: `interim` | hangs: `interim` | 503: `interim` | both |

A 103 that reaches Traffic Server in the same read as its final reply is dropped (`interim`), one that comes
alone is relayed: timing, so not asserted here (the stand-in proxies of test_interim_responses.py pin the rule).

nginx's leg gets no interim and no reply (NO_RESPONSE, timeout), Varnish's is its own error page
(STATUS_CODE_MISMATCH, no fetch stamp): where the origin's reply came after interim responses and the Collector is
one that passes them on (its fetch stamp on the client's reply), the judge names both `interim`. (Traffic Server
closes after the 102 when the request said `Connection: close`; the Multiplier's requests keep the connection, as
its client's did.)
"""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT
from httpclient import Connection, request_bytes
from labsupport import real_proxies_lab


def start_lab(collector_kind: str):
    return real_proxies_lab("interim", collector_kind, lambda port: [
        sys.executable, str(ROOT / "tests/fixtures/mini_origin.py"), "--port", str(port)], timeout_s=5)


@pytest.fixture(scope="class")
def real_lab():
    session, kinds, origin = start_lab("spe")
    with session as lab:
        yield lab, kinds, origin


@pytest.fixture(scope="class")
def stock_lab():
    session, kinds, origin = start_lab("squid")
    with session as lab:
        yield lab, kinds, origin


def exchange(lab, url: str) -> tuple[list[int], int, dict]:
    """One GET through the Multiplier: the interim statuses the client got, the final status, the record."""
    before = len(lab.records(url, 0))
    with Connection(lab.multiplier_port, timeout=30) as c:
        c.send(request_bytes("GET", url))
        interims, reply = [], c.read_reply()
        while reply.status < 200:
            interims.append(reply.status)
            reply = c.read_reply()
    records = lab.records(url, before + 1)
    assert len(records) == before + 1, url
    return interims, reply.status, records[-1]


def statuses(leg: dict) -> list[int]:
    return [i["status"] for i in leg.get("interim", [])]


def rules(leg: dict) -> set[str]:
    return {v["rule"] for v in (leg.get("cache") or {}).get("violations", [])}


# What each proxy does with interim responses from its parent (Debian 12's packages, as in the table above), where it
# does not relay them and then the final reply: Traffic Server drops a 103 and hangs after a 102 (named), nginx
# answers nothing until the leg's deadline, Varnish answers 503 (its backend fetch failed).
PATCHED_EXPECTED = {"trafficserver": "named", "nginx": "hangs", "varnish": 503}


class TestBehindThePatchedCollector:
    @pytest.mark.parametrize("path", ["/status/200?interim=103", "/status/200?interim=103,102&interim_ms=50"])
    def test_the_client_gets_the_origins_interims_before_the_final_reply(self, real_lab, path):
        lab, kinds, origin = real_lab
        interims, final, record = exchange(lab, origin + path)
        expected = [int(s) for s in path.split("interim=")[1].split("&")[0].split(",")]
        assert interims == expected and final == 200
        assert statuses(record["collector"]) == expected
        legs = {p["name"]: p for p in record["proxies"]}
        assert set(legs) == set(kinds)
        # The Collector gives every proxy request answered from the client's copy the interim responses the
        # origin sent with it (patch 0021), so each proxy does here what it does in front of the origin.
        for name, leg in legs.items():
            behaviour = PATCHED_EXPECTED.get(name, "relays")
            if behaviour == "relays":
                assert statuses(leg) == expected and leg["status"] == 200, (name, leg)
                assert "interim" not in rules(leg), (name, leg["cache"])
            elif behaviour == "named":  # dropped, hung after or ended on one: the judge says so
                assert "interim" in rules(leg), (name, leg)
            elif behaviour == "hangs":  # no reply at all until the leg's deadline
                assert leg["error"] == "timeout" and statuses(leg) == [] and not leg["status"], (name, leg)
                assert "interim" in rules(leg), (name, leg)
            else:  # its own error reply
                assert leg["status"] == behaviour and statuses(leg) == [], (name, leg)
                assert "interim" in rules(leg), (name, leg)

    def test_a_collector_hit_has_no_interim_for_the_client(self, real_lab):
        lab, _, origin = real_lab
        url = origin + "/c/hinted?interim=103"
        first, _, record = exchange(lab, url)
        again, _, hit = exchange(lab, url)
        assert first == [103] and statuses(record["collector"]) == [103]
        assert again == [] and "interim" not in hit["collector"]
        for leg in hit["proxies"]:
            assert "interim" not in rules(leg), leg


# what the origin sends (its query) -> proxy -> (the interims its leg records, its status, a part of its `interim`
# reason or None); a proxy left out relays them all and the final reply
STOCK_EXPECTED = {
    "interim=103&interim_ms=200": {"nginx": ([], None, "no final response (timeout)"),
                                   "varnish": ([], 503, "a 503 of its own")},
    "interim=102": {"trafficserver": ([102], None, "interim response (102"),
                    "nginx": ([], None, "no final response (timeout)"), "varnish": ([], 503, "a 503 of its own")},
}


class TestBehindStockSquid:
    @pytest.mark.parametrize("sent", STOCK_EXPECTED)
    def test_each_proxy_gets_its_own_fetch_and_is_named_for_what_it_does(self, stock_lab, sent):
        lab, kinds, origin = stock_lab
        interims, final, record = exchange(lab, origin + f"/status/200?{sent}&stamp=1")
        sent_statuses = [int(s) for s in sent.split("&")[0].removeprefix("interim=").split(",")]
        assert interims == sent_statuses and final == 200
        for leg in record["proxies"]:
            want_interim, want_status, want_reason = STOCK_EXPECTED[sent].get(leg["name"], (sent_statuses, 200, None))
            assert (statuses(leg), leg["status"]) == (want_interim, want_status), leg
            named = [v["reason"] for v in (leg.get("cache") or {}).get("violations", []) if v["rule"] == "interim"]
            if want_reason is None:
                assert named == [], leg
            else:
                assert len(named) == 1 and want_reason in named[0], leg
