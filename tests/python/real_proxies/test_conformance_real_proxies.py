"""The conformance sequences on the real Debian proxies: Squid 5.7, Traffic Server 9.2, nginx 1.22,
Varnish 7.1, Apache 2.4 mod_cache (as a forward proxy and as a gateway) and the dummy, behind the patched
Collector, with the project's origin (the /c/<case>/<id> cases of spe_tools/workload/content/conformance.py) and the
sequences of conformance_mix.py: each on a URL and a client connection of its own, every dependent request
sent the moment the reply it depends on is in. For each sequence and each proxy (and the Collector), the rules
the judge flags over the sequence's records (`cache.violations`) must equal the expected set exactly.

The variant `loaded` runs the same sequences with both cores busy (two CPU hogs started after the lab is
up and stopped by PID however the test ends) and must give the same violations per proxy as `idle`.

EXPECTED is what RFC 9110/9111 say each proxy's observed behaviour is (observed from the records and by
asking each proxy directly: Date, Set-Cookie, X-Version and the 304s' fields).
SPE_CONFORMANCE_DUMP=PREFIX writes what the run found and its records to PREFIX-idle.json / -loaded.json.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from conformancesupport import INTERIM, KINDS_UNDER_TEST, SEQUENCES, lab_text, run_all
from conftest import multiplier_binary
from labsupport import CpuHogs, lab_session
from parts import installed_kinds, require

from spe_tools import collector

# Two of the judge's rule ids, named once for the table below.
PRECEDENCE = "validator-precedence"  # If-None-Match before If-Modified-Since (RFC 9110 13.2.2)
SHAPE_304 = "not-modified-fields"  # a 304 carries ETag, Vary ... as its 200 would (RFC 9110 15.4.5)
# nginx never generates Age (RFC 9111 5.1): each copy it reuses 3 s or more after the fetch breaks `age` too
INVALIDATION_MISSED = {"nginx": {"invalidation", "age", "date"}, "varnish": {"invalidation"}}

# What RFC 9110/9111 say each proxy's observed behaviour is: sequence -> proxy (or "collector") -> the rules it
# breaks; a proxy left out breaks none. Observed from the records, and by asking each proxy directly.
EXPECTED: dict[str, dict[str, set[str]]] = {
    # Squid, Traffic Server and Apache invalidate; nginx and Varnish do not (4.4). Traffic Server answers
    # M-SEARCH and PROPPATCH 500 itself (nothing succeeded through it: nothing to invalidate); Apache
    # invalidates only for the methods it knows.
    "post-then-get": INVALIDATION_MISSED,
    "put-then-get": INVALIDATION_MISSED,
    "delete-then-get": INVALIDATION_MISSED,
    "m-search-then-get": {**INVALIDATION_MISSED, "apache": {"invalidation"}},
    "proppatch-then-get": {**INVALIDATION_MISSED, "apache": {"invalidation"}},
    # A proxy's revalidation gets the origin's own 304 from its Collector port (patch 0021), X-Version: 2 with
    # the new Cache-Control / Expires; each reply after it carries the stamps of that 304 (the proxy's own
    # request), so none counts as a reuse of the older copy here (in the records: every leg OK, none reused,
    # no-cache exercised); nginx stores neither a no-cache nor an expired reply. Varnish serves the
    # max-age=2 copy in grace 4 s after it arrived, unvalidated: stale (4.2.4). Not header-update (4.3.4): its
    # copy carries the X-SPE-Parent it was stored with, so nothing shows that its parent's 304 (asked for in
    # the background, after it answered) had reached it. Not max-age=1: the Collector's Age is whole seconds, 1 when a
    # second boundary falls between the origin's reply and Varnish's request, and Varnish rightly does not store a
    # copy stale on arrival (so it would forward, and break nothing). nginx writes its own Date on what it
    # reuses (4, 3.2).
    "no-cache-update": {},
    # The origin's 304 carries Content-Length: 0 (patch 0021 passes it on; 0022 keeps the Collector's own copy
    # whole): every kind keeps the stored body and its length (3.2), idle and loaded.
    "update-length": {},
    # nginx (proxy_cache_revalidate) revalidates the stale copy and serves it with its stored header, the
    # max-age=2 the origin's 304 replaced (its Cache-Status says fwd-status=304): header-update (4.3.4), as it
    # fails the same case in front of the origin.
    "max-age-update": {"varnish": {"stale"}, "nginx": {"header-update", "date"}},
    # The 304 changes an extension field only (X-Version: 2): nginx serves its stored X-Version: 1, judged by the
    # value the fetch first came with (header-update, 4.3.4), as the independent suite finds it in front of the
    # origin (Test-Header, X-Content-Foo).
    "max-age-update-field": {"varnish": {"stale"}, "nginx": {"header-update", "date"}},
    # The same revalidation, the origin's 304 with Content-Length: 0: Squid merges it into its stored reply (RFC 9111
    # 3.2 leaves it out) and serves the stored body after a Content-Length: 0, from the revalidation on (as it does
    # in front of the origin, seen with curl): `framing` (its leg a PROTOCOL_ERROR, extra data).
    # nginx keeps X-Version: 1 after that 304 too (header-update).
    "max-age-update-length": {"squid": {"framing"}, "varnish": {"stale"}, "nginx": {"header-update", "date"}},
    "expires-update": {},
    # An invalid Expires is already expired (RFC 9111 5.3; RFC 9110 5.6.7's formats are exact).
    "expires-double-space": {"squid": {"stale"}, "varnish": {"stale"}, "collector": {"stale"}},
    "expires-one-digit-hour": {"trafficserver": {"stale"}, "varnish": {"stale"}},
    # gMT: RFC 9111 4.2 asks caches to match dates case-insensitively, so reusing it is right. nginx reuses
    # these 4 s later with Age 0 and a Date of its own (its `age` and `date` on every late reuse).
    "expires-gMT": {"nginx": {"age", "date"}},
    "expires-rfc850": {"nginx": {"age", "date"}},
    "expires-asctime": {"nginx": {"age", "date"}},
    "expires=0": {"varnish": {"stale"}},
    "expires=date": {"nginx": {"stale"}},  # never fresh: lifetime 0 (4.2.1)
    "expires-twice": {},
    # 4.2.1's lowercase "should" (the first occurrence, or stale): Traffic Server, Varnish and Apache reuse the
    # max-age=1, max-age=3600 copy 4 s later by the second value: the advisory duplicate-freshness, no violation.
    "max-age-twice": {},
    # max-age=3600.5 is no delta-seconds: invalid freshness information, which 4.2.1 encourages caches to read as
    # stale; the judge names a reuse invalid-freshness. Squid (and so the Collector), Traffic Server and Varnish
    # reuse it, Apache and nginx forward (seen behind stock Squid, by its access log).
    # Behind the patched Collector (patch 0021: the proxies get the origin's fields) Apache reuses it too.
    "max-age=non-integer": {kind: {"invalid-freshness"}
                            for kind in ("collector", "squid", "trafficserver", "varnish", "apache")},
    # The Collector reuses a copy that arrived with Age 2^31 and serves it with Age: 0 (4.2.3, 5.1); its
    # proxies get the origin's Age 2^31 (patch 0021): Squid reuses the stale copy as the Collector does, and
    # nginx too (without an Age of its own); the others ask again.
    "huge-age": {"collector": {"stale", "age"}, "squid": {"stale", "age"}, "nginx": {"stale", "age"}},
    # nginx and Apache answer If-None-Match (matching) + If-Modified-Since (1998) with 200; Squid's own 304
    # (made from its store after it revalidated) lacks the ETag, and here the Vary too (stock Squid 5.7; the
    # Collector's patch 0008 keeps them).
    "precedence": {"nginx": {PRECEDENCE}, "apache": {PRECEDENCE}, "squid": {SHAPE_304}},
    "etag-vary-304": {"squid": {SHAPE_304}},
    "set-cookie-reuse": {"squid": {"stored-fields"}, "trafficserver": {"stored-fields"}},  # Set-Cookie dropped
    # Qualified private="Set-Cookie" / no-cache="Set-Cookie" (5.2.2.7, 5.2.2.4): Squid, Traffic Server, nginx and
    # Varnish read them as unqualified (they do not reuse the copy: allowed); Apache reuses it without the
    # Set-Cookie (private-fields and no-cache-fields exercised, passed).
    # Connection: X-Hop-Field reaches every proxy (patch 0021) and X-SPE-Parent names it (0023): Traffic Server
    # and nginx forward the field and serve it from their store (RFC 9110 7.6.1, RFC 9111 3.1), the others drop it;
    # nginx's late reuse is without an Age and with a Date of its own, as everywhere.
    "connection-field": {"trafficserver": {"connection-fields"}, "nginx": {"connection-fields", "age", "date"}},
    "private-set-cookie": {},
    "no-cache-set-cookie": {},
    "date-stored": {"nginx": {"age", "date"}},  # nginx regenerates Date and never sends Age
    # The origin's 103 / 102 reach the client (test below) and, from the Collector's copy, every proxy (patch
    # 0021): Traffic Server drops a 103 that comes in one read with the final reply and hangs after a 102;
    # nginx answers nothing until the deadline and stores nothing; Varnish answers 503: all three `interim`.
    "interim-103": {"trafficserver": {"interim"}, "nginx": {"interim"}, "varnish": {"interim"}},
    "interim-102": {"trafficserver": {"interim"}, "nginx": {"interim"}, "varnish": {"interim"}},
}

# Apache as a gateway (kind apache-gateway) breaks what the forward Apache breaks, and writes a Date of its own on
# every reuse (RFC 9110 6.6.1, RFC 9111 4: a cache keeps the stored one), seen in every sequence with a
# reuse; the forward Apache keeps it. Pinned down where the reuse comes a second or more after the fetch.
def with_apache_gateway(sequence: str, expected: dict[str, set[str]]) -> dict[str, set[str]]:
    gateway = expected.get("apache", set()) | ({"date"} if sequence == "date-stored" else set())
    return {**expected, "apache-gateway": gateway} if gateway else expected


EXPECTED = {sequence: with_apache_gateway(sequence, expected) for sequence, expected in EXPECTED.items()}
# Proxies whose `date` on a reuse within a second of the fetch shows or not by that boundary (their own Date).
OWN_DATE = ("nginx", "apache-gateway")

# Rules whose showing depends on where a second boundary falls, not on what the proxy does: nginx writes its own
# Date (`date` shows only when its second differs from its parent's) and keeps a reply whose Expires equals its
# Date only within that second (its reuse, never fresh, is `stale`). They are left out of the comparison (both
# sides); every other rule must match exactly, idle and loaded.
TIMING: dict[str, dict[str, set[str]]] = {
    "expires=date": {"nginx": {"stale", "date"}},
    # nginx's Date is its own; its Age is none, so its reuse of a copy revalidated a second or more before it
    # is `age` or not by where that second falls.
    "max-age-update": {"nginx": {"age", "date"}},
    "max-age-update-field": {"nginx": {"age", "date"}},
    "max-age-update-length": {"nginx": {"age", "date"}},
}
# OWN_DATE's `date` on a reuse within a second of the fetch shows or not by that boundary: left out everywhere but
# where its reuse comes 1 s or more after the fetch, always (date-stored: there it is pinned down).
DATE_CERTAIN = ("date-stored",)


def settled(found: dict[str, set[str]], name: str) -> dict[str, set[str]]:
    """`found` without the rules TIMING lets show or not, and without the proxies left with none."""
    loose = dict(TIMING.get(name, {}))
    # nginx sends no Age: its reuse is `age` once the copy is a clock's slack old, which a busy machine's slower
    # sequence reaches where an idle one does not. Pinned down only where EXPECTED names it.
    if "age" not in EXPECTED[name].get("nginx", set()):
        loose["nginx"] = loose.get("nginx", set()) | {"age"}
    if name not in DATE_CERTAIN:
        for who in OWN_DATE:
            loose[who] = loose.get(who, set()) | {"date"}
    return {who: rules - loose.get(who, set()) for who, rules in found.items() if rules - loose.get(who, set())}

def exercised(record: dict) -> dict[str, set[str]]:
    """proxy name -> the rule ids one record's replies gave the judge a chance to find broken."""
    return {p["name"]: set((p.get("cache") or {}).get("exercised", [])) for p in record["proxies"]}


def violations(record: dict) -> dict[str, set[str]]:
    """proxy name (and "collector") -> the rule ids flagged on one record."""
    out = {p["name"]: {v["rule"] for v in (p.get("cache") or {}).get("violations", [])} for p in record["proxies"]}
    out["collector"] = {v["rule"] for v in (record["collector"].get("cache") or {}).get("violations", [])}
    return out


EXERCISED: dict[str, dict[str, set[str]]] = {}  # sequence -> proxy -> the rules its replies could have broken
FOUND: dict[int, dict] = {}  # each variant's findings, in the order the variants ran


@pytest.fixture(scope="module", params=["idle", "loaded"])
def observed(request):
    require(collector.missing("spe"), "the patched Collector")
    kinds = installed_kinds(KINDS_UNDER_TEST, multiplier_binary())

    with lab_session(lambda _workdir: lab_text(kinds)) as lab, CpuHogs(2 if request.param == "loaded" else 0):
        sent = run_all(lab, SEQUENCES)
        found: dict[str, dict[str, set[str]]] = {}
        for name in SEQUENCES:
            path, statuses = sent[name]
            # nginx answers nothing to a request whose parent sends an interim response until the leg's
            # deadline (timeout_s), and each later request of the sequence waits its turn behind that leg.
            records = lab.records(path, len(statuses), deadline_s=120)
            assert len(records) == len(statuses), (name, len(records), statuses)
            rules: dict[str, set[str]] = defaultdict(set)
            EXERCISED[name] = defaultdict(set)
            for record in records:
                for who, broken in violations(record).items():
                    rules[who] |= broken
                for who, chances in exercised(record).items():
                    EXERCISED[name][who] |= chances
            found[name] = {who: broken for who, broken in rules.items() if broken}
        if dump := os.environ.get("SPE_CONFORMANCE_DUMP"):  # what each proxy did, to write expectations from
            records = {name: lab.records(path, len(statuses)) for name, (path, statuses) in sent.items()}
            Path(f"{dump}-{request.param}.json").write_text(json.dumps(
                {"found": {n: {w: sorted(r) for w, r in f.items()} for n, f in found.items()}, "records": records}))
        yield kinds, found, sent


@pytest.mark.parametrize("name", SEQUENCES)
def test_each_sequence_is_flagged_for_exactly_the_proxies_that_break_its_rules(observed, name):
    kinds, found, sent = observed
    wanted = EXPECTED[name]
    expected = {who: rules for who, rules in wanted.items() if who in kinds or who == "collector"}
    assert settled(found[name], name) == settled(expected, name), (name, sent[name])


@pytest.mark.parametrize(("name", "rule"), [("private-set-cookie", "private-fields"),
                                          ("no-cache-set-cookie", "no-cache-fields")])
def test_apache_reuses_the_qualified_copies_so_their_rules_are_judged(observed, name, rule):
    """An empty EXPECTED must not mean "never judged": Apache stores private="Set-Cookie" and
    no-cache="Set-Cookie" replies (without the field) and reuses them, which gives the rule its chance."""
    kinds, _, _ = observed
    if "apache" in kinds:
        assert rule in EXERCISED[name]["apache"], EXERCISED[name]


def test_the_client_got_an_answer_to_every_request_of_every_sequence(observed):
    _, _, sent = observed
    for name, (_, statuses) in sent.items():
        assert all(s < 500 for s in statuses), (name, statuses)


def test_both_cores_busy_gives_the_same_violations_per_proxy(observed):
    """Runs after both variants' own tests (pytest groups tests by the module fixture's parameter)."""
    _, found, _ = observed
    FOUND[len(FOUND)] = {name: settled(rules, name) for name, rules in found.items()}
    if len(FOUND) == 2:
        assert FOUND[0] == FOUND[1]


def test_the_client_gets_the_origins_interim_responses_before_the_reply(observed):
    """RFC 9110 15.2: the Multiplier relays the 1xx the Collector relays from the origin (the first request
    of each sequence is the Collector's miss; its later ones, hits, have none)."""
    assert INTERIM["interim-103"][0] == [103]
    assert INTERIM["interim-102"][0] == [102]
    assert all(not seen for seen in INTERIM["interim-103"][1:])
