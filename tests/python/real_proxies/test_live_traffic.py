"""Live traffic (`[origin] kind = "none"`): the Collector's access.log keeps no query string (real users'
queries carry search terms, session ids, tokens), while a lab on the synthetic origin keeps its own
queries (think, size, cc); and what joins the Multiplier's URLs with the log's (prefetch accounting,
the bypass check, live and in the report) compares them as the log has them."""

from __future__ import annotations

import http.client
import json
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import ROOT
from labsupport import lab_session
from parts import require

from analysis.bypass import silent_port_evidence
from analysis.prefetch import prefetch_columns
from spe_tools import collector
from spe_tools.lab.bypass_watch import BypassWatch, CollectorPorts
from spe_tools.lab.model import parse_lab
from spe_tools.lab.start_collector import strip_query_terms
from spe_tools.process import ProcessGroup, free_port
from spe_tools.rundir.access_log import as_logged
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.port_usage import parse_access_log

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


def test_joins_with_a_stripped_log_compare_urls_as_it_has_them(tmp_path):
    """The report's bypass evidence and the lab's live one match a record's URL with the log's cut form."""
    assert as_logged("http://h/p?a=1&b=2", True) == "http://h/p?"
    assert as_logged("http://h/p?a=1", False) == "http://h/p?a=1" and as_logged("http://h/p", True) == "http://h/p"
    log = tmp_path / "access.log"
    log.write_text("1.000      5 127.0.0.1 TCP_MISS/200 100 GET http://h/p? - HIER_DIRECT/127.0.0.1 text/plain "
                   "5000 90 T1\n")
    usage, bad = parse_access_log(log, {5000: "direct", 5001: "silent"})
    assert bad == 0 and usage["direct"].origin_urls == {"http://h/p?"}
    results = pl.DataFrame({"id": [1, 1], "name": ["Collector (direct)", "silent"], "url": ["http://h/p?a=1"] * 2,
                            "status": [200, 200], "error": [None, None], "fetch": ["f1", "f1"]})
    assert silent_port_evidence(results, "silent", usage, strip_query_terms=True) == 1
    assert silent_port_evidence(results, "silent", usage, strip_query_terms=False) == 0  # the old join's miss
    # live: a proxy whose port stays silent while it answers what the direct path fetched
    watch = BypassWatch(CollectorPorts(log, {5000: "direct", 5001: "silent"}, strip_query_terms=True))
    reply = {"name": "silent", "status": 200, "fetch": "f1"}
    watch.add({"url": "http://h/p?a=1", "collector": {"status": 200, "fetch": "f1"}, "proxies": [reply]})
    watch.check_ports()
    assert watch.bypassing == {"silent"}


def test_prefetch_accounting_on_a_stripped_log(tmp_path):
    """A proxy's request tagged with the client request it came from is the client's, not a prefetch, when
    the log has its URL without the query; an untagged one for another path is the proxy's own."""
    record = {"ts": 100.0, "id": 1, "tag": "T1", "method": "GET", "url": "http://h/a?q=1",
              "collector": {"status": 200, "total_us": 5000},
              "proxies": [{"name": "p", "status": 200, "total_us": 1000, "result": "OK"}]}
    RunDir(tmp_path).multiplier_log.write_text(json.dumps(record) + "\n")
    RunDir(tmp_path).lab_json.write_text(json.dumps({"collector": {"ports": {"direct": 5000, "p": 5001},
                                                                 "strip_query_terms": True}}))
    RunDir(tmp_path).access_log.parent.mkdir()
    RunDir(tmp_path).access_log.write_text(
        "100.005      5 127.0.0.1 TCP_MISS/200 100 GET http://h/a? - HIER_DIRECT/127.0.0.1 t 5000 90 T1\n"
        "100.006      1 127.0.0.1 TCP_HIT/200 100 GET http://h/a? - HIER_NONE/- t 5001 90 T1\n"
        "100.010      1 127.0.0.1 TCP_MISS/200 300 GET http://h/b? - HIER_DIRECT/127.0.0.1 t 5001 90 -\n")
    columns = prefetch_columns(tmp_path, ["p"])["p"]
    assert columns["prefetch_requests"] == 1 and columns["prefetch_bytes"] == 300, columns
