"""`./spe export RUN --har OUT.har`: a hand-made run directory (exportsupport.py) as a HAR: one entry per record in
time order, the Collector's reply (or with --proxy that proxy's leg) made of what the record keeps and, where the
Multiplier captured a mismatch, of the capture; --request's sequence; secrets never copied; every file valid HAR 1.2;
the errors a user can cause are one message and exit 2. The file in Chromium's own HAR importer:
browser/test_export_har_devtools.py."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import har_schema
import pytest
from exportsupport import BINARY, DIGEST, OTHER, SECRET, SERVED, make_export_run
from parts import require
from reprosupport import ORIGIN_1, ORIGIN_2, T0, URL, leg, make_run, record

from spe_tools.export.cli import main
from spe_tools.rundir.layout import RunDir
from spe_tools.workload.har.archive import parse_time
from spe_tools.workload.har.read import read_har


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return make_export_run(tmp_path / "run")


def export(run: Path, *args: str) -> dict:
    """The log of the HAR `./spe export RUN --har X ARGS` writes (exit 0), checked against HAR 1.2's schema."""
    out = run.parent / f"out-{len(list(run.parent.glob('out-*')))}.har"
    assert main([str(run), "--har", str(out), *args]) == 0
    doc = json.loads(out.read_text())
    require(har_schema.missing(), "the HAR 1.2 JSON Schema (npm har-schema)")
    assert har_schema.problems(doc) == []
    assert read_har(out)  # SPE's own reader takes it (./spe origin --har, ./spe replay)
    return doc["log"]


def headers(message: dict) -> dict[str, str]:
    return {h["name"]: h["value"] for h in message["headers"]}


def test_one_entry_per_record_with_a_url_in_time_order(run, capsys):
    log = export(run)
    assert [e["_spe"]["id"] for e in log["entries"]] == [2, 3, 4, 5, 6]  # the log's order is 2, 1, 3...
    assert [parse_time(e["startedDateTime"]) for e in log["entries"]] == pytest.approx(
        [T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5], abs=1e-3)
    assert [e["request"]["method"] for e in log["entries"]] == ["GET", "GET", "GET", "POST", "GET"]
    assert [e["request"]["url"] for e in log["entries"]] == [URL, URL, OTHER, URL, OTHER]
    assert [p["id"] for p in log["pages"]] == ["run"] and {e["pageref"] for e in log["entries"]} == {"run"}
    assert "1 record(s) left out: no http(s) URL (a CONNECT tunnel" in log["comment"]
    out = capsys.readouterr().out
    assert "5 entries" in out and "2 with the reply header and first body bytes of a mismatch capture" in out


def test_the_request_has_the_fields_the_record_keeps_credentials_only_as_present(run):
    request = export(run)["entries"][0]["request"]
    assert (request["url"], request["httpVersion"]) == (URL, "HTTP/1.1")
    assert headers(request) == {"authorization": "(present)", "accept": "text/html"}
    assert "authorization: only that the request had one" in request["comment"]
    assert export(run)["entries"][3]["request"]["bodySize"] == -1  # a POST's body: not kept, unknown


def test_a_reply_without_a_capture_has_the_judged_values_the_other_names_and_its_size(run):
    hit_response = export(run)["entries"][1]["response"]
    assert hit_response["headers"] == [] and "none of this one's" in hit_response["comment"]
    run_without_captures = run
    for capture in RunDir(run).captures.iterdir():
        capture.unlink()
    response = export(run_without_captures)["entries"][0]["response"]
    assert response["status"] == 200
    assert headers(response) == {"date": ORIGIN_1["date"], "cache-control": "max-age=600", "etag": '"v1"',
                                 "set-cookie": "", "content-type": ""}
    assert "values not kept (written empty): set-cookie, content-type" in response["comment"]
    assert response["content"] == {"size": 7, "mimeType": "",
                                   "comment": "the body is not kept: the record has its size (content.size) and "
                                              "MD5 (_spe.md5)"}
    assert response["headersSize"] == 300


def test_timings_come_from_the_record_minus_one_where_unknown(run):
    fresh, hit, *_ = export(run)["entries"]
    assert fresh["timings"] == {"connect": 1.5, "send": 0, "wait": 2.5, "receive": 1.0} and fresh["time"] == 5.0
    assert hit["timings"] == {"connect": -1, "send": 0, "wait": 0.8, "receive": -1}  # reused, no total_us
    assert hit["time"] == 0.8
    assert fresh["connection"] == "127.0.0.1:5000"


def test_spe_has_the_id_each_proxys_result_and_the_md5(run):
    fresh, *_, failed = export(run)["entries"]
    assert fresh["_spe"] == {"id": 2, "client_status": 200, "results": {"nginx": "OK", "sq": "HEADER_MISMATCH"},
                             "md5": "m1", "status": 200, "reused": False}
    assert failed["response"]["status"] == 0
    assert "no reply from the Collector (no reply in 30 s); the client got 502" in failed["response"]["comment"]
    assert failed["_spe"]["note"] == "Collector failed"


def test_a_captured_reply_has_its_whole_header_and_first_body_bytes(run):
    fresh, _, binary, *_ = export(run)["entries"]
    response = fresh["response"]
    assert (response["status"], response["statusText"]) == (200, "OK")
    assert headers(response) == {"Cache-Control": "max-age=600", "ETag": '"v1"', "Content-Type": "text/plain",
                                 "Set-Cookie": DIGEST, "Content-Length": "7"}
    assert response["content"]["text"] == "abcdefg" and response["content"]["mimeType"] == "text/plain"
    assert "the whole body (7 bytes) from the capture" in response["content"]["comment"]
    assert "captures/00000002-sq.txt" in response["comment"]
    content = binary["response"]["content"]
    assert (content["encoding"], base64.b64decode(content["text"]), content["size"]) == ("base64", BINARY, 256)


def test_proxy_gives_that_proxys_replies_from_its_leg(run):
    log = export(run, "--proxy", "nginx")
    fresh, hit, binary, post = log["entries"]
    assert [e["_spe"]["id"] for e in log["entries"]] == [2, 3, 4, 5]
    assert "1 record(s) left out: no leg of nginx (no fan-out)" in log["comment"]
    # compared and not mismatched: the Collector's judged values; the times are the leg's
    assert headers(fresh["response"]) == {"cache-control": "max-age=600", "etag": '"v1"'}
    assert fresh["timings"] == {"connect": -1, "send": 0, "wait": 0.9, "receive": 0.1}
    assert fresh["_spe"]["result"] == "OK" and fresh["_spe"]["reference"] == {"status": 200, "md5": "m1"}
    # what the judge saw served, and its violation
    assert headers(hit["response"]) == {"date": SERVED["date (as served)"]}
    assert "absent as served: age" in hit["response"]["comment"]
    assert [v["rule"] for v in hit["_spe"]["violations"]] == ["age"] and hit["_spe"]["reused"] is True
    assert binary["_spe"]["result"] == "BODY_MISMATCH"
    # a body that says what a capture's next heading says is read by its stated length all the same
    assert binary["response"]["content"]["text"] == ("## Proxy reply header\n" + BINARY[:10].decode())
    assert "the first 32 of 256 bytes" in binary["response"]["content"]["comment"]
    assert post["response"]["status"] == 0 and "an unsafe request the Multiplier withheld" in \
        post["response"]["comment"]


def test_a_mismatched_field_is_named_without_a_value_and_a_captured_secret_is_never_copied(run):
    fresh = export(run, "--proxy", "sq")["entries"][0]
    assert headers(fresh["response"]) == {"Cache-Control": "max-age=600", "ETag": '"v0"', "Set-Cookie": "(present)",
                                          "Age": "1"}
    assert "written as (present)" in fresh["response"]["comment"]
    assert fresh["response"]["content"]["text"] == "abcd" and fresh["response"]["content"]["size"] == 7
    for capture in RunDir(run).captures.iterdir():
        capture.unlink()
    fresh = export(run, "--proxy", "sq")["entries"][0]
    assert headers(fresh["response"]) == {"cache-control": "max-age=600", "etag": ""}
    assert "differ from the Collector's, values not kept (written empty): etag" in fresh["response"]["comment"]
    written = "".join(p.read_text() for p in run.parent.glob("out-*.har"))
    assert SECRET not in written and "session=" not in written


def test_request_gives_the_sequence_for_its_url_up_to_it(run):
    log = export(run, "--request", "3")
    assert [e["_spe"]["id"] for e in log["entries"]] == [2, 3]  # record 4 is another URL, 5 came later
    assert "request 3 and the requests for its URL before it" in log["pages"][0]["title"]
    proxy_log = export(run, "--request", "3", "--proxy", "nginx")
    assert [e["_spe"]["result"] for e in proxy_log["entries"]] == ["OK", "OK"]
    assert proxy_log["entries"][-1]["_spe"]["violations"][0]["rule"] == "age"
    assert [e["_spe"]["id"] for e in export(run, "--request", "6")["entries"]] == [4, 6]


@pytest.mark.parametrize("args, message", [
    (["--proxy", "varnish"], "no proxy 'varnish' in {run} (proxies: nginx, sq, ats)"),
    (["--request", "99"], "no record 99 in {run}/multiplier.jsonl (6 records)"),
    (["--request", "1"], "record 1 has no http(s) URL (a CONNECT tunnel, an unreadable request): no HAR entry "
                         "to make"),
    (["--request", "6", "--proxy", "nginx"], "proxy 'nginx' has no leg in request 6 (legs: none: no fan-out)"),
])
def test_what_the_run_does_not_have_is_one_message_and_exit_2(run, capsys, args, message):
    assert main([str(run), "--har", str(run.parent / "x.har"), *args]) == 2
    assert capsys.readouterr().err == f"spe export: error: {message.format(run=run)}\n"
    assert not (run.parent / "x.har").exists()


def test_no_run_directory_and_an_unwritable_file_are_one_message_and_exit_2(run, tmp_path, capsys):
    assert main([str(tmp_path / "nothing"), "--har", str(tmp_path / "x.har")]) == 2
    assert f"spe export: error: no run directory with a multiplier.jsonl at {tmp_path / 'nothing'}" in \
        capsys.readouterr().err
    assert main([str(run), "--har", str(tmp_path / "no-such-dir" / "x.har")]) == 2
    assert f"cannot write {tmp_path / 'no-such-dir' / 'x.har'}: No such file or directory" in capsys.readouterr().err


def test_usage_errors_exit_2(run, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(run)])
    assert exit_.value.code == 2 and "--har" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([str(run), "--har", "x.har", "--request", "seven"])
    assert exit_.value.code == 2


def test_the_log_file_itself_works_and_the_har_is_private(run):
    out = run.parent / "log.har"
    assert main([str(RunDir(run).multiplier_log), "--har", str(out)]) == 0
    assert len(json.loads(out.read_text())["log"]["entries"]) == 5
    assert out.stat().st_mode & 0o077 == 0  # as private as the run it comes from


def test_a_proxys_reply_to_a_304_compares_only_the_fields_a_304_carries(tmp_path):
    """Both replies 304: the Multiplier compares only RFC 9110 15.4.5's fields, not Last-Modified."""
    rec = record(1, T0, origin=ORIGIN_2, status=304, legs=[{**leg("nginx"), "status": 304}])
    run = make_run(tmp_path / "run", [rec])
    entry = export(run, "--proxy", "nginx")["entries"][0]
    assert set(headers(entry["response"])) == {"cache-control", "etag"}


def test_keep_secrets_writes_what_a_capture_holds_as_received_and_the_file_stays_private(run):
    """--keep-secrets: a value the capture holds as received (a run with --capture-secrets) is written as is, for
    a bug report whose reader needs the cookie; the records' digests stay digests (they are all the run has)."""
    fresh = export(run, "--proxy", "sq", "--keep-secrets")["entries"][0]
    assert SECRET in headers(fresh["response"])["Set-Cookie"]
    assert "as received (--capture-secrets, --keep-secrets)" in fresh["response"]["comment"]
    request = export(run, "--keep-secrets")["entries"][0]["request"]
    assert headers(request)["authorization"] == "(present)"
    newest = max(run.parent.glob("out-*.har"), key=lambda p: p.stat().st_mtime_ns)
    assert newest.stat().st_mode & 0o077 == 0
