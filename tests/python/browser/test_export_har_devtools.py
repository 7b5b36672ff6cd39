"""The HAR files SPE exports (`./spe export`, a repro case's case.har) read by a browser: headless Chromium's own
DevTools HAR importer, the code that runs when a HAR is dropped on DevTools' Network panel (its bundled front end's
models/har: HARFormat parses the file and checks each field, Importer turns each entry into the Network panel's
request), loaded from devtools://devtools/bundled/ in a tab driven over the DevTools pipe. Each request it builds has
the exported URL, method, status, fields, size, body bytes (text and binary), start time and timings."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from exportsupport import BINARY, make_export_run
from parts import missing_program, require
from reprosupport import T0, URL, leg, make_run, record

from spe_tools.export.cli import main
from spe_tools.repro.case import extract_case
from spe_tools.repro.case_dir import write_case
from spe_tools.workload.browse import CHROMIUM, Browser, chromium_argv
from spe_tools.workload.har.archive import parse_time

DEVTOOLS = "devtools://devtools/bundled/devtools_app.html"
# Chromium's importer on the file's text: every request as the Network panel would show it.
IMPORT = """(async () => {
  const har = await import('./models/har/har.js');
  const root = new har.HARFormat.HARRoot(JSON.parse(%s));
  const requests = har.Importer.Importer.requestsFromHARLog(root.log);
  const out = [];
  for (const r of requests) {
    const content = await r.requestContentData();
    out.push({url: r.url(), method: r.requestMethod, status: r.statusCode, statusText: r.statusText,
              responseHeaders: r.responseHeaders.map(h => [h.name, h.value]),
              requestHeaders: r.requestHeaders().map(h => [h.name, h.value]), resourceSize: r.resourceSize,
              mimeType: r.mimeType, start: r.startTime, end: r.endTime, timing: r.timing,
              text: content.isTextContent ? content.text : null,
              base64: content.isTextContent ? null : content.base64});
  }
  return JSON.stringify({pages: root.log.pages.map(p => p.title), requests: out});
})()"""


async def devtools_read(texts: dict[str, str], workdir: Path) -> dict[str, dict]:
    """Each HAR text as Chromium's DevTools importer reads it, in one headless Chromium."""
    profile = workdir / "profile"
    profile.mkdir()
    browser = Browser(chromium_argv(CHROMIUM, "127.0.0.1:9", profile), profile, workdir)  # no network use
    try:
        await browser.connect()
        await browser.cdp.call("Page.navigate", {"url": DEVTOOLS}, session=browser.session)
        out = {}
        for name, text in texts.items():
            out[name] = json.loads(await evaluate(browser, IMPORT % json.dumps(text)))
        return out
    finally:
        await browser.close()


async def evaluate(browser: Browser, expression: str, deadline_s: float = 60) -> str:
    """The expression's value; retried while the DevTools page is still loading its modules."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while True:
        reply = await browser.cdp.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                           "returnByValue": True}, session=browser.session)
        if "exceptionDetails" not in reply:
            return reply["result"]["value"]
        if loop.time() > end:
            raise AssertionError(f"Chromium's HAR importer refused the file: {reply['exceptionDetails']}")
        await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
def read_by_chromium(tmp_path_factory) -> tuple[dict[str, dict], dict[str, dict]]:
    """(what Chromium made of each HAR, each HAR's log): the run, one proxy's view, one request's sequence, and
    a repro case's case.har."""
    require(missing_program(CHROMIUM), "Chromium")
    base = tmp_path_factory.mktemp("export-devtools")
    run = make_export_run(base / "run")
    files = {"run": [], "nginx": ["--proxy", "nginx"], "request": ["--request", "3", "--proxy", "nginx"]}
    for name, args in files.items():
        assert main([str(run), "--har", str(base / f"{name}.har"), *args]) == 0
    case_run = make_run(base / "case-run", [record(1, T0, origin={"etag": '"v1"', "cache-control": "max-age=60"},
                                                   origin_fields="etag cache-control set-cookie", nbytes=70),
                                            record(2, T0 + 1, legs=[leg("nginx", [{"rule": "age", "section": "4",
                                                                                   "reason": "r"}])])])
    (base / "case.har").write_bytes((write_case(extract_case(case_run, "nginx", 2), base / "case") / "case.har")
                                    .read_bytes())
    texts = {name: (base / f"{name}.har").read_text() for name in [*files, "case"]}
    return asyncio.run(devtools_read(texts, base)), {n: json.loads(t)["log"] for n, t in texts.items()}


def test_chromium_reads_every_entry_of_an_exported_run(read_by_chromium):
    read, logs = read_by_chromium
    for name in ("run", "nginx", "request", "case"):
        requests, entries = read[name]["requests"], logs[name]["entries"]
        assert len(requests) == len(entries) > 0, name
        assert read[name]["pages"] == [p["title"] for p in logs[name]["pages"]]
        for got, entry in zip(requests, entries, strict=True):
            assert (got["url"], got["method"], got["status"]) == \
                (entry["request"]["url"], entry["request"]["method"], entry["response"]["status"]), name
            assert got["responseHeaders"] == [[h["name"], h["value"]] for h in entry["response"]["headers"]], name
            assert got["requestHeaders"] == [[h["name"], h["value"]] for h in entry["request"]["headers"]], name
            assert got["resourceSize"] == entry["response"]["content"]["size"], name
            assert got["start"] == pytest.approx(parse_time(entry["startedDateTime"]), abs=1e-3), name


def test_chromium_has_the_captured_bodies_byte_for_byte_and_the_times(read_by_chromium):
    read, _ = read_by_chromium
    fresh, hit, binary, post, failed = read["run"]["requests"]
    assert fresh["url"] == URL and fresh["text"] == "abcdefg" and fresh["mimeType"] == "text/plain"
    assert base64.b64decode(binary["base64"]) == BINARY
    assert ["Set-Cookie", "hmac:3cab3f9361aeab93"] in fresh["responseHeaders"]
    # connect 1.5 ms, then the first byte 2.5 ms later, the last at 5 ms: as the Collector's leg was timed
    assert (fresh["timing"]["connectStart"], fresh["timing"]["connectEnd"]) == (0, 1.5)
    assert fresh["timing"]["receiveHeadersEnd"] == pytest.approx(4.0)
    assert fresh["end"] - fresh["start"] == pytest.approx(0.005, abs=1e-6)
    assert (post["method"], post["status"], failed["status"]) == ("POST", 201, 0)
    assert read["nginx"]["requests"][1]["responseHeaders"] == [["date", "Tue, 24 Nov 2026 02:31:39 GMT"]]
    case_first = read["case"]["requests"][0]
    assert ["Set-Cookie", "spe-repro=1; Path=/"] in case_first["responseHeaders"] and case_first["resourceSize"] == 70
