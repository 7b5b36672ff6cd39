"""The cache-rule judge on live traffic: purpose-built caches that each break one RFC 9111 rule
(tests/fixtures/fault_proxy.py cache modes, bodies identical to the origin's, so byte comparison
says OK) sit behind the patched Collector; the Multiplier's records must flag each case for
exactly the caches that broke the rule, by rule, and nothing for the correct one.
"""

from __future__ import annotations

import http.client
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, read_records
from labsupport import lab_session

from spe_tools.process import ProcessGroup, free_port

MODES = ["cache_correct", "cache_everything", "serve_stale", "ignore_vary", "no_invalidate", "no_age",
         "ignore_request_no_cache"]
# proxy name -> (fault_proxy mode, extra arguments): one cache per mode, and two correct caches that say
# what they did in X-Cache, one truthfully and one claiming a miss on every hit
PROXIES = {**{m: (m, []) for m in MODES}, "claims": ("cache_correct", ["--claim"]),
           "claims_lie": ("cache_correct", ["--claim-lie"])}


class Bed:
    def __init__(self, lab, origin_port: int):
        self.lab, self.origin = lab, f"http://127.0.0.1:{origin_port}"
        self.conn = http.client.HTTPConnection("127.0.0.1", lab.multiplier_port, timeout=30)

    def send(self, method: str, path: str, headers: dict[str, str] | None = None) -> dict:
        """One request through the Multiplier; its record once every leg is in."""
        before = len(self.lab.records(path, 0))
        self.conn.request(method, self.origin + path, body=b"x" if method == "POST" else None, headers=headers or {})
        reply = self.conn.getresponse()
        reply.read()
        assert reply.status < 500, (method, path, reply.status)
        records = self.lab.records(path, before + 1)
        assert len(records) == before + 1, f"no record for {method} {path}"
        return records[-1]


def findings(record: dict, kind: str = "violations") -> dict[str, set[str]]:
    """Rules each proxy broke (or, kind="advisories", did not honour) in this record; proxies with none left out."""
    out = {}
    for p in record["proxies"]:
        rules = {v["rule"] for v in (p.get("cache") or {}).get(kind, [])}
        if rules:
            out[p["name"]] = rules
    return out


def violations(record: dict) -> dict[str, set[str]]:
    return findings(record)


@pytest.fixture(scope="module")
def bed():
    origin_port = free_port()
    ports = {name: (free_port(), free_port()) for name in PROXIES}  # (proxy, its Collector port)

    def text(_workdir: Path) -> str:
        t = 'name = "judge"\n[collector]\nkind = "spe"\n[origin]\nkind = "none"\n[multiplier]\ntimeout_s = 20\n'
        for name, (port, cport) in ports.items():
            t += (f'[[proxy]]\nname = "{name}"\nkind = "external"\naddress = "127.0.0.1:{port}"\n'
                  f'collector_port = {cport}\n')
        return t

    def users(group: ProcessGroup) -> None:
        group.start("origin", [sys.executable, str(ROOT / "tests/fixtures/cache_origin.py"), str(origin_port)],
                    port=origin_port)
        for name, (port, cport) in ports.items():
            mode, extra = PROXIES[name]
            group.start(name, [sys.executable, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                               "--parent", f"127.0.0.1:{cport}", "--mode", mode, *extra], port=port)

    with lab_session(text, users) as lab:
        yield Bed(lab, origin_port)


def test_a_fresh_reuse_by_a_correct_cache_is_no_violation_and_says_reused(bed):
    bed.send("GET", "/fresh?cc=max-age%3D600")
    r = bed.send("GET", "/fresh?cc=max-age%3D600")
    assert violations(r) == {}
    correct = next(p for p in r["proxies"] if p["name"] == "cache_correct")
    assert correct["result"] == "OK"
    assert correct["cache"]["reused"] is True
    assert correct["cache"]["provenance"] == "origin"
    # The Collector answered from its store too: the same fetch. The proxy's copy still names
    # the earlier client request it was fetched for (X-SPE-Reply-To), so its reuse shows.
    assert correct["cache"]["fetch"] == r["collector"]["cache"]["fetch"]
    assert r["collector"]["cache"]["reused"] is True
    assert "age" in correct["cache"]["exercised"]


@pytest.mark.parametrize("cc, rule", [("no-store", "no-store"), ("private%2C%20max-age%3D600", "private")])
def test_a_cache_that_stores_what_it_must_not_is_flagged_by_rule(bed, cc, rule):
    path = f"/store-{rule}?cc={cc}"
    bed.send("GET", path)
    r = bed.send("GET", path)
    assert violations(r) == {"cache_everything": {rule}}
    everything = next(p for p in r["proxies"] if p["name"] == "cache_everything")
    assert everything["result"] == "OK"  # same bytes: only the judge sees it
    assert everything["cache"]["evidence"]["served"]["cache-control"]


# (path, the requests before the judged one: (method, headers, seconds to wait first), the judged
# request's headers, seconds to wait before it, the one cache expected to break the rule, the rule)
ONE_RULE_CASES = {
    "authorization": ("/auth?cc=max-age%3D600", [("GET", {"Authorization": "Basic dXNlcjpwYXNz"}, 0)], {}, 0,
                      "cache_everything"),
    "stale": ("/stale?cc=max-age%3D1", [("GET", {}, 0)], {}, 3.5, "serve_stale"),
    "vary": ("/vary?cc=max-age%3D600&vary=Accept-Language", [("GET", {"Accept-Language": "en"}, 0)],
             {"Accept-Language": "de"}, 0, "ignore_vary"),
    "invalidation": ("/inval?cc=max-age%3D600", [("GET", {}, 0), ("GET", {}, 0), ("POST", {}, 0)], {}, 0,
                     "no_invalidate"),
    "age": ("/age?cc=max-age%3D600", [("GET", {}, 0)], {}, 2, "no_age"),
}


@pytest.mark.parametrize("rule", ONE_RULE_CASES)
def test_a_cache_that_breaks_one_rule_is_flagged_with_that_rule_alone(bed, rule):
    path, before, headers, wait_s, culprit = ONE_RULE_CASES[rule]
    for method, first_headers, first_wait_s in before:
        time.sleep(first_wait_s)
        bed.send(method, path, first_headers)
    time.sleep(wait_s)
    r = bed.send("GET", path, headers)
    assert violations(r) == {culprit: {rule}}


def test_a_reload_answered_from_the_cache_is_reported_as_advisory(bed):
    # Request directives are advisory (RFC 9111 5.2.1: "caches MAY implement them"): reported, not violations.
    path = "/reload?cc=max-age%3D600"
    bed.send("GET", path)
    for reload in ({"Cache-Control": "no-cache"}, {"Pragma": "no-cache"}):
        r = bed.send("GET", path, reload)
        assert violations(r) == {}
        assert findings(r, "advisories") == {"ignore_request_no_cache": {"request-no-cache"}}


def test_the_collector_is_judged_too_and_a_hit_of_its_own_is_reused(bed):
    path = "/coll?cc=max-age%3D600"
    first = bed.send("GET", path)
    second = bed.send("GET", path)
    assert first["collector"]["cache"]["reused"] is False
    assert second["collector"]["cache"]["reused"] is True
    assert "violations" not in second["collector"]["cache"]  # none: the member is left out
    assert second["collector"]["cache"]["fetch"] == first["collector"]["cache"]["fetch"]


def test_every_record_of_the_run_honours_the_log_schema_and_names_its_request_fields(bed):
    bed.send("GET", "/schema?cc=max-age%3D600", {"Accept-Language": "fr", "Authorization": "Basic eDp5"})
    records = read_records(bed.lab.rundir / "multiplier.jsonl")  # validates each against the schema
    mine = [r for r in records if "/schema?" in r["url"]]
    assert mine[0]["request_headers"] == {"accept-encoding": "identity", "accept-language": "fr",  # http.client's
                                          "authorization": "(present)"}
    assert mine[0]["collector"]["cache"]["origin"]["cache-control"] == "max-age=600"


def test_a_caches_own_claim_is_checked_against_the_provenance(bed):
    path = "/claims?cc=max-age%3D600"
    first = bed.send("GET", path)
    second = bed.send("GET", path)
    truthful, liar = (next(p["cache"] for p in second["proxies"] if p["name"] == n) for n in ("claims", "claims_lie"))
    assert truthful["reused"] and truthful["claim"] == "hit" and "claim_conflict" not in truthful
    assert liar["reused"] and liar["claim"] == "miss" and "claimed a miss" in liar["claim_conflict"]
    fresh = next(p["cache"] for p in first["proxies"] if p["name"] == "claims")
    assert fresh["claim"] == "miss" and not fresh["reused"] and "claim_conflict" not in fresh
