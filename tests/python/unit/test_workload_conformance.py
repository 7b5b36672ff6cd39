"""The conformance mix: /c/<case>/<id> replies that cover RFC 9111's rules (pure, then over real
HTTP from the origin process), and the load client's request sequences that give caches the chance to break
each rule (seeded, deterministic)."""

from __future__ import annotations

import gzip
import random
import time
from collections import Counter

import pytest
from conftest import ROOT

from spe_tools.workload.client.conformance_mix import SCENARIOS, ConformanceMix, scenarios_for
from spe_tools.workload.client.popularity import History
from spe_tools.workload.content import conformance as cf
from spe_tools.workload.content import model as cm
from spe_tools.workload.http11 import parse_date
from spe_tools.workload.load import Mix, Planner, RobotState


def get(path: str, headers: dict | None = None, method: str = "GET", fetch: int = 1) -> cf.CaseReply:
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    return cf.reply(method, path, lambda name: headers.get(name, ""), fetch)


def hdr(r: cf.CaseReply) -> dict:
    return {k.lower(): v for k, v in r.headers}


# --- the replies (pure) ---------------------------------------------------------------------------

def test_every_cache_control_directive_has_a_case_alone_or_combined():
    values = " ".join(c.cache_control for c in cf.CASES.values())
    for directive in ("max-age=", "s-maxage=", "no-store", "no-cache", "private", "public", "must-revalidate",
                      "proxy-revalidate", "no-transform", "immutable", "stale-while-revalidate=",
                      "stale-if-error=", 'private="Set-Cookie"', 'no-cache="Set-Cookie"'):
        assert directive in values, directive
    assert any(", " in c.cache_control for c in cf.CASES.values())  # combined
    assert any(c.cache_control in ("no-store", "no-cache") for c in cf.CASES.values())  # alone
    assert {1, 2, 5} <= {c.max_age for c in cf.CASES.values()}  # stale within a run


@pytest.mark.parametrize("case,cache_control", [
    ("max-age=2", "max-age=2"), ("no-store", "no-store"), ("private", "private, max-age=3600"),
    ("must-revalidate", "must-revalidate, max-age=2"), ("s-maxage=2", "max-age=3600, s-maxage=2"),
    ("stale-while-revalidate", "max-age=1, stale-while-revalidate=30"),
    ("no-cache=set-cookie", 'no-cache="Set-Cookie", max-age=3600'),
    ("no-store,max-age=3600", "no-store, max-age=3600")])
def test_the_path_names_the_case_and_the_reply_has_its_cache_control(case, cache_control):
    r = get(f"/c/{case}/x1")
    assert r.status == 200 and hdr(r)["cache-control"] == cache_control


def test_expires_cases_past_future_zero_and_garbage():
    assert parse_date(hdr(get("/c/expires-past/x"))["expires"]) < cm.LAST_MODIFIED_BASE
    assert parse_date(hdr(get("/c/expires-future/x"))["expires"]) > cm.LAST_MODIFIED_BASE + 5 * 365 * 86400
    assert hdr(get("/c/expires=0/x"))["expires"] == "0"
    assert parse_date(hdr(get("/c/expires-garbage/x"))["expires"]) is None
    for case in ("expires-past", "expires-future", "expires=0", "expires-garbage", "heuristic"):
        assert "cache-control" not in hdr(get(f"/c/{case}/x")), case
    combined = hdr(get("/c/max-age=2,expires-future/x"))
    assert combined["cache-control"] == "max-age=2" and "expires" in combined


def test_heuristic_case_has_only_last_modified():
    h = hdr(get("/c/heuristic/x"))
    assert "last-modified" in h and not {"cache-control", "expires", "etag"} & set(h)


def test_validators_per_case_and_304_answers():
    full = get("/c/max-age=2/v1")
    assert hdr(get("/c/etag-only/v1", {"If-None-Match": hdr(get("/c/etag-only/v1"))["etag"]})).get("etag")
    tag, lm = hdr(full)["etag"], hdr(full)["last-modified"]
    assert get("/c/max-age=2/v1", {"If-None-Match": tag}).status == 304
    assert get("/c/max-age=2/v1", {"If-None-Match": f'W/{tag}'}).status == 304  # weak comparison (RFC 9110 13.1.2)
    assert get("/c/max-age=2/v1", {"If-Modified-Since": lm}).status == 304
    wrong = get("/c/max-age=2/v1", {"If-None-Match": '"other"', "If-Modified-Since": lm})
    assert wrong.status == 200 and wrong.body == full.body  # If-None-Match wins (RFC 9110 13.2.2)
    not_modified = get("/c/max-age=2/v1", {"If-None-Match": tag})
    assert not not_modified.body and hdr(not_modified)["etag"] == tag
    assert hdr(not_modified)["cache-control"] == "max-age=2"
    lm_only, etag_only = hdr(get("/c/last-modified-only/v1")), hdr(get("/c/etag-only/v1"))
    assert "etag" not in lm_only and "last-modified" in lm_only
    assert "last-modified" not in etag_only and "etag" in etag_only
    assert not {"etag", "last-modified"} & set(hdr(get("/c/no-validators/v1")))
    assert get("/c/no-validators/v1", {"If-None-Match": "*"}).status == 200
    assert get("/c/etag-only/v1", {"If-Modified-Since": lm}).status == 200  # nothing to compare with


def test_bodies_stay_the_same_across_fetches_even_for_no_store_and_differ_between_urls():
    for case in cf.CASES:
        a, b = get(f"/c/{case}/s1"), get(f"/c/{case}/s1")
        assert (a.status, a.headers, a.body) == (b.status, b.headers, b.body), case
    assert get("/c/no-store/s1").body != get("/c/no-store/s2").body
    assert get("/c/no-store/s1").body != get("/c/max-age=2/s1").body


def test_vary_variants_have_different_bodies_and_tags():
    en = get("/c/vary=accept-language/v", {"Accept-Language": "en"})
    fr = get("/c/vary=accept-language/v", {"Accept-Language": "fr"})
    assert hdr(en)["vary"] == "Accept-Language" and en.body != fr.body and hdr(en)["etag"] != hdr(fr)["etag"]
    assert get("/c/vary=accept-language/v", {"Accept-Language": "en"}).body == en.body
    assert get("/c/vary=accept-language/v", {"Accept-Language": "fr", "If-None-Match": hdr(en)["etag"]}).status == 200
    zipped = get("/c/vary=accept-encoding/v", {"Accept-Encoding": "gzip, deflate"})
    plain = get("/c/vary=accept-encoding/v")
    assert hdr(zipped)["content-encoding"] == "gzip" and gzip.decompress(zipped.body) == plain.body
    assert "content-encoding" not in hdr(plain) and hdr(plain)["vary"] == "Accept-Encoding"
    both = [get("/c/vary=accept-language,accept-encoding/v", {"Accept-Language": lang, "Accept-Encoding": enc})
            for lang in ("en", "de") for enc in ("gzip", "identity")]
    assert hdr(both[0])["vary"] == "Accept-Language, Accept-Encoding"
    assert len({r.body for r in both}) == 4 and len({hdr(r)["etag"] for r in both}) == 4


def test_cacheable_non_200_statuses():
    for status in (203, 204, 300, 301, 404, 410):
        r = get(f"/c/status={status}/s")
        assert r.status == status and hdr(r)["cache-control"] == "max-age=3600", status
        assert (r.body == b"") == (status == 204)
    assert hdr(get("/c/status=301/s"))["location"] == "/c/max-age=3600/s"
    assert get("/c/status=404/s", {"If-None-Match": "*"}).status == 404  # preconditions only for 2xx (RFC 9110 13.2.1)
    heuristic = get("/c/status=404,heuristic/s")
    assert heuristic.status == 404 and "cache-control" not in hdr(heuristic)


def test_range_requests_get_206_with_the_slice():
    full = get("/c/max-age=3600/r")
    part = get("/c/max-age=3600/r", {"Range": "bytes=10-19"})
    assert part.status == 206 and part.body == full.body[10:20]
    assert hdr(part)["content-range"] == f"bytes 10-19/{len(full.body)}"
    assert hdr(full)["accept-ranges"] == "bytes"
    assert get("/c/max-age=3600/r", {"Range": "bytes=0-1,5-6"}).status == 200  # multiple ranges: the whole reply
    assert get("/c/max-age=3600/r", {"Range": "bytes=10-19"}, method="HEAD").status == 200


def test_age_on_arrival_and_set_cookie():
    stale = hdr(get("/c/age=7200,max-age=3600/a"))
    assert stale["age"] == "7200" and stale["cache-control"] == "max-age=3600"
    assert hdr(get("/c/age=2,max-age=5/a"))["age"] == "2"
    assert hdr(get("/c/set-cookie/a"))["set-cookie"].startswith("spe=")
    assert hdr(get("/c/private=set-cookie/a"))["set-cookie"].startswith("spe=")


def test_unsafe_methods_succeed_with_a_fixed_uncacheable_reply_and_unknown_cases_404():
    for method in ("POST", "PUT", "DELETE"):
        a, b = get("/c/max-age=3600/u", method=method), get("/c/max-age=3600/u", method=method)
        assert a.status == 200 and a.body == b.body and hdr(a)["cache-control"] == "no-store"
    assert get("/c/max-age=3600/u", method="OPTIONS").status == 405
    assert get("/c/no-such-case/u").status == 404
    assert get("/c/max-age=2").status == 404  # no id


def test_borderline_and_invalid_dates_are_written_as_the_case_says():
    expires = {case: hdr(get(f"/c/{case}/d"))["expires"] for case in (
        "expires-double-space", "expires-one-digit-hour", "expires-gMT", "expires-rfc850", "expires-asctime")}
    assert expires == {"expires-double-space": "Thu, 18  Aug  2050 02:01:18 GMT",
                       "expires-one-digit-hour": "Thu, 18 Aug 2050 2:01:18 GMT",
                       "expires-gMT": "Thu, 18 Aug 2050 02:01:18 gMT",
                       "expires-rfc850": "Thursday, 18-Aug-50 02:01:18 GMT",
                       "expires-asctime": "Thu Aug 18 02:01:18 2050"}
    same = get("/c/expires=date/d")
    assert [v for k, v in same.headers if k == "Date"] == [v for k, v in same.headers if k == "Expires"]
    assert [v for k, v in get("/c/expires-twice/d").headers if k == "Expires"] == [cf.PAST, cf.FUTURE]
    assert hdr(get("/c/max-age-twice/d"))["cache-control"] == "max-age=1, max-age=3600"
    assert hdr(get("/c/max-age=non-integer/d"))["cache-control"] == "max-age=3600.5"
    assert hdr(get("/c/age=2147483648,max-age=3600/d"))["age"] == "2147483648"


@pytest.mark.parametrize("case,updated", [
    ("no-cache,update", {"x-version": "2", "cache-control": "no-cache"}),
    ("no-cache,update-length", {"x-version": "2", "content-length": "0"}),
    ("max-age=2,update", {"x-version": "2", "cache-control": "max-age=3600"}),
    ("expires-past,update", {"x-version": "2", "expires": cf.FUTURE})])
def test_a_304_carries_updated_fields_and_every_200_the_old_ones(case, updated):
    full = get(f"/c/{case}/u")
    assert hdr(full)["x-version"] == "1"
    for _ in range(2):  # deterministic: the same 304 each time, and a full fetch is always version 1
        not_modified = get(f"/c/{case}/u", {"If-None-Match": hdr(full)["etag"]})
        assert not_modified.status == 304 and {k: hdr(not_modified)[k] for k in updated} == updated
        assert [k for k, _ in not_modified.headers].count("X-Version") == 1
        assert hdr(get(f"/c/{case}/u"))["x-version"] == "1"


def test_extension_methods_succeed_so_they_invalidate():
    for method in cf.EXTENSION:
        r = get("/c/invalidated/m", method=method)
        assert r.status == 200 and hdr(r)["cache-control"] == "no-store", method
    assert "M-SEARCH" in hdr(get("/c/invalidated/m", method="OPTIONS"))["allow"]


def test_interim_cases_name_their_1xx_responses_for_the_origin_to_send():
    assert [status for status, _ in get("/c/interim=103/i").interim] == [103]
    assert dict(get("/c/interim=103/i").interim[0][1])["Link"].endswith("rel=preload; as=style")
    assert [status for status, _ in get("/c/interim=102/i").interim] == [102]
    assert get("/c/max-age=3600/i").interim == ()


def test_odd_statuses_come_fresh_stale_and_heuristic_and_only_2xx_answer_304():
    for status in cf.ODD_STATUSES:
        fresh, stale, heuristic = (get(f"/c/status={status}{kind}/o") for kind in ("", ",stale", ",heuristic"))
        assert fresh.status == stale.status == heuristic.status == status
        assert hdr(fresh)["cache-control"] == "max-age=3600" and hdr(stale)["expires"] == cf.PAST
        assert "etag" not in hdr(heuristic) and "cache-control" not in hdr(heuristic)
        tag = hdr(fresh)["etag"]
        assert (get(f"/c/status={status}/o", {"If-None-Match": tag}).status == 304) == (200 <= status < 300)


def test_dates_by_a_fast_or_slow_clock_and_expires_after_them():
    now = int(time.time())
    for case, offset, age in (("date-slow", -10, None), ("date-fast", 10, None), ("date-slow,age=25", -10, "25")):
        h = hdr(get(f"/c/{case}/d"))
        assert abs(parse_date(h["date"]) - (now + offset)) <= 2, case
        assert parse_date(h["expires"]) - parse_date(h["date"]) == 20 and h.get("age") == age, case


def test_replies_that_differ_between_fetches():
    cut = [get("/c/cut-once/f", fetch=n) for n in (1, 2)]
    assert cut[0].cut and not cut[1].cut and cut[0].body == cut[1].body
    first, second = (get("/c/no-cache,changing/f", fetch=n) for n in (1, 2))
    assert first.body != second.body and hdr(first)["etag"] != hdr(second)["etag"]
    assert (hdr(first)["x-version"], hdr(second)["x-version"]) == ("1", "2")
    assert get("/c/no-cache,changing/f", {"If-None-Match": hdr(first)["etag"]}, fetch=2).status == 200
    assert get("/c/no-cache,changing/f", {"If-None-Match": hdr(second)["etag"]}, fetch=2).status == 304


def test_an_unsafe_requests_reply_names_two_more_urls_and_vary_star_is_sent():
    h = hdr(get("/c/invalidated-location/u", method="POST"))
    assert (h["location"], h["content-location"]) == ("/c/invalidated-location/u-location",
                                                      "/c/invalidated-location/u-content-location")
    assert "location" not in hdr(get("/c/invalidated/u", method="POST"))
    assert get("/c/invalidated-location/u-location").status == 200
    assert hdr(get("/c/vary=*/v"))["vary"] == "*"


# --- the request sequences (pure) -----------------------------------------------------------------

def drive(mix: ConformanceMix, n: int, gap_s: float = 0.25) -> list:
    """n conformance requests, one every gap_s, each reply arriving at once."""
    plans = []
    for i in range(n):
        plan = mix.next(i * gap_s)
        plans.append(plan)
        mix.completed(plan)
    return plans


def sequences(plans: list) -> dict:
    out: dict = {}
    for p in plans:
        out.setdefault(p.sequence.key, []).append(p)
    return out


def test_every_case_and_scenario_is_planned_and_seeded_runs_are_identical():
    plans = drive(ConformanceMix("w", random.Random(3)), 6000)
    seen = {(s[0].sequence.case, s[0].sequence.scenario) for s in sequences(plans).values()}
    assert {case for case, _ in seen} == set(cf.CASES)
    assert {scenario for _, scenario in seen} == set(SCENARIOS)
    again = drive(ConformanceMix("w", random.Random(3)), 6000)
    assert [(p.method, p.path, p.headers) for p in plans] == [(p.method, p.path, p.headers) for p in again]
    other = drive(ConformanceMix("w", random.Random(4)), 200)
    assert [p.path for p in plans[:200]] != [p.path for p in other]


def test_the_first_round_covers_every_case_before_any_repeats():
    plans = drive(ConformanceMix("w", random.Random(1)), 1000)
    firsts = [s[0].sequence for s in sorted(sequences(plans).values(), key=lambda s: plans.index(s[0]))]
    assert {s.case for s in firsts[:len(cf.CASES)]} == set(cf.CASES)
    assert {s.scenario for s in firsts[:len(cf.CASES)]} == {"repeat"}


def steps_of(plans: list, case: str, scenario: str) -> list:
    return next(s for s in sequences(plans).values()
                if s[0].sequence.case == case and s[0].sequence.scenario == scenario)


def test_the_sequences_give_each_rule_its_chance():
    plans = drive(ConformanceMix("w", random.Random(2)), 8000)
    paths = {p.path for p in plans}
    assert all(p.startswith("/c/") for p in paths)
    repeat = steps_of(plans, "max-age=2", "repeat")
    assert len({p.path for p in repeat}) == 1 and [p.method for p in repeat] == ["GET"] * len(repeat)
    times = [p.at for p in repeat]
    assert times[-1] - times[0] > 2  # past max-age=2: the copy goes stale within the sequence
    auth = steps_of(plans, "max-age=3600", "auth")
    assert "Authorization" in auth[0].headers and "Authorization" not in auth[1].headers
    unsafe = steps_of(plans, "max-age=3600", "invalidate")
    assert [p.method for p in unsafe][:2] == ["GET", "GET"] and unsafe[-1].method == "GET"
    assert {p.method for p in unsafe[2:-1]} <= {"POST", "PUT", "DELETE"} and len(unsafe) == 4
    unsafe_methods = {p.sequence.steps[2].method for p in plans if p.sequence.scenario == "invalidate"}
    assert unsafe_methods == {"POST", "PUT", "DELETE"}
    reload = [p.headers for p in steps_of(plans, "max-age=3600", "reload")]
    assert {"Cache-Control": "no-cache"} in reload and {"Pragma": "no-cache"} in reload
    assert {"Cache-Control": "max-age=0"} in reload
    assert steps_of(plans, "max-age=3600", "request-no-store")[0].headers == {"Cache-Control": "no-store"}
    cond = steps_of(plans, "max-age=3600", "conditional")
    tag = hdr(get(cond[0].path))["etag"]
    assert {"If-None-Match": tag} in [p.headers for p in cond]
    assert any("If-Modified-Since" in p.headers for p in cond)
    assert any(p.headers.get("If-None-Match", tag) != tag for p in cond)  # a tag that must not match
    ranges = [p.headers.get("Range") for p in steps_of(plans, "max-age=3600", "range")]
    assert "bytes=0-99" in ranges and None in ranges
    assert [p.method for p in steps_of(plans, "max-age=3600", "head")][0] == "HEAD"
    vary = [p.headers for p in steps_of(plans, "vary=accept-language,accept-encoding", "vary")]
    assert len({tuple(sorted(h.items())) for h in vary}) >= 3
    assert all(set(h) <= {"Accept-Language", "Accept-Encoding"} for h in vary)


def test_conformance_sequences_send_each_dependent_request_without_a_pause():
    plans = drive(ConformanceMix("w", random.Random(2)), 20000)
    unsafe = steps_of(plans, "invalidated", "unsafe-then-get")
    assert [p.method for p in unsafe][:2] == ["GET", "GET"] and [p.method for p in unsafe][3:] == ["GET", "GET"]
    assert unsafe[3].sequence.steps[3].delay_s == 0  # the GET the moment the unsafe reply is in
    methods = {p.sequence.steps[2].method for p in plans if p.sequence.scenario == "unsafe-then-get"}
    assert methods == {"POST", "PUT", "DELETE", "M-SEARCH", "PROPPATCH"}
    revalidate = steps_of(plans, "max-age=2,update", "revalidate")[0].sequence.steps
    assert revalidate[1].delay_s > 1 and revalidate[2].delay_s == 0  # stale, revalidated, reused at once
    assert steps_of(plans, "no-cache,update", "revalidate")[0].sequence.steps[1].delay_s == 0
    reuse = steps_of(plans, "expires-double-space", "reuse-now")[0].sequence.steps
    assert [s.delay_s for s in reuse[:3]] == [0, 0, 0]
    both = steps_of(plans, "validators", "precedence")
    tag = hdr(get(both[0].path))["etag"]
    assert both[1].headers["If-None-Match"] != tag and "If-Modified-Since" in both[1].headers
    assert get(both[1].path, both[1].headers).status == 200  # If-None-Match decides (RFC 9110 13.2.2)
    assert both[2].headers["If-None-Match"] == tag and get(both[2].path, both[2].headers).status == 304
    vary = steps_of(plans, "etag,vary", "conditional-vary")
    assert get(vary[1].path, vary[1].headers).status == 304 and get(vary[2].path, vary[2].headers).status == 200
    old = {p.sequence.scenario for p in plans if p.sequence.case == "max-age=3600"}
    assert not old & {"reuse-now", "revalidate", "precedence", "conditional-vary", "unsafe-then-get"}


def test_conditional_and_range_requests_go_to_every_case_whatever_its_age_or_status():
    """The Collector hands each proxy the client's reply to the same request, so a copy that goes stale
    mid-sequence or a status Squid does not cache no longer keeps these scenarios away (the dummy differs on
    none: tests/python/real_proxies/test_dummy_gets_the_clients_fetch.py)."""
    for name in ("max-age=2", "must-revalidate", "age=7200,max-age=3600", "expires-past", "s-maxage=2",
                 "max-age=3600", "no-store", "heuristic"):
        assert {"conditional", "range"} <= set(scenarios_for(cf.CASES[name])), name
    for name in ("status=404", "status=201,stale", "status=503,heuristic", "status=599"):
        assert "conditional" in scenarios_for(cf.CASES[name]), name


def test_a_step_waits_for_its_predecessors_reply_and_its_delay():
    mix = ConformanceMix("w", random.Random(1))
    first = mix.next(0.0)
    held = [mix.next(10.0 + i) for i in range(5)]  # the first's reply has not come: new sequences start
    assert all(p.sequence is not first.sequence for p in held)
    mix.completed(first)
    assert mix.next(10.5).sequence is first.sequence  # its delay has passed since: it goes next


def test_the_planner_sends_the_conformance_share_and_leaves_the_rest_of_the_mix_alone():
    def plans(share: float) -> list:
        history = History()
        mix = ConformanceMix("w", random.Random(9)) if share else None
        planner = Planner(cm.Model(), Mix(conformance=share), history, "w", random.Random(5), mix,
                          random.Random(6))
        out = []
        for i in range(4000):
            plan = planner.next(RobotState(), i * 0.05)
            out.append(plan)
            if plan.category == "conformance":
                mix.completed(plan)
            elif plan.category == "new" and plan.method == "GET" and plan.spec.cacheable:
                history.add(plan.path)
        return out

    mixed, plain = plans(0.3), plans(0.0)
    counts = Counter(p.category for p in mixed)
    assert abs(counts["conformance"] / len(mixed) - 0.3) < 0.03
    assert all(p.path.startswith("/c/") == (p.category == "conformance") for p in mixed)
    assert not any(p.category == "conformance" for p in plain)
    with pytest.raises(ValueError):
        Mix(conformance=1.5).validate()


# --- the docs -------------------------------------------------------------------------------------


def test_the_workload_docs_list_every_case_and_scenario():
    docs = (ROOT / "docs/workloads.md").read_text()
    for name in cf.CASES:
        assert f"| `{name}` |" in docs, name
    for scenario in SCENARIOS:
        assert f"| `{scenario}` |" in docs, scenario
