"""The Multiplier in front of the patched Collector with real Squid proxies under test: non-idempotent
requests reach the origin once per client request, never once per proxy (checked at the origin), and
every proxy gets the same copy of an uncacheable reply."""

from __future__ import annotations

import json
import time

import pytest
from collectorbed import multiplier_behind_collector, squid
from test_collector import fetch

PROXIES = ("squid1", "squid2")


@pytest.fixture(scope="module")
def bed():
    with multiplier_behind_collector("spe-mult-collector-", {name: squid(name) for name in PROXIES}) as bed:
        yield bed


def origin_count(origin: int, path: str) -> int:
    return json.loads(fetch(origin, "/_stats").body).get(path, 0)


def test_a_post_reaches_the_origin_once_per_client_request(bed):
    origin, multiplier = bed
    before = len(multiplier.records(0))
    for body in (b"order=1", b"order=2"):
        reply = fetch(multiplier.port, f"http://127.0.0.1:{origin}/post/checkout", method="POST", body=body,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert reply.status == 200
    records = multiplier.records(before + 2)[before:]
    deadline = time.monotonic() + 10  # the fan-out runs after the client's reply
    while time.monotonic() < deadline and not all(len(r.get("proxies", [])) == len(PROXIES) for r in records):
        time.sleep(0.1)
        records = multiplier.records(before + 2)[before:]
    assert origin_count(origin, "/post/checkout") == 2  # two client POSTs, two proxies each: still two
    assert [p["result"] for r in records for p in r["proxies"]] == ["OK"] * 2 * len(PROXIES)


def test_every_proxy_gets_the_same_copy_of_an_uncacheable_reply(bed):
    origin, multiplier = bed
    before = len(multiplier.records(0))
    path = "/obj/account?cc=private&cookie=1"
    assert fetch(multiplier.port, f"http://127.0.0.1:{origin}{path}").status == 200
    record = multiplier.records(before + 1, deadline_s=15)[-1]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(record.get("proxies", [])) < len(PROXIES):
        time.sleep(0.1)
        record = multiplier.records(before + 1)[-1]
    assert [p["result"] for p in record["proxies"]] == ["OK"] * len(PROXIES)
    assert origin_count(origin, path) == 1
