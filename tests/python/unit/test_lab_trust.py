"""The lab's side of trustworthy verdicts (pure; no process is started): noise pairs it recognises by
their settings, proxies it names BYPASS in the status line, and what `lab check` warns about."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
from conftest import ROOT

from analysis.readers.engine import FrameTables
from analysis.sections.bypass import silent_port_evidence
from spe_tools.lab.cli import main as lab_main
from spe_tools.lab.definition.model import load_lab, parse_lab
from spe_tools.lab.definition.noise_pairs import noise_pairs
from spe_tools.lab.watch.bypass_watch import BypassWatch, CollectorPorts, static_warnings
from spe_tools.lab.watch.status import StatusTracker, format_status
from spe_tools.rundir.access_log import as_logged
from spe_tools.rundir.port_usage import parse_access_log


def proxies(*tables: str) -> str:
    return "".join(f"[[proxy]]\n{t}\n" for t in tables)


def test_the_default_lab_has_a_noise_pair():
    assert noise_pairs(load_lab(ROOT / "configs/labs/default.toml")) == [("squid", "squid-twin")]


def test_twins_are_recognised_by_their_settings_not_their_names_or_ports():
    lab = parse_lab(proxies('name = "a"\nkind = "squid"\ncache_mb = 64\nport = 4001\ncollector_port = 4002',
                            'name = "b"\nkind = "squid"',  # cache_mb 64 is the default: the same setting
                            'name = "c"\nkind = "squid"\ncache_mb = 32',
                            'name = "ats"\nkind = "trafficserver"',
                            'name = "ats-pf"\nkind = "trafficserver"\nprefetch = true',
                            'name = "d1"\nkind = "dummy"', 'name = "d2"\nkind = "dummy"\nport = 4003',
                            'name = "x1"\nkind = "external"\naddress = "127.0.0.1:4004"',
                            'name = "x2"\nkind = "external"\naddress = "127.0.0.1:4005"'))
    assert noise_pairs(lab) == [("a", "b"), ("d1", "d2")]


def test_a_paced_proxy_is_not_a_noise_twin_of_a_free_one():
    """collector_limit_kbps slows one proxy's misses (real_proxies/test_lab_collector_limits.py): no twin."""
    paced = proxies('name = "paced"\nkind = "dummy"\ncollector_limit_kbps = 64', 'name = "free"\nkind = "dummy"')
    assert noise_pairs(parse_lab(paced)) == []
    assert noise_pairs(parse_lab(paced.replace("collector_limit_kbps = 64\n", ""))) == [("paced", "free")]


def test_three_identical_proxies_make_three_pairs():
    lab = parse_lab(proxies(*(f'name = "n{i}"\nkind = "nginx"' for i in range(3))))
    assert noise_pairs(lab) == [("n0", "n1"), ("n0", "n2"), ("n1", "n2")]


def test_format_status_names_a_bypassing_proxy():
    line = format_status(3.2, 12, 10, {"a": Counter(OK=9, HEADER_MISMATCH=3), "b": Counter(OK=12)}, ["a", "b"],
                         bypass={"a"})
    assert line == "     3 s | requests 12 (+2) | a ok 9 diff 3 BYPASS | b ok 12"


def reply(name: str, status: int | None = 200, fetch: str | None = "f1", error: str | None = None) -> dict:
    return {"name": name, "status": status, "fetch": fetch, "error": error,
            "result": "OK" if status == 200 else "STATUS_CODE_MISMATCH"}


def rec(i: int, *replies: dict, fetch: str | None = "f1", status: int = 200) -> dict:
    return {"id": i, "url": f"http://localhost:9/obj/{i}", "collector": {"status": status, "fetch": fetch},
            "proxies": list(replies)}


def write_log(path: Path, records: list[dict]) -> None:
    with open(path, "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))


def test_a_reply_without_the_collector_stamp_marks_its_proxy_bypass(tmp_path):
    log = tmp_path / "multiplier.jsonl"
    write_log(log, [
        rec(1, reply("good", fetch="f0"), reply("own-errors", status=503, fetch=None),
            reply("revalidated", status=304, fetch=None), reply("dead", status=None, fetch=None, error="refused")),
        rec(2, reply("good", fetch=None), fetch=None),  # an older Collector stamps nothing: no evidence
    ])
    tracker = StatusTracker(log)
    tracker.update()
    assert tracker.requests == 2 and tracker.watch.bypassing == set()
    write_log(log, [rec(3, reply("good"), reply("ats", fetch=None))])
    tracker.update()
    assert tracker.watch.bypassing == {"ats"}
    assert format_status(1, tracker.requests, 2, tracker.results, ["good", "ats"], bypass=tracker.watch.bypassing) \
        == "     1 s | requests 3 (+1) | good ok 3 | ats ok 1 BYPASS"


def access_line(port: int, url: str, hierarchy: str = "HIER_DIRECT/127.0.0.1", code: str = "TCP_MISS/200") -> str:
    return f"100.000 1 127.0.0.1 {code} 1200 GET {url} - {hierarchy} text/plain {port} 100\n"


def test_a_proxy_whose_collector_port_stays_silent_is_marked_bypass(tmp_path):
    """No stamps (an older Collector): the access.log shows which proxy never asked its Collector port."""
    log, access = tmp_path / "multiplier.jsonl", tmp_path / "access.log"
    access.write_text("".join(access_line(5000, f"http://localhost:9/obj/{i}") for i in (1, 2))
                      + access_line(5001, "http://localhost:9/obj/1", "HIER_NONE/-", "TCP_MEM_HIT/200")
                      + "100.1 0 127.0.0.1 NONE_NONE/000 0 - error:transaction-end-before-headers - HIER_NONE/- - "
                        "5002 0\n")  # a readiness probe on ats's port is not a request
    write_log(log, [rec(i, reply("squid", fetch=None), reply("ats", fetch=None), fetch=None) for i in (1, 2)])
    watch = BypassWatch(CollectorPorts(access, {5000: "direct", 5001: "squid", 5002: "ats"}))
    tracker = StatusTracker(log, watch=watch)
    tracker.update()
    assert watch.bypassing == set()  # replies are judged one update later, when their fetches are logged
    tracker.update()
    assert watch.bypassing == {"ats"} and watch.silent_port_replies["ats"] == 2
    with open(access, "a") as f:  # its port saw a request after all: not a bypass
        f.write(access_line(5002, "http://localhost:9/obj/2", "HIER_NONE/-", "TCP_MEM_HIT/200"))
    tracker.update()
    assert watch.bypassing == set()


def test_a_silent_port_is_no_evidence_without_origin_fetches_or_equal_answers(tmp_path):
    log, access = tmp_path / "multiplier.jsonl", tmp_path / "access.log"
    access.write_text(access_line(5000, "http://localhost:9/obj/1", "HIER_NONE/-", "TCP_MEM_HIT/200")
                      + access_line(5000, "http://localhost:9/obj/2"))
    write_log(log, [rec(1, reply("ats", fetch=None), fetch=None),  # the Collector had it cached
                    rec(2, reply("ats", status=403, fetch=None), fetch=None)])  # the proxy refused it itself
    watch = BypassWatch(CollectorPorts(access, {5000: "direct", 5002: "ats"}))
    tracker = StatusTracker(log, watch=watch)
    tracker.update()
    tracker.update()
    assert watch.bypassing == set()


def test_check_warns_when_live_traffic_may_bypass_the_collector(tmp_path):
    text = ('[origin]\nkind = "none"\n'
            + proxies('name = "ats"\nkind = "trafficserver"', 'name = "sq"\nkind = "squid"',
                      'name = "mine"\nkind = "external"\naddress = "127.0.0.1:4004"'))
    warnings = static_warnings(parse_lab(text))
    assert len(warnings) == 2
    assert warnings[0].startswith("[[proxy]] 'ats' (trafficserver): with [origin] kind = \"none\", a request for a URL "
                                  "naming 127.0.0.1 goes straight to the origin")
    assert warnings[1].startswith("[[proxy]] 'mine' (external): the lab cannot see")
    assert static_warnings(parse_lab(proxies('name = "ats"\nkind = "trafficserver"'))) == []


def test_lab_check_prints_the_warning_and_the_noise_floor_it_will_measure(tmp_path, capsys):
    path = tmp_path / "lab.toml"
    path.write_text('[origin]\nkind = "none"\n' + proxies('name = "ats"\nkind = "trafficserver"',
                                                          'name = "ats2"\nkind = "trafficserver"'))
    lab_main(["check", str(path)])
    out = capsys.readouterr()
    assert "spe lab check: warning: [[proxy]] 'ats' (trafficserver): with [origin] kind = \"none\"" in out.err
    if "is ready" in out.out:  # the programs are installed here
        assert out.out.rstrip().endswith("noise floor measured by noise pair ats = ats2")


def test_joins_with_a_stripped_log_compare_urls_as_it_has_them(tmp_path):
    """The report's bypass evidence and the lab's live one match a record's URL with the log's cut form (live
    traffic: the Collector logs no query, real_proxies/test_live_traffic.py)."""
    assert as_logged("http://h/p?a=1&b=2", True) == "http://h/p?"
    assert as_logged("http://h/p?a=1", False) == "http://h/p?a=1" and as_logged("http://h/p", True) == "http://h/p"
    log = tmp_path / "access.log"
    log.write_text("1.000      5 127.0.0.1 TCP_MISS/200 100 GET http://h/p? - HIER_DIRECT/127.0.0.1 text/plain "
                   "5000 90 T1\n")
    usage, bad = parse_access_log(log, {5000: "direct", 5001: "silent"})
    assert bad == 0 and usage["direct"].origin_urls == {"http://h/p?"}
    results = pl.DataFrame({"id": [1, 1], "name": ["Collector (direct)", "silent"], "url": ["http://h/p?a=1"] * 2,
                            "status": [200, 200], "error": [None, None], "fetch": ["f1", "f1"]})
    with FrameTables(results, None) as tables:
        assert silent_port_evidence(tables, "silent", usage, strip_query_terms=True) == 1
        assert silent_port_evidence(tables, "silent", usage, strip_query_terms=False) == 0  # the old join's miss
    # live: a proxy whose port stays silent while it answers what the direct path fetched
    watch = BypassWatch(CollectorPorts(log, {5000: "direct", 5001: "silent"}, strip_query_terms=True))
    reply = {"name": "silent", "status": 200, "fetch": "f1"}
    watch.add({"url": "http://h/p?a=1", "collector": {"status": 200, "fetch": "f1"}, "proxies": [reply]})
    watch.check_ports()
    assert watch.bypassing == {"silent"}
