"""Live traffic (`[origin] kind = "none"`): the Collector's access.log keeps no query string (real users'
queries carry search terms, session ids, tokens), while a lab on the synthetic origin keeps its own
queries (think, size, cc); and what joins the Multiplier's URLs with the log's (prefetch accounting,
the bypass check, live and in the report) compares them as the log has them (on hand-made logs:
unit/test_lab_trust.py, unit/test_prefetch.py)."""

from __future__ import annotations

import http.client
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from labsupport import lab_session
from parts import require

from analysis.sections.prefetch import prefetch_columns
from spe_tools import collector
from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.start.collector import strip_query_terms
from spe_tools.process import ProcessGroup, free_port
from spe_tools.rundir.layout import RunDir

SECRET = "token=s3cr3t"
LIVE = '[origin]\nkind = "none"\n[collector]\nkind = "squid"\n[[proxy]]\nname = "dummy"\nkind = "dummy"\n'
SYNTHETIC = '[origin]\nthink_mean_ms = 0\n[collector]\nkind = "squid"\n[[proxy]]\nname = "dummy"\nkind = "dummy"\n'


@pytest.mark.parametrize("kind", ["squid", "spe"])
def test_the_collector_drops_queries_from_its_log_on_live_traffic_only(tmp_path, kind):
    require(collector.missing(kind), f"the {kind} Collector")
    for text, strip in ((LIVE, "on"), (SYNTHETIC, "off")):
        lab = parse_lab(text)
        assert strip_query_terms(lab) is (strip == "on")
        conf = tmp_path / f"{strip}.conf"
        conf.write_text(collector.collector_config(kind, tmp_path, free_port(), {"dummy": free_port()},
                                                   strip_query_terms=strip_query_terms(lab)))
        assert f"\nstrip_query_terms {strip}\n" in conf.read_text()
        code, output = collector.parse_check(kind, conf)
        assert code == 0, output
        assert f"Processing: strip_query_terms {strip}" in output
        assert not [line for line in output.splitlines() if "ERROR" in line], output


def origin(group: ProcessGroup, port: int) -> None:
    """The synthetic origin as a site the user browses (the live lab has no origin of its own)."""
    group.start("site", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                         "--think-mean-ms", "0"], port=port, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def get_through(port: int, url: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", url)
    reply = conn.getresponse()
    reply.read()
    conn.close()
    return reply.status


def logged(rundir: Path, part: str, count: int, deadline_s: float = 15) -> list[str]:
    """The Collector's access.log URLs that contain `part`, once `count` lines have it (Squid writes late)."""
    end = time.monotonic() + deadline_s
    while True:
        log = RunDir(rundir).access_log
        urls = [f[6] for f in (line.split() for line in log.read_text().splitlines()) if len(f) > 6 and part in f[6]]
        if len(urls) >= count or time.monotonic() > end:
            return urls
        time.sleep(0.2)


def test_a_live_lab_logs_urls_without_their_query_and_the_report_still_joins_them():
    port = free_port()
    url = f"http://localhost:{port}/obj/live-1?think=0&{SECRET}"
    with lab_session(lambda _: 'name = "live"\n' + LIVE, before=lambda users: origin(users, port)) as lab:
        assert get_through(lab.multiplier_port, url) == 200
        urls = logged(lab.rundir, "/obj/live-1", 2)  # the direct path's and the dummy's
        assert urls == [f"http://localhost:{port}/obj/live-1?"] * 2, urls
        assert SECRET not in RunDir(lab.rundir).access_log.read_text()
        assert lab.lab_json["collector"]["strip_query_terms"] is True
        (record,) = lab.records("/obj/live-1", 1)
        assert record["url"] == url  # the Multiplier's record is the one place with the whole URL
        # The dummy's request came from the client's (its tag): not a prefetch although the URLs differ.
        columns = prefetch_columns(lab.rundir, ["dummy"])
        assert columns["dummy"]["prefetch_requests"] == 0, columns


def test_a_synthetic_origin_lab_keeps_its_queries():
    with lab_session(lambda _: 'name = "synthetic"\n' + SYNTHETIC) as lab:
        url = f"{lab.origin}/obj/kept-1?think=0&{SECRET}"
        assert get_through(lab.multiplier_port, url) == 200
        assert logged(lab.rundir, "/obj/kept-1", 2) == [url] * 2
        assert lab.lab_json["collector"]["strip_query_terms"] is False
