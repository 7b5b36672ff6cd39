"""What SPE writes as HAR (har.write_har: `./spe browse --har`'s recorder, the tests' recorded sites) is valid HAR 1.2
by the JSON Schema of the npm package har-schema (tests/python/har_schema.py); so are the samples of Chromium,
Firefox and mitmproxy the reader is tested on, and the recorded shop configs/labs/har.toml serves. Headless
Chromium's own recording: browser/test_browse_har.py."""

from __future__ import annotations

import json

import har_schema
import pytest
from conftest import ROOT
from har_site import write_site
from parts import require
from test_har_recording import CAPTURE, record

from spe_tools.workload.har.archive import HarEntry, HarPage, HarRequest, HarResponse, write_har


@pytest.fixture(autouse=True)
def schema() -> None:
    require(har_schema.missing(), "the HAR 1.2 JSON Schema (npm har-schema)")


def test_the_recorders_file_is_valid_har(tmp_path):
    recorder, _ = record(CAPTURE["events"], CAPTURE["bodies"])
    recorder.write(tmp_path / "page.har")
    assert har_schema.problems(json.loads((tmp_path / "page.har").read_text())) == []


def test_every_kind_of_entry_spe_writes_is_valid_har(tmp_path):
    write_site(tmp_path / "site.har")  # 304, 0 (blocked), left-out body, gzip, POST, HTTP/2 fields
    odd = [HarEntry(1795953600.25, HarRequest("PUT", "http://localhost:1/x", headers=[("Content-Type", "a/b")],
                                              body=b"\xff\x00"),
                    HarResponse(201, "Created", body="é".encode(), body_size=2), time_ms=-1, wait_ms=-1,
                    connection="7", pageref="page_1", timings={"blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
                                                               "send": 0.5, "wait": 3.25, "receive": 1}),
           HarEntry(1795953601.0, HarRequest("GET", "http://localhost:1/y"), HarResponse(302, body_size=-1))]
    write_har(tmp_path / "odd.har", odd, comment="made by a test",
              pages=[HarPage("page_1", "http://localhost:1/", 1795953600.0)])
    for name in ("site.har", "odd.har"):
        assert har_schema.problems(json.loads((tmp_path / name).read_text())) == [], name


@pytest.mark.parametrize("path", ["tests/fixtures/har/chromium.har", "tests/fixtures/har/firefox.har",
                                  "tests/fixtures/har/mitmproxy.har", "configs/sites/shop-example.har"])
def test_the_samples_and_the_shipped_recording_are_valid_har(path):
    assert har_schema.problems(json.loads((ROOT / path).read_text())) == []


def test_the_schema_refuses_what_is_no_har():
    entry = {"startedDateTime": "yesterday", "time": 1, "request": {}, "response": {}, "cache": {}, "timings": {}}
    found = har_schema.problems({"log": {"version": "1.2", "creator": {"name": "x", "version": "1"},
                                         "entries": [entry]}})
    assert any(p.startswith("log/entries/0/startedDateTime") for p in found)
    assert "log/entries/0/request: 'url' is a required property" in found
