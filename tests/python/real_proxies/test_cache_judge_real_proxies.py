"""The cache-rule judge on the real Debian proxies: Squid 5.7, Traffic Server 9.2, nginx 1.22, Varnish 7.1
and Apache 2.4 mod_cache, side by side behind the patched Collector, with tests/fixtures/cache_origin.py as
the origin (each URL's query says which caching headers it answers with). Each case runs on a URL of its
own; its judged request is its last, sent WAIT_S after the others. The judged record must flag exactly
the proxies that broke the case's rule, by rule, and nothing for the others or the Collector.

The cases (RFC 9111 section: the requests):
- fresh (a control, 4.2): max-age=600, twice;
- authorization (3.5): max-age=100000 (no public, s-maxage or must-revalidate) to a GET with
  Authorization, then the same GET without it;
- stale (4.2, 4.2.3): max-age=3600 arriving with Age: 7200, twice;
- invalidation (4.4): GET (max-age=600), POST to the same URL (200), GET;
- no-store (5.2.2.5): no-store, twice;
- private (5.2.2.7): private, max-age=600, twice;
- huge-age (4.2.3, judged by the parent's Age): max-age=3600 arriving with Age: 2147483648, twice. The
  Collector reuses it with an Age of its own (Squid's bug, flagged on the Collector as stale and age) and
  gives the proxies the origin's Age (patch 0021): Squid and nginx reuse the copy stale, as the Collector does,
  the others ask again;
- set-cookie (3.1): max-age=600 with Set-Cookie, twice: a stored Set-Cookie must be sent on reuse;
- header-update (4.3.4): max-age=2 with an ETag, then 4 s later the origin's 304 says max-age=3. Not
  max-age=1: the Collector's Age is whole seconds, 1 when a second boundary falls between the origin's reply
  and Varnish's request, and Varnish rightly stores no copy that arrives stale (it would then forward).
  Whether a proxy merged the 304 is judged by what its parent sent it (the X-SPE-Parent on its copy).

What each proxy does with the judged request ("fwd": asked the Collector; "hit": served its stored copy;
then the rules the judge flags):

| case | squid | trafficserver | nginx | varnish | apache |
|---|---|---|---|---|---|
| fresh | hit | hit | hit: age | hit | hit |
| authorization | fwd | hit: authorization | hit: authorization, age | fwd | fwd |
| stale | fwd | fwd | hit: stale, age | fwd | fwd |
| invalidation | fwd | fwd | hit: invalidation, age | hit: invalidation | fwd |
| no-store | fwd | fwd | fwd | fwd | fwd |
| private | fwd | fwd | fwd | fwd | fwd |
| huge-age | hit: stale, age | fwd | hit: stale, age, date | fwd | fwd |
| set-cookie | hit: stored-fields | hit: stored-fields | fwd (no store) | fwd (no store) | hit |
| header-update | fwd | fwd | revalidated: header-update, date | hit (grace): stale | fwd |

nginx writes its own Date on every reply, its hits too (`date`). Varnish serves its stale copy in grace
and revalidates in the background, after it has answered: the copy it serves carries the X-SPE-Parent it was
stored with, nothing its parent sent during this request, so it is named `stale`, not `header-update`
(that rule needs a copy that shows it took its parent's 304: docs/cache-judge.md). nginx
(proxy_cache_revalidate) asks with If-None-Match, gets the origin's 304 and serves its stored header, the old
max-age=2: its Cache-Status (fwd-status=304) says it revalidated, so it is named `header-update`.
The Collector (patched Squid 5.7) breaks none of them but huge-age, as Squid under test does. nginx never
generates Age (RFC 9111 4), so each
copy it reuses WAIT_S after the fetch also breaks `age`: the wait makes that certain rather than a matter
of timing (the judge flags an Age more than 2.5 s low). "fwd" and "hit" are checked independently of the
judge too, in the Collector's access log: a proxy that forwarded asked its Collector port. In every case
each proxy had the chance to break the case's rule (`cache.exercised`), so an empty set means it
behaved, not that the rule was never put to it.
"""

from __future__ import annotations

import sys
import time

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import REAL_KINDS, real_proxies_lab
from parts import require

from spe_tools.lab.definition.kinds import KINDS

AUTH = {"Authorization": "Basic YWxpY2U6c2VjcmV0"}
WAIT_S = 4  # between a case's first requests and its judged one: more than nginx's missing Age may hide

# case -> (path, requests before the wait, the judged request's headers, the rule the case exercises)
CASES = {
    "fresh": ("/real/fresh?cc=max-age%3D600", [("GET", {})], {}, "age"),
    "authorization": ("/real/auth?cc=max-age%3D100000", [("GET", AUTH)], {}, "authorization"),
    "stale": ("/real/stale?cc=max-age%3D3600&age=7200", [("GET", {})], {}, "stale"),
    "invalidation": ("/real/inval?cc=max-age%3D600", [("GET", {}), ("POST", {})], {}, "invalidation"),
    "no-store": ("/real/no-store?cc=no-store", [("GET", {})], {}, "no-store"),
    "private": ("/real/private?cc=private%2C%20max-age%3D600", [("GET", {})], {}, "private"),
    "huge-age": ("/real/huge-age?cc=max-age%3D3600&age=2147483648", [("GET", {})], {}, "stale"),
    "set-cookie": ("/real/cookie?cc=max-age%3D600&cookie=c", [("GET", {})], {}, "stored-fields"),
    "header-update": ("/real/update?cc=max-age%3D2&etag=v1&cc304=max-age%3D3", [("GET", {})], {}, "stale"),
}
# case -> proxy -> the rules it broke on the judged request; a proxy left out broke none
EXPECTED = {
    "fresh": {"nginx": {"age", "date"}},
    "authorization": {"trafficserver": {"authorization"}, "nginx": {"authorization", "age", "date"}},
    "stale": {"nginx": {"stale", "age", "date"}},
    "invalidation": {"varnish": {"invalidation"}, "nginx": {"invalidation", "age", "date"}},
    "no-store": {},
    "private": {},
    "huge-age": {"squid": {"stale", "age"}, "nginx": {"stale", "age", "date"}},
    "set-cookie": {"squid": {"stored-fields"}, "trafficserver": {"stored-fields"}},
    "header-update": {"varnish": {"stale"}, "nginx": {"header-update", "date"}},
}
# case -> the rules the Collector broke on the judged request (judged by the origin's fields)
COLLECTOR_EXPECTED = {"huge-age": {"stale", "age"}}
PROXY_ONLY = {"date", "stored-fields", "header-update"}  # rules judged by X-SPE-Parent
# case -> the rule the Collector had the chance to break, where not the case's (it validated: never stale)
COLLECTOR_RULE = {"header-update": "age"}
# (case, proxy) that asked its Collector port and still served its stored copy: in the background while
# serving it stale (Varnish's grace), or to revalidate it (nginx)
ASKED_AND_REUSED = {("header-update", "varnish"), ("header-update", "nginx")}
# case -> the proxies that served the judged request from their store
REUSED = {"fresh": set(REAL_KINDS), "authorization": {"trafficserver", "nginx"}, "stale": {"nginx"},
          "invalidation": {"varnish", "nginx"}, "no-store": set(), "private": set(), "huge-age": {"squid", "nginx"},
          "set-cookie": {"squid", "trafficserver", "apache"}, "header-update": {"varnish", "nginx"}}
# (case, proxy) without the chance to break the case's rule: nginx and Varnish do not store a reply with
# Set-Cookie (RFC 9111 3 lets a cache decline to store anything), so they never reuse one
NOT_EXERCISED = {("set-cookie", "nginx"), ("set-cookie", "varnish")}
# (case, proxy) -> the rule it had the chance to break in place of the case's: nginx revalidated (it says so in
# its Cache-Status), so its copy is judged by the 304's fields, not by its staleness
EXERCISED_INSTEAD = {("header-update", "nginx"): "header-update"}


class Judged:
    """The lab, the kinds in it, and each case's judged record."""

    def __init__(self, lab, kinds: list[str], records: dict[str, dict]):
        self.lab, self.kinds, self.records = lab, kinds, records

    def proxy(self, case: str, kind: str) -> dict:
        return next(p for p in self.records[case]["proxies"] if p["name"] == kind)


def send(lab, origin: str, method: str, path: str, headers: dict[str, str]) -> dict:
    """One request through the Multiplier; its record once every leg is in."""
    before = len(lab.records(path, 0))
    lab.conn.request(method, origin + path, body=b"x" if method == "POST" else None, headers=headers)
    reply = lab.conn.getresponse()
    reply.read()
    assert reply.status == 200, (method, path, reply.status)
    records = lab.records(path, before + 1)
    assert len(records) == before + 1, f"no record for {method} {path}"
    return records[-1]


@pytest.fixture(scope="module")
def judged():
    session, kinds, url = real_proxies_lab("real", "spe", lambda port: [
        sys.executable, str(ROOT / "tests/fixtures/cache_origin.py"), str(port)], timeout_s=20)
    with session as lab:
        for path, first, _, _ in CASES.values():
            for method, headers in first:
                send(lab, url, method, path, headers)
        time.sleep(WAIT_S)  # one wait for every case
        records = {case: send(lab, url, "GET", path, headers) for case, (path, _, headers, _) in CASES.items()}
        yield Judged(lab, kinds, records)


def rules_broken(cache: dict | None) -> set[str]:
    return {v["rule"] for v in (cache or {}).get("violations", [])}


@pytest.mark.parametrize("kind", REAL_KINDS)
@pytest.mark.parametrize("case", CASES)
def test_each_case_is_flagged_for_exactly_the_proxies_that_broke_its_rule(judged, case, kind):
    require(KINDS[kind].missing(multiplier_binary()), f"the proxy kind {kind}")
    mine = judged.proxy(case, kind)
    cache = mine.get("cache")
    assert cache is not None, f"{kind} has no cache verdict on {case}: {mine}"
    assert rules_broken(cache) == EXPECTED[case].get(kind, set()), cache
    if (case, kind) not in NOT_EXERCISED:
        rule = EXERCISED_INSTEAD.get((case, kind), CASES[case][3])
        assert rule in cache["exercised"], f"{kind} never had the chance to break {rule}: {cache}"
    assert cache["reused"] is (kind in REUSED[case]), cache


@pytest.mark.parametrize("case", CASES)
def test_the_collector_breaks_none_of_the_rules(judged, case):
    cache = judged.records[case]["collector"]["cache"]
    assert rules_broken(cache) == COLLECTOR_EXPECTED.get(case, set()), cache
    rule = COLLECTOR_RULE.get(case, CASES[case][3])
    if rule not in PROXY_ONLY:  # judged by what a parent sent: the Collector's parent sends no note
        assert rule in cache["exercised"], cache


@pytest.mark.parametrize("case", CASES)
def test_the_proxies_that_forwarded_are_those_the_judge_says_did_not_reuse(judged, case):
    """The Collector's access log, independent of the provenance headers: each proxy asked its Collector
    port once per request of the case, except for the judged request when it reused its copy."""
    path, first, _, _ = CASES[case]
    asked = judged.lab.collector_lines(path)
    for kind in judged.kinds:
        expected = len(first) + 1 - (kind in REUSED[case]) + ((case, kind) in ASKED_AND_REUSED)
        assert asked[kind] == expected, (kind, dict(asked))
