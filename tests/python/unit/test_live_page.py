"""The live scorecard's data: status.json as the lab writes it, and the page analysis/live.py serves from it (the
report page with every process's state, the last good page kept when a rebuild fails)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_analysis import measure, proxy, record

from analysis import live
from analysis.live import LivePage
from spe_tools.lab.labfile import lab_toml
from spe_tools.lab.model import LabFileError, LiveSpec, parse_lab
from spe_tools.rundir.lab_json import LabJson, LiveOfRun
from spe_tools.rundir.layout import RunDir
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
    write_log(tmp_path, 4)  # the log grew, and this rebuild fails
    monkeypatch.setattr(live, "build_report", lambda run: 1 / 0)
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
