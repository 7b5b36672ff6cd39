"""A repro case's HAR (DIR/case.har, spe_tools/repro/case_har.py): written beside case.json, valid HAR 1.2, each
step's request with its recorded fields and the origin's reply in force for it (judged fields, other names with
the stand-in values, body size, interim responses in _spe), and it round-trips: the HAR origin serving it answers
the case's requests, as the replay plans them from it, as the case's stand-in origin does. Over real sockets:
loopback/test_repro_origin.py."""

from __future__ import annotations

import json
from pathlib import Path

import har_schema
import pytest
from parts import require
from reprosupport import ORIGIN_1, ORIGIN_2, T0, URL, leg, make_run, record

from spe_tools.repro.case import DUMMY_AUTHORIZATION, extract_case, load_case
from spe_tools.repro.case_dir import write_case
from spe_tools.repro.case_har import CASE_HAR
from spe_tools.repro.stand_in_origin import StandIn
from spe_tools.workload.har.archive import parse_time
from spe_tools.workload.har.bodies import BodyStore
from spe_tools.workload.har.read import read_har_file
from spe_tools.workload.har.replay import plan_har
from spe_tools.workload.har.reply import NOT_MODIFIED_FIELDS
from spe_tools.workload.har_origin import HarOrigin, load_index
from spe_tools.workload.http11 import Message
from spe_tools.workload.origin import Reply

AGE = {"rule": "age", "section": "4", "reason": "r"}
LAB = "127.0.0.1:9"  # where the replay would find the HAR origin
COMPARED = ("etag", "cache-control", "vary", "age", "set-cookie", "x-custom")  # what both origins send as recorded


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    run = make_run(tmp_path / "run", [
        record(1, T0, origin={**ORIGIN_1, "vary": "Accept-Language"}, nbytes=700,
               origin_fields="date cache-control etag vary set-cookie x-custom content-length", interim=(103,)),
        record(2, T0 + 1.0, headers={"authorization": "(present)"}),  # a Collector hit: the reply fetched for 1
        record(3, T0 + 2.0, method="POST", origin={"cache-control": "no-store"}, status=201, nbytes=0),
        record(4, T0 + 3.0, headers={"if-none-match": '"v1"'}, origin={"etag": '"v1"'}, status=304),
        record(5, T0 + 4.0, origin=ORIGIN_2, nbytes=30),
        record(6, T0 + 5.5, legs=[leg("nginx", [AGE])]),
    ])
    return write_case(extract_case(run, "nginx", 6), tmp_path / "case")


def test_the_case_har_is_written_beside_case_json_and_is_valid_har(case_dir):
    assert (case_dir / "case.json").exists() and CASE_HAR == "case.har"
    doc = json.loads((case_dir / CASE_HAR).read_text())
    require(har_schema.missing(), "the HAR 1.2 JSON Schema (npm har-schema)")
    assert har_schema.problems(doc) == []
    log = doc["log"]
    assert log["creator"]["name"] == "SPE repro" and "origin's reply in force" in log["comment"]
    assert log["pages"][0]["title"] == "SPE repro case: proxy nginx's age on request 6"
    assert [e["_spe"]["record_id"] for e in log["entries"]] == [1, 2, 3, 4, 5, 6]
    assert [parse_time(e["startedDateTime"]) for e in log["entries"]] == pytest.approx(
        [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5.5], abs=1e-3)
    assert "case.har" in (case_dir / "README.txt").read_text()


def test_each_request_has_its_recorded_fields_and_the_origins_reply_in_force(case_dir):
    first, hit, post, revalidated, second, last = (e for e in read_har_file(case_dir / CASE_HAR).entries)
    assert [(e.request.method, e.request.url) for e in (first, post)] == [("GET", URL), ("POST", URL)]
    assert hit.request.headers == [("authorization", DUMMY_AUTHORIZATION)]  # the case's stand-in, never a secret
    assert revalidated.request.headers == [("if-none-match", '"v1"')]
    assert first.response.status == 200 and first.response.headers == [
        ("Cache-Control", "max-age=600"), ("Date", ORIGIN_1["date"]), ("ETag", '"v1"'), ("Vary", "Accept-Language"),
        ("Set-Cookie", "spe-repro=1; Path=/"), ("X-Custom", "spe-repro")]
    assert (first.response.body, first.response.body_size) == (None, 700)  # the size only: no body is kept
    assert hit.response == first.response and revalidated.response.status == 200  # the reply in force, updated
    assert (post.response.status, post.response.headers) == (201, [("Content-Type", "text/plain"),
                                                                   ("Cache-Control", "no-store")])
    assert dict(second.response.headers)["ETag"] == '"v2"' and last.response == second.response


def test_what_the_case_does_not_keep_is_said_in_comments_and_spe(case_dir):
    entries = json.loads((case_dir / CASE_HAR).read_text())["log"]["entries"]
    first = entries[0]
    assert first["_spe"] == {"record_id": 1, "offset_s": 0.0, "fresh": True, "interim": [103]}
    assert "the record keeps no values of Set-Cookie, X-Custom" in first["response"]["comment"]
    assert "interim responses first (103)" in first["response"]["comment"]
    assert "not kept" in first["response"]["content"]["comment"]
    assert entries[1]["_spe"]["fresh"] is False and "an earlier fetch" in entries[1]["response"]["comment"]
    assert entries[2]["request"]["bodySize"] == -1  # the POST's body: not in the log


def _stand_in_reply(case_dir: Path, offset: float, message: Message) -> Reply:
    """The stand-in origin's reply to `message` at case time `offset`."""
    now = [0.0]
    origin = StandIn(load_case(case_dir), clock=lambda: now[0])
    now[0] = offset
    return origin.handle(message)


def test_the_har_origin_answers_the_cases_requests_as_the_stand_in_origin_does(case_dir, tmp_path):
    """Round trip: the replay's plan of case.har, sent to the HAR origin serving case.har, gets for each request
    the status and fields the case's own stand-in origin sends at that request's time (their dates aside: each
    origin moves them to now its own way)."""
    recording = read_har_file(case_dir / CASE_HAR, bodies="drop")
    planned, refused = plan_har(recording.entries, "case", LAB, 1.0, False)
    assert refused == {} and len(planned) == 6
    har_origin = HarOrigin(load_index([case_dir / CASE_HAR], T0 + 86_400, BodyStore(str(tmp_path))))
    for (offset, send), entry in zip(planned, recording.entries, strict=True):
        fields = {n.lower(): v for n, v in send.headers}
        message = Message(method=send.method, target=send.url.split(LAB, 1)[1], headers=fields, body=b"")
        got = har_origin.handle(message)
        want = _stand_in_reply(case_dir, offset, Message(method=send.method, target="/obj?cc=max-age%3D600",
                                                         headers=fields))
        assert got.status == want.status, (send.method, offset)
        # a 304 the HAR origin makes carries what RFC 9110 15.4.5 asks of one; the stand-in's, every field
        compared = [n for n in COMPARED if got.status != 304 or n in NOT_MODIFIED_FIELDS]
        assert {n.lower(): v for n, v in got.headers if n.lower() in compared} == \
            {n.lower(): v for n, v in want.headers if n.lower() in compared}, offset
        if got.status == 200:
            assert len(got.body) == len(want.body) == entry.response.body_size
    assert har_origin.stats()["not_in_har"] == 0 and har_origin.made_304 == 1  # the If-None-Match that matched
