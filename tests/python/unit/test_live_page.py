"""The live scorecard's data: status.json as the lab writes it, and the page analysis/live.py serves from it (the
report page with every process's state, the last good page kept when a rebuild fails, each rule's latest example,
the run's end said once the lab stops the page, a lab that stopped reporting not shown as "up")."""

from __future__ import annotations

import asyncio
import io
import json
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from test_analysis import measure, proxy, record
from test_report_cache_rules import judged_run

from analysis import live
from analysis.live import LivePage, LiveServer
from analysis.readers import judge_records
from analysis.readers.judge_records import _lines_from_end, load_evidence
from analysis.readers.records import COLLECTOR
from analysis.report import build_report, html_report
from analysis.sections import judge_findings
from spe_tools.lab.definition.labfile import lab_toml
from spe_tools.lab.definition.model import LabFileError, LiveSpec, parse_lab
from spe_tools.rundir.lab_json import LabJson, LiveOfRun
from spe_tools.rundir.layout import CASE_JSON, RunDir
from spe_tools.rundir.status_json import DEAD, UP, ComponentStatus, LabStatus


def write_log(run: Path, requests: int) -> None:
    RunDir(run).multiplier_log.write_text("".join(
        json.dumps(record(i, measure(), [proxy("alpha"), proxy("beta")])) + "\n" for i in range(1, requests + 1)))


def test_the_status_file_is_read_back_and_unreadable_reads_as_none(tmp_path):
    assert LabStatus.read(tmp_path) is None
    status = LabStatus(12.5, 40, [ComponentStatus("alpha", UP), ComponentStatus("beta", DEAD, "killed by SIGKILL")])
    status.write(tmp_path)
    assert LabStatus.read(tmp_path) == status
    assert not list(tmp_path.glob("*.tmp"))
    RunDir(tmp_path).status.write_text('{"elapsed_s": ')  # never half a file in practice; still not fatal
    assert LabStatus.read(tmp_path) is None


def test_lab_json_keeps_old_files_loading_and_writes_live_only_when_there_is_one():
    assert LabJson.from_json({"name": "old"}).live is None
    assert "live" not in LabJson(name="x").to_json()
    live = LiveOfRun(url="http://127.0.0.1:8123/", port=8123, every_s=5.0)
    assert LabJson.from_json(LabJson(name="x", live=live).to_json()).live == live


def test_the_page_shows_every_proxy_and_component_and_survives_a_failed_rebuild(tmp_path, monkeypatch):
    page = LivePage(tmp_path, every_s=1)
    page.rebuild()  # no log yet: the waiting page
    assert "Waiting for the first records" in page.page()
    write_log(tmp_path, 3)
    LabStatus(75, 3, [ComponentStatus("alpha", UP), ComponentStatus("beta", DEAD, "exit 1")]).write(tmp_path)
    page.rebuild()
    html = page.page()
    assert page.error is None and ">alpha<" in html and ">beta<" in html and "3 client requests" in html
    assert "beta dead (exit 1)" in html and "running for 1 min 15 s" in html
    monkeypatch.setattr(live, "build_report", lambda run, **_: 1 / 0)
    page.rebuild()  # the log has not changed: not rebuilt
    assert page.error is None
    write_log(tmp_path, 4)  # the log grew, and this rebuild fails
    page.rebuild()
    html = page.page()
    assert "ZeroDivisionError" in page.error and "The last rebuild failed" in html
    assert ">alpha<" in html  # the last good page


def test_the_live_key_is_off_by_default_and_takes_a_duration():
    one = '[[proxy]]\nname = "d"\nkind = "dummy"\n'
    assert parse_lab(one).live == LiveSpec(enabled=False, every=5.0)
    lab = parse_lab('[live]\nenabled = true\nevery = "2s"\n' + one)
    assert lab.live == LiveSpec(enabled=True, every=2.0) and parse_lab(lab_toml(lab)).live == lab.live
    for every in ('"10ms"', '"soon"'):
        with pytest.raises(LabFileError, match=r"\[live\]\.every"):
            parse_lab(f"[live]\nevery = {every}\n" + one)


def asgi_get(application, path: str) -> tuple[int, bytes]:
    """A GET straight into the ASGI app (no server, no HTTP client library): its status and body."""
    sent: list[dict] = []
    requested, done = False, asyncio.Event()

    async def receive() -> dict:  # the request once, then the client's disconnect once the reply is whole
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": [],
             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1)}
    asyncio.run(application(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_page_and_the_run_s_captures_are_served_only_under_the_secret_path(tmp_path):
    RunDir(tmp_path).captures.mkdir()
    (RunDir(tmp_path).captures / "1-alpha.txt").write_text("both replies")
    application = live.app(LivePage(tmp_path, every_s=1), token="s3cret")
    assert asgi_get(application, "/")[0] == 404
    status, body = asgi_get(application, "/s3cret/")
    assert status == 200 and b"Waiting for the first records" in body
    assert asgi_get(application, "/s3cret/captures/1-alpha.txt") == (200, b"both replies")
    assert asgi_get(application, "/s3cret/repro/1-alpha/README.txt")[0] == 404  # no case yet: not an error


def test_each_rule_s_example_is_its_latest_request_with_its_evidence_and_case(tmp_path, monkeypatch):
    """squid broke `age` on requests 2 and 3: the live page shows 3 (its judged headers, read from the log's end;
    its repro case once written), the final report still 2."""
    run = judged_run(tmp_path)
    reads = []
    monkeypatch.setattr(judge_findings, "load_evidence", lambda *a, **kw: reads.append(kw) or load_evidence(*a, **kw))
    case = RunDir(run).repro(3, "squid")
    case.mkdir(parents=True)
    (case / CASE_JSON).write_text("{}")
    page = LivePage(run, every_s=1)
    page.rebuild()
    html = page.page()
    assert "violations of age, latest on request 3: ./spe repro" in html
    assert re.search(r'<h4 id="cache-squid-age">age \([^)]+\): request 3 GET', html)
    assert "<tr><th>Age</th><td>0</td>" in html  # request 3's evidence, read from the log's end
    assert f'<a href="repro/{case.name}/README.txt">case</a>' in html  # served by the page (live.app)
    assert reads == [{"from_end": True}]
    report = html_report(build_report(run), run)
    assert "violations of age, first on request 2" in report and "latest" not in report


def test_the_log_read_from_its_end_gives_every_line_last_first_whatever_the_block():
    lines = [b"the first", b"", b"{}", b"a much longer line than the block", b"x", b""]
    data = b"\n".join(lines)
    for block in (1, 3, 7, 1 << 20):
        assert list(_lines_from_end(io.BytesIO(data), block)) == lines[::-1]


def test_the_latest_example_s_evidence_is_found_without_reading_the_log_s_head(tmp_path, monkeypatch):
    """What makes the latest examples as cheap as the first: the log read backwards stops at the last reply
    wanted, as the forward read stops at the first."""
    log = tmp_path / "multiplier.jsonl"
    log.write_text("".join(json.dumps({"id": i, "collector": {"cache": {"evidence": {"served": {"Age": str(i)}}}}})
                           + "\n" for i in range(1, 1001)))
    parsed = []
    monkeypatch.setattr(judge_records.json, "loads", lambda line: parsed.append(line) or json.JSONDecoder().decode(
        line.decode()))
    found = load_evidence(log, {(1000, COLLECTOR), (999, COLLECTOR)}, from_end=True)
    assert found == {(i, COLLECTOR): {"served": {"Age": str(i)}} for i in (1000, 999)}
    assert len(parsed) == 2  # the two wanted: the last lines


def test_once_ended_the_page_says_when_and_no_process_shows_up(tmp_path):
    write_log(tmp_path, 3)
    LabStatus(75, 3, [ComponentStatus("alpha", UP), ComponentStatus("beta", DEAD, "killed by SIGKILL")]).write(tmp_path)
    page = LivePage(tmp_path, every_s=1)
    page.rebuild()
    assert 'class="up">alpha up<' in page.page() and 'id="spe-live" data-ended' not in page.page()
    page.end()
    html = page.page()
    assert "Run ended</b> at " + time.strftime("%Y-%m-%d", time.localtime(page.ended)) in html
    assert 'id="spe-live" data-ended="' in html  # the page's script stops fetching itself
    assert 'class="ended">alpha up until the end<' in html and 'class="dead">beta dead (killed by SIGKILL)<' in html
    assert 'class="up"' not in html and ">alpha<" in html  # the last good page, below
    rebuilding = threading.Thread(target=page.rebuild_forever, daemon=True)
    rebuilding.start()
    rebuilding.join(timeout=10)
    assert not rebuilding.is_alive()  # an ended page is not rebuilt any more


def test_a_lab_that_stopped_rewriting_its_status_is_not_shown_up(tmp_path):
    write_log(tmp_path, 3)
    LabStatus(75, 3, [ComponentStatus("alpha", UP)], updated=time.time() - 60).write(tmp_path)
    page = LivePage(tmp_path, every_s=1)
    page.rebuild()
    html = page.page()
    assert "The lab has not reported since" in html and 'class="ended">alpha up when last reported<' in html
    assert 'class="up"' not in html


def test_the_first_signal_ends_the_page_and_stops_the_server_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(live, "GRACE_S", 0.2)
    page = LivePage(tmp_path, every_s=1)
    server = LiveServer(uvicorn.Config(live.app(page)), page)
    server.handle_exit(signal.SIGTERM, None)
    assert page.ended is not None and not server.should_exit  # still serving: open pages learn the run ended
    time.sleep(0.5)
    assert server.should_exit
    other = LiveServer(uvicorn.Config(live.app(page)), page)
    other.handle_exit(signal.SIGTERM, None)  # once ended, a signal stops it at once
    assert other.should_exit
