"""`./spe repro` case extraction from a hand-made run directory: the request sequence for one URL up to
the chosen record, its timing, headers (credentials replaced by fixed stand-ins), the origin's reply
in force for each request, the proxy's kind and options, and the errors a user can run into.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reprosupport import ORIGIN_1, ORIGIN_2, T0, URL, leg, make_run, record

from spe_tools.repro.case import (
    DUMMY_AUTHORIZATION,
    DUMMY_COOKIE,
    CaseError,
    date_shift,
    extract_case,
    load_case,
    moved_date,
    replayed_request_headers,
)
from spe_tools.repro.case_dir import write_case
from spe_tools.rundir.layout import RunDir
from spe_tools.workload.http11 import format_date, parse_date

AGE = {"rule": "age", "section": "4", "reason": "Age 0 s, but the copy was 2.6 s old"}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", [
        record(1, T0, headers={"accept-encoding": "identity"}, origin=ORIGIN_1, nbytes=7),
        record(2, T0 + 0.5, url="http://localhost:40001/other", origin=ORIGIN_1),  # another URL: not in the case
        record(3, T0 + 1.0, headers={"authorization": "(present)", "cookie": "(present)"}),  # a Collector hit
        record(4, T0 + 2.0, method="POST", origin={"cache-control": "no-store", "date": ORIGIN_1["date"]},
               status=201, nbytes=0),
        record(5, T0 + 3.0, origin=ORIGIN_2, nbytes=9, headers={"if-none-match": '"v1"'}),
        record(6, T0 + 5.5, headers={"cache-control": "no-cache"},
               legs=[leg("nginx", [AGE], [{"rule": "heuristic", "section": "4.2.2", "reason": "r"}]), leg("sq")]),
        record(7, T0 + 9.0, origin=ORIGIN_2),  # after the chosen request: not in the case
    ])


def test_the_sequence_is_every_request_for_the_url_up_to_the_chosen_one_with_its_offset(run):
    case = extract_case(run, "nginx", 6)
    assert [s.record_id for s in case.steps] == [1, 3, 4, 5, 6]
    assert [s.offset_s for s in case.steps] == pytest.approx([0.0, 1.0, 2.0, 3.0, 5.5])
    assert [s.method for s in case.steps] == ["GET", "GET", "POST", "GET", "GET"]
    assert case.path == "/obj?cc=max-age%3D600"
    assert case.url == URL
    assert case.recorded_start == pytest.approx(T0)


def test_request_headers_are_kept_and_credentials_replaced_by_fixed_stand_ins(run):
    steps = extract_case(run, "nginx", 6).steps
    assert steps[0].headers == {"accept-encoding": "identity"}
    assert steps[1].headers == {"authorization": DUMMY_AUTHORIZATION, "cookie": DUMMY_COOKIE}
    assert "(present)" not in json.dumps([s.headers for s in steps])
    assert steps[4].headers == {"cache-control": "no-cache"}


def test_each_request_gets_the_origin_reply_in_force_the_latest_fresh_fetch_before_it(run):
    steps = extract_case(run, "nginx", 6).steps
    first, hit, post, second, last = (s.reply for s in steps)
    assert (first.status, first.headers, first.body_bytes, first.fetched_offset_s) == (200, ORIGIN_1, 7, 0.0)
    assert [s.fresh for s in steps] == [True, False, True, True, False]
    assert hit == first  # the Collector answered from its store: the reply fetched for request 1
    assert (post.status, post.body_bytes) == (201, 0)
    assert (second.headers, second.body_bytes, second.fetched_offset_s) == (ORIGIN_2, 9, pytest.approx(3.0))
    assert last == second  # a POST's reply is not what a later GET is answered with


def test_the_case_names_the_proxy_kind_options_and_the_expected_violation(run):
    case = extract_case(run, "nginx", 6)
    assert case.proxy.name == "nginx" and case.proxy.kind == "nginx"
    assert case.proxy.options == {"cache_mb": 16}
    assert [(v.rule, v.section, v.reason) for v in case.expected] == [("age", "4", AGE["reason"])]
    assert case.collector == {"uncacheable_ttl_s": 60, "replay_timing": True, "cache_mb": 32}
    assert case.multiplier == {"mode": "sequential", "legs": "parallel"}


def test_without_lab_toml_the_kind_and_the_options_lab_json_names_come_from_lab_json(tmp_path):
    legs = [leg("nginx", [AGE]), leg("ats", [AGE])]
    run = make_run(tmp_path / "run", [record(1, T0, origin=ORIGIN_1, legs=legs)], lab_toml=False)
    case = extract_case(run, "nginx", 1)
    assert (case.proxy.kind, case.proxy.options) == ("nginx", {})
    assert extract_case(run, "ats", 1).proxy.options == {"prefetch": True}


def test_the_case_is_written_with_a_readme_and_reads_back_equal(run, tmp_path):
    case = extract_case(run, "nginx", 6)
    out = write_case(case, tmp_path / "case")
    assert out == tmp_path / "case"
    assert load_case(out) == case
    readme = (out / "README.txt").read_text()
    for text in ("age", "RFC 9111 section 4", AGE["reason"], "./spe repro", "nginx"):
        assert text in readme


def test_the_default_directory_is_inside_the_run(run):
    assert write_case(extract_case(run, "nginx", 6)) == RunDir(run).repro(6, "nginx")
    assert (RunDir(run).repro(6, "nginx") / "case.json").exists()


@pytest.mark.parametrize("args, message", [
    (("missing-run", "nginx", 6), "no run directory"),
    ((None, "nginx", 99), "no record 99"),
    ((None, "varnish", 6), "no proxy 'varnish' in request 6 (proxies: nginx, sq)"),
    ((None, "sq", 6), "proxy 'sq' has no violation on request 6"),
    ((None, "nginx", 5), "proxy 'nginx' has no violation on request 5; it has violations on request 6 (age)"),
])
def test_errors_say_what_is_wrong(run, args, message):
    where = run.parent / args[0] if args[0] else run
    with pytest.raises(CaseError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        extract_case(where, args[1], args[2])


def test_a_request_with_only_advisories_says_so(run):
    records = [json.loads(line) for line in RunDir(run).multiplier_log.read_text().splitlines()[:-1]]
    records[5]["proxies"][0]["cache"]["violations"] = []
    RunDir(run).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(CaseError, match=r"no violation on request 6 \(advisories: heuristic\)"):
        extract_case(run, "nginx", 6)


def test_a_log_written_before_the_judge_is_refused(tmp_path):
    old = record(1, T0, origin=ORIGIN_1)
    del old["collector"]["cache"], old["proxies"][0]["cache"]
    run = make_run(tmp_path / "run", [old])
    with pytest.raises(CaseError, match="no cache verdicts"):
        extract_case(run, "nginx", 1)


def test_a_rule_of_another_rfc_is_cited_with_its_rfc(tmp_path):
    head_body = {"rule": "head-body", "section": "9110 9.3.2", "reason": "a reply to HEAD with a body"}
    run = make_run(tmp_path / "run", [record(1, T0, method="HEAD", origin=ORIGIN_1, legs=[leg("nginx", [head_body])])])
    readme = (write_case(extract_case(run, "nginx", 1)) / "README.txt").read_text()
    assert "head-body (RFC 9110 section 9.3.2)" in readme


def test_a_request_date_that_echoes_a_last_modified_moves_with_the_reply_the_stand_in_sends(tmp_path):
    """Squid answers If-Modified-Since from its copy: the date the client echoes must move as the stand-in
    origin moves that reply's Last-Modified, or a 304 in the run becomes a 200 in the replay."""
    modified = ORIGIN_2["last-modified"]
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_2, nbytes=7),
        record(2, T0 + 1.0, headers={"if-modified-since": modified, "if-range": '"v1"'},
               legs=[leg("nginx", [AGE])]),
    ])
    case = extract_case(run, "nginx", 2)
    started = T0 + 86_400.25
    shift = date_shift(started, case.recorded_start)
    sent = replayed_request_headers(case, case.steps[1], started)
    assert sent["if-modified-since"] == moved_date(modified, shift) != modified
    assert sent["if-range"] == '"v1"'  # an entity tag is no date
    assert moved_date(modified, shift) == format_date(int(parse_date(modified) + shift))


def test_the_origins_other_field_names_and_interim_replies_go_into_the_case(tmp_path):
    """The record keeps every field name of the origin's reply (values only for the judged ones) and its
    interim responses: the case keeps the names a stand-in origin sends with stand-in values (a stored
    Set-Cookie dropped by a cache must be dropped again), not the hop's, the Collector's or the framing."""
    names = "date cache-control etag set-cookie content-type content-length via x-cache x-spe-fetch x-custom"
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=7, origin_fields=names, interim=(100, 103),
               origin_connection="x-hop-field"),
        record(2, T0 + 1.0, origin={"etag": '"v1"'}, status=304, origin_fields="date etag x-later",
               headers={"if-none-match": '"v1"'}),
        record(3, T0 + 2.0, legs=[leg("nginx", [AGE])]),
    ])
    first, revalidated, last = (s.reply for s in extract_case(run, "nginx", 3).steps)
    assert first.other_fields == ("set-cookie", "x-custom") and first.interim == (103,)
    assert first.hop_fields == ("x-hop-field",)  # Squid removed it; a proxy's parent stamp named it
    assert revalidated.other_fields == ("set-cookie", "x-custom", "x-later") and last == revalidated
    assert load_case(write_case(extract_case(run, "nginx", 3), tmp_path / "case")).steps[0].reply == first


def test_a_copy_the_collector_revalidated_for_a_plain_get_carries_the_fields_the_origins_304_updated(tmp_path):
    """The client asked without validators; the Collector's copy was stale, it revalidated it and the origin's 304
    changed Cache-Control: the record keeps the merged fields (a reused copy with `origin`). The stand-in must
    answer from then on with them (a body of the same length), or a proxy that keeps its stored header after its
    parent's 304 (nginx) is never put to it in the replay."""
    updated = {**ORIGIN_1, "cache-control": "max-age=3600", "date": "Tue, 24 Nov 2026 02:31:41 GMT"}
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=7, origin_fields="date cache-control etag x-version"),
        record(2, T0 + 4.0, origin=updated, nbytes=7, origin_fields="date cache-control etag x-version",
               revalidated=True, legs=[leg("nginx", [AGE])]),
    ])
    first, revalidated = (s.reply for s in extract_case(run, "nginx", 2).steps)
    assert revalidated.headers == updated and revalidated.body_bytes == first.body_bytes == 7
    assert revalidated.other_fields == ("x-version",)
    assert [s.fresh for s in extract_case(run, "nginx", 2).steps] == [True, True]


def test_the_length_a_validating_304_carried_is_kept_with_the_reply_it_validated(tmp_path):
    """Squid under test merges a 304's Content-Length: 0 into its copy (`framing`): the Collector's stamp of that
    304 says it had one (validated_length), and the case keeps it for the stand-in's 304s, only from then on."""
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=7),
        record(2, T0 + 3.0, origin=ORIGIN_1, nbytes=7, revalidated=True, validated_length=0),
        record(3, T0 + 4.0, nbytes=7, legs=[leg("sq", [AGE])]),
    ])
    first, revalidated, reused = (s.reply for s in extract_case(run, "sq", 3).steps)
    assert first.not_modified_length is None
    assert revalidated.not_modified_length == 0 and reused == revalidated
    assert load_case(write_case(extract_case(run, "sq", 3), tmp_path / "case")).steps[1].reply == revalidated


@pytest.mark.parametrize("value", ["Thu, 18 Aug 2050 2:01:18 GMT", "Thu, 18  Aug  2050 02:01:18 GMT", "0",
                                   "Thursday, 18-Aug-50 02:01:18 GMT", "Thu, 18 Aug 2050 02:01:18 gMT", '"v1"'])
def test_only_a_valid_imf_fixdate_is_moved_the_others_stay_byte_for_byte(value):
    """An Expires a cache must read as expired (RFC 9111 5.3) stays so in the replay: moving it would
    rewrite it valid, and the proxy's stale reuse would not happen again."""
    assert moved_date(value, 3600.0) == value
    assert moved_date("Thu, 18 Aug 2050 02:01:18 GMT", 3600.0) == "Thu, 18 Aug 2050 03:01:18 GMT"


def test_a_last_modified_two_fetches_carry_moves_to_one_date_whatever_their_sub_second_phase(tmp_path):
    """Two fetches of one resource read the origin's clock at other sub-second phases (at .95 and .05: Dates 2 s
    apart, fetches 1.1 s apart), and a loaded machine starts the replay 0.3 s off the run's phase: the
    Last-Modified both carry, and the If-Modified-Since that echoes it, must still move to the same second, or
    nginx (which compares them exactly) answers 200 where the run had a 304 (a CI replay did)."""
    modified = "Thu, 01 Jan 1998 00:00:00 GMT"

    def origin(at: float) -> dict:
        return {"cache-control": "max-age=1", "date": format_date(int(at)), "last-modified": modified, "etag": '"m"'}

    run = make_run(tmp_path / "run", [
        record(1, T0 + 0.7, origin=origin(T0 + 0.7), nbytes=7),
        record(2, T0 + 1.8, origin=origin(T0 + 1.8), nbytes=7),
        record(3, T0 + 3.0, headers={"if-modified-since": modified}, legs=[leg("nginx", [AGE])]),
    ])
    case = extract_case(run, "nginx", 3)
    started = case.recorded_start + 86_400.3
    first, second = case.steps[0].reply, case.steps[1].reply
    moved = {moved_date(modified, date_shift(started, case.recorded_start)) for _ in (first, second)}
    assert moved == {replayed_request_headers(case, case.steps[2], started)["if-modified-since"]}
    assert moved == {format_date(int(parse_date(modified) + 86_400))}
