"""A lab whose origin is a recorded site ([origin] kind = "har"), brought up through the lab code with the patched
Collector, a Squid and the dummy: recorded URLs asked through the Multiplier by their lab URLs come back as recorded
(cookies, validators, dates moved to now, the script gzip-encoded), a cacheable one reaches the origin once, and the
dummy, which caches nothing, never differs from the Collector."""

from __future__ import annotations

import gzip
import http.client
import time
from pathlib import Path

import pytest
from har_site import CDN, CSS, CSS_ETAG, JS, PAGE, SHOP, write_site
from labsupport import lab_session
from parts import require

from spe_tools import collector
from spe_tools.workload.har.archive import lab_url
from spe_tools.workload.http11 import parse_http_date


def lab_text(workdir: Path) -> str:
    har = write_site(workdir / "site.har")
    return ('name = "har-lab"\n[collector]\nkind = "spe"\n'
            f'[origin]\nkind = "har"\nhar = ["{har}"]\nthink_scale = 0\n'
            '[multiplier]\ntimeout_s = 20\n'
            '[[proxy]]\nname = "squid"\nkind = "squid"\ncache_mb = 16\n'
            '[[proxy]]\nname = "dummy"\nkind = "dummy"\n')


@pytest.fixture(scope="module")
def har_lab():
    require(collector.missing("spe"), "the patched Collector")
    with lab_session(lab_text) as lab:
        yield lab


def path_of(lab, recorded: str) -> str:
    """The path and query a lab client asks for the recorded URL (LabUnderTest.get adds the origin)."""
    return lab_url(recorded, lab.origin.removeprefix("http://")).removeprefix(lab.origin)


def ask(lab, recorded: str) -> http.client.HTTPResponse:
    lab.conn.request("GET", lab_url(recorded, lab.origin.removeprefix("http://")))
    return lab.conn.getresponse()


def results(lab, recorded: str, count: int, deadline_s: float = 30) -> list[dict[str, str]]:
    """Each proxy's result, per request for exactly the recorded URL, once `count` are logged (a page's lab URL
    is a prefix of every other URL of its host: LabUnderTest.records would count theirs too)."""
    path, end = path_of(lab, recorded), time.monotonic() + deadline_s
    while True:
        records = [r for r in lab.records(path, 0) if r["url"].endswith(path)]
        if len(records) >= count or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert len(records) == count, records
    return [{p["name"]: p["result"] for p in r["proxies"]} for r in records]


def test_recorded_replies_come_through_every_proxy_as_recorded(har_lab):
    css = f"{SHOP}/static/site.css"
    assert har_lab.get(path_of(har_lab, css)) == CSS == har_lab.get(path_of(har_lab, css))
    page = ask(har_lab, f"{SHOP}/")
    assert page.status == 200 and page.read() == PAGE
    assert page.msg.get_all("Set-Cookie") == ["session=s3cr3t; Path=/; HttpOnly", "theme=dark; Path=/"]
    assert abs(parse_http_date(page.headers["Date"]) - time.time()) < 120  # moved to now
    script = ask(har_lab, f"{CDN}/js/app.js")
    assert script.headers["Content-Encoding"] == "gzip" and gzip.decompress(script.read()) == JS
    assert results(har_lab, css, 2) == [{"squid": "OK", "dummy": "OK"}] * 2
    assert results(har_lab, f"{SHOP}/", 1) == [{"squid": "OK", "dummy": "OK"}]
    assert results(har_lab, f"{CDN}/js/app.js", 1) == [{"squid": "OK", "dummy": "OK"}]
    stats = har_lab.origin_stats()
    assert stats["by_url"][css] == 1  # max-age=3600: the Collector and Squid kept it
    assert stats["reencoded"] >= 1 and stats["not_in_har"] == 0


def test_a_revalidation_and_a_url_the_recording_lacks(har_lab):
    css = f"{SHOP}/static/site.css"
    har_lab.conn.request("GET", lab_url(css, har_lab.origin.removeprefix("http://")),
                         headers={"If-None-Match": CSS_ETAG})
    revalidated = har_lab.conn.getresponse()
    assert revalidated.status == 304 and revalidated.read() == b""
    missing = ask(har_lab, f"{SHOP}/not-recorded")
    assert missing.status == 404 and b"not in the HAR: GET https://shop.example/not-recorded" in missing.read()
    assert har_lab.origin_stats()["not_in_har"] == 1
    assert all(r["dummy"] == "OK" for r in results(har_lab, f"{SHOP}/not-recorded", 1))


def test_lab_json_names_the_recordings(har_lab):
    origin = har_lab.lab_json["origin"]
    assert origin["kind"] == "har" and origin["har"] == [str(har_lab.workdir / "site.har")]
    assert origin["think_scale"] == 0 and origin["port"] == har_lab.run.ports.origin
