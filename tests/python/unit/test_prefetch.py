"""Prefetch accounting (analysis/sections/prefetch.py) on a hand-made run whose prefetches, uses, waste and lead
times are known: which requests on a proxy's Collector port no client request caused, and what became
of them; on a proxy that forwards tags, an untagged request is its own even inside a client's leg; on one that
drops them, the window that keeps an untagged client request from being called a prefetch, at its edge."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import duckdb
import pytest

from analysis.readers.access_log_sql import read_access_log
from analysis.readers.engine import RunTables
from analysis.sections.prefetch import HORIZON_S, prefetch_columns, prefetch_text
from spe_tools.rundir.access_log import FIELDS, BadLineError
from spe_tools.rundir.access_log import read_access_log as python_reader
from spe_tools.rundir.layout import RunDir

PORTS = {"direct": 5000, "ats": 5001, "pf": 5002, "old": 5003}  # old: a proxy that drops X-SPE-Request


def record(tag: str, ts: float, url: str) -> dict:
    leg = {"status": 200, "total_us": 10_000, "result": "OK"}
    return {"ts": ts, "id": int(tag[1:]), "tag": tag, "method": "GET", "url": url,
            "collector": {"status": 200, "total_us": 50_000},
            "proxies": [{**leg, "name": name} for name in ("ats", "pf", "old")]}


def line(end: float, elapsed_ms: int, nbytes: int, url: str, port: str, tag: str = "-") -> str:
    return (f"{end:.3f} {elapsed_ms:6d} 127.0.0.1 TCP_MISS/200 {nbytes} GET {url} - HIER_DIRECT/127.0.0.1 "
            f"image/jpeg {PORTS[port]} 200 {tag}")


def prefetch_run(path: Path) -> Path:
    """The run this file's tests read (test_report_engines.py reads it on both engines)."""
    records = [record("T1", 100.0, "http://o/seq/1.jpg"), record("T2", 110.0, "http://o/seq/2.jpg"),
               record("T3", 120.0, "http://o/seq/3.jpg"), record("T4", 200.0, "http://o/other"),
               {**record("T5", 210.0, "http://o/head"), "method": "HEAD"}]
    RunDir(path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records))
    RunDir(path).lab_json.write_text(json.dumps({"collector": {"ports": PORTS}}))
    lines = [line(r["ts"] + 0.05, 50, 1000, r["url"], "direct", r["tag"]) for r in records]
    lines += [line(r["ts"] + 0.055, 5, 1000, r["url"], "ats", r["tag"]) for r in records]  # ats: no prefetch
    lines += [
        line(100.050, 50, 1000, "http://o/seq/1.jpg", "pf", "T1"),  # the client's own request
        line(210.050, 50, 1000, "http://o/head", "pf", "T5"),  # the client's HEAD, fetched as a GET: its own
        line(100.070, 10, 1000, "http://o/seq/2.jpg", "pf", "T1"),  # A: the tag of T1, another URL: prefetch
        line(120.500, 600, 1500, "http://o/seq/3.jpg", "pf"),  # B: untagged, ends after T3's leg: late
        line(121.000, 10, 2000, "http://o/seq/9.jpg", "pf"),  # C: never asked for: wasted
        # D: untagged, inside T2's leg: pf forwards tags (T1, T5), so it is pf's own, and nobody asks after it
        line(110.061, 60, 777, "http://o/seq/2.jpg", "pf"),
        line(130.000, 0, 0, "error:transaction-end-before-headers", "pf").replace("TCP_MISS/200 0 GET",
                                                                                "NONE_NONE/000 0 -"),
        # old forwards no tag: an untagged line is the client's when it lies in a client's leg for its URL
        line(100.055, 5, 1000, "http://o/seq/1.jpg", "old"),  # in T1's leg: the client's
        # Untagged requests for seq/2 around T2 (ts 110.000; its leg ends by 110.060 at the latest):
        line(110.061, 60, 777, "http://o/seq/2.jpg", "old"),  # inside the window (slack 2 ms): the client's
        line(110.075, 25, 500, "http://o/seq/2.jpg", "old"),  # past it: a prefetch nobody asks for after
    ]
    RunDir(path).access_log.parent.mkdir()
    RunDir(path).access_log.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return prefetch_run(tmp_path)


def test_prefetches_their_use_waste_and_lead_time(run):
    columns = prefetch_columns(run, ["ats", "pf"])
    pf = columns["pf"]
    assert pf["prefetch_requests"] == 4  # A, B, C and D
    assert pf["prefetch_bytes"] == 1000 + 1500 + 2000 + 777
    assert pf["prefetch_precision"] == pytest.approx(2 / 4)  # A (by T2) and B (by T3) were asked for
    assert pf["prefetch_wasted_bytes"] == 2000 + 777
    # A ended at 100.070, T2 came at 110.000: 9,930 ms ahead; B ended at 120.500, T3 came at 120.000: late.
    assert pf["prefetch_late"] == 1
    assert pf["prefetch_lead_ms_p50"] == pytest.approx((9930 - 500) / 2)
    # linear between the two: -500 + q * (9930 + 500)
    assert pf["prefetch_lead_ms_p10"] == pytest.approx(543) and pf["prefetch_lead_ms_p90"] == pytest.approx(8887)
    assert pf["prefetch_horizon_s"] == HORIZON_S
    assert pf["prefetch_rate_per_s"] == pytest.approx(4 / (210.0 - 100.0))  # over the client requests' span
    assert columns["ats"]["prefetch_requests"] == 0 and columns["ats"]["prefetch_precision"] is None


def test_the_window_edge_for_an_untagged_client_request(run):
    """An untagged request for T2's URL that ends 1 ms inside T2's leg window is the client's; moved
    3 ms past the window's end (the 2 ms slack included) it becomes a prefetch."""
    access = RunDir(run).access_log
    text = access.read_text()
    assert prefetch_columns(run, ["old"])["old"]["prefetch_requests"] == 1
    moved = text.replace("110.061     60 127.0.0.1 TCP_MISS/200 777 GET http://o/seq/2.jpg - HIER_DIRECT/127.0.0.1 "
                         "image/jpeg 5003", "110.065     60 127.0.0.1 TCP_MISS/200 777 GET http://o/seq/2.jpg - "
                         "HIER_DIRECT/127.0.0.1 image/jpeg 5003")
    assert moved != text
    access.write_text(moved)
    assert prefetch_columns(run, ["old"])["old"]["prefetch_requests"] == 2


def test_no_columns_without_the_collector_log(tmp_path):
    RunDir(tmp_path).multiplier_log.write_text("")
    assert prefetch_columns(tmp_path, ["pf"]) == {}


def test_the_report_lines_name_only_proxies_that_prefetched(run):
    columns = prefetch_columns(run, ["ats", "pf"])
    lines = prefetch_text([{"name": name, **c} for name, c in columns.items()])
    assert lines[0].startswith("Prefetching (requests a proxy sent that no client request caused; used = asked "
                               "for within 300 s)")
    assert lines[1:] == ["  pf: 4 prefetches (0.04/s over the run), 5,277 bytes; precision 50.0 %; wasted 2,777 "
                         "bytes; lead time median 4,715 ms (p10 543, p90 8,887); 1 late"]


def twin_run(path: Path) -> Path:
    """prefetch_run with ats as pf's twin: on T2 and T3 (the requests pf's prefetches served) pf answered in 2 and
    4 ms, ats in 40 and 44 (and old too); pf's agent logged its fetches."""
    run = prefetch_run(path)
    lab = json.loads(RunDir(run).lab_json.read_text())
    RunDir(run).lab_json.write_text(json.dumps({**lab, "proxies": {"pf": {"twin_of": "ats", "dir": "proxies/pf"},
                                                                   "ats": {}}}))
    records = [json.loads(line) for line in RunDir(run).multiplier_log.read_text().splitlines()]
    for r, (pf_ms, ats_ms) in zip(records[1:3], ((2, 40), (4, 44)), strict=True):
        for p in r["proxies"]:
            p["total_us"] = 1000 * (pf_ms if p["name"] == "pf" else ats_ms)
    RunDir(run).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "proxies/pf").mkdir(parents=True)
    (run / "proxies/pf/prefetch.jsonl").write_text('{"url": "a", "bytes": 10}\n')
    return run


def test_the_gain_over_a_twin_is_paired_on_the_requests_the_prefetches_served(tmp_path):
    """pf prefetched seq/2 (used by T2) and seq/3 (used by T3); on those two requests it answered in 2 and
    4 ms where its twin ats took 40 and 44: +38 and +40 ms, mean +39."""
    run = twin_run(tmp_path)
    pf = prefetch_columns(run, ["ats", "pf"])["pf"]
    assert pf["twin_of"] == "ats" and pf["twin_gain_requests"] == 2
    assert pf["twin_gain_ms_mean"] == pytest.approx(39)
    assert pf["twin_gain_ci_low_ms"] < 39 < pf["twin_gain_ci_high_ms"]
    assert "twin_of" not in prefetch_columns(run, ["ats", "pf"])["ats"]


def test_a_port_whose_tags_all_name_its_clients_forwards_tags(run):
    """Without A (pf's one tagged line no client explains), pf's port still forwards tags (T1's and T5's lines): D,
    untagged inside T2's leg, stays pf's own."""
    access = RunDir(run).access_log
    text = access.read_text()
    without_a = text.replace(line(100.070, 10, 1000, "http://o/seq/2.jpg", "pf", "T1") + "\n", "")
    assert without_a != text
    access.write_text(without_a)
    assert prefetch_columns(run, ["pf"])["pf"]["prefetch_requests"] == 3  # B, C and D


def test_the_accounting_reads_neither_log_into_python(run, monkeypatch):
    """Bounded memory: the client requests come from the report's tables (either engine) and DuckDB
    reads the access log, so no Python object per record or line is made; Python opens neither file."""
    logs = {RunDir(run).multiplier_log, RunDir(run).access_log}
    with RunTables(RunDir(run).multiplier_log) as tables:
        real_open = Path.open

        def guarded(path, *args, **kwargs):
            assert path not in logs, f"{path} read into Python"
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(Path, "open", guarded)
        monkeypatch.setattr(builtins, "open", lambda path, *a, **k: guarded(Path(path), *a, **k))
        assert prefetch_columns(run, ["ats", "pf"], tables)["pf"]["prefetch_requests"] == 4


def test_the_report_shows_the_prefetch_columns_in_every_format(run, tmp_path):
    from analysis.cli import main as report_main
    from analysis.report import build_report, html_report, text_report
    rep = build_report(run)
    assert "Prefetching (requests a proxy sent" in text_report(rep)
    page = html_report(rep)
    assert '<h2 id="prefetching">Prefetching</h2>' in page and "<th>pf</th><td>4</td><td>5277</td>" in page
    assert report_main([str(run), "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    proxies = {p["name"]: p for p in json.loads((tmp_path / "out" / "summary.json").read_text())["proxies"]}
    assert proxies["pf"]["prefetch_requests"] == 4 and proxies["pf"]["prefetch_precision"] == pytest.approx(0.5)
    assert proxies["ats"]["prefetch_requests"] == 0


def test_a_prefetchers_hit_ratio_counts_only_what_its_clients_caused(run):
    """pf's port saw 6 requests (T1, T5 and its 4 prefetches) for 5 responses: its clients caused 2 of them,
    so its hit ratio is 1 - 2/5; the prefetches' bytes stay in its bandwidth."""
    from analysis.report import build_report
    rows = {r["name"]: r for r in build_report(run).rows}
    assert rows["pf"]["collector_requests"] == 6
    assert rows["pf"]["hit_ratio"] == pytest.approx(1 - 2 / 5)
    assert rows["pf"]["byte_hit_ratio"] is None or rows["pf"]["byte_hit_ratio"] <= 1
    assert rows["ats"]["hit_ratio"] == pytest.approx(0.0)  # every request of ats reached its port
    assert rows["pf"]["rel_bandwidth_received"] == pytest.approx((2 * 1000 + 5277) / (5 * 1000))


def test_a_prefetchers_own_log_is_shown_as_evidence_beside_spes_count(run):
    """squid-prefetch's agent logs each fetch (prefetch.jsonl in the proxy's directory): its count is shown
    beside SPE's, never used for it."""
    RunDir(run).lab_json.write_text(json.dumps({"collector": {"ports": PORTS},
                                              "proxies": {"pf": {"dir": "proxies/pf"}, "ats": {"dir": "proxies/ats"}}}))
    (run / "proxies/pf").mkdir(parents=True)
    (run / "proxies/pf/prefetch.jsonl").write_text('{"url": "a", "bytes": 10}\n{"url": "b", "bytes": 20}\n'
                                                   '{"url": "c", "bytes": null, "status": null}\nnot json\n')
    columns = prefetch_columns(run, ["ats", "pf"])
    assert columns["pf"]["prefetch_agent_fetches"] == 3 and columns["pf"]["prefetch_agent_bytes"] == 30
    assert columns["pf"]["prefetch_requests"] == 4  # SPE's own count is unchanged by it
    assert "prefetch_agent_fetches" not in columns["ats"]
    lines = prefetch_text([{"name": name, **c} for name, c in columns.items()])
    assert lines[1].endswith("(its own log: 3 fetches, 30 bytes, counting those its cache answered)")


def test_prefetch_accounting_on_a_stripped_log(tmp_path):
    """A proxy's request tagged with the client request it came from is the client's, not a prefetch, when
    the log has its URL without the query (live traffic: real_proxies/test_live_traffic.py); an untagged one for
    another path is the proxy's own."""
    request = {"ts": 100.0, "id": 1, "tag": "T1", "method": "GET", "url": "http://h/a?q=1",
               "collector": {"status": 200, "total_us": 5000},
               "proxies": [{"name": "p", "status": 200, "total_us": 1000, "result": "OK"}]}
    RunDir(tmp_path).multiplier_log.write_text(json.dumps(request) + "\n")
    RunDir(tmp_path).lab_json.write_text(json.dumps({"collector": {"ports": {"direct": 5000, "p": 5001},
                                                                 "strip_query_terms": True}}))
    RunDir(tmp_path).access_log.parent.mkdir()
    RunDir(tmp_path).access_log.write_text(
        "100.005      5 127.0.0.1 TCP_MISS/200 100 GET http://h/a? - HIER_DIRECT/127.0.0.1 t 5000 90 T1\n"
        "100.006      1 127.0.0.1 TCP_HIT/200 100 GET http://h/a? - HIER_NONE/- t 5001 90 T1\n"
        "100.010      1 127.0.0.1 TCP_MISS/200 300 GET http://h/b? - HIER_DIRECT/127.0.0.1 t 5001 90 -\n")
    columns = prefetch_columns(tmp_path, ["p"])["p"]
    assert columns["prefetch_requests"] == 1 and columns["prefetch_bytes"] == 300, columns


def test_duckdb_reads_the_access_log_as_parse_line_does(tmp_path):
    """Every field of every line read_access_log reads as a request, the same through DuckDB; the lines it rejects
    or skips (too short, a connection that sent no request, a number that is not one) are not requests there; a
    line that is not UTF-8 is left out."""
    log = tmp_path / "access.log"
    log.write_bytes(b"1795000000.004      3 127.0.0.1 TCP_MISS/200 2474 GET http://o/1 - HIER_DIRECT/127.0.0.1 "
                    b"image/jpeg 5000 200 3f9c-1\n"
                    b"2.5 1234567 a TCP_HIT/200 3 GET u - h t 5002 9\n"  # 7 digits: no padding; no tag field
                    b"2.5 1 a b 3 GET u - h t 5002 9 - name extra tokens\n"
                    b"short line\n\n"
                    b"1.0 1 a NONE_NONE/000 0 - error:x - h t 5001 0 -\n"  # sent no request
                    b"1.0 x a TCP_MISS/200 0 GET u - h t 5001 0 -\n"  # elapsed not a number
                    b"1.0 1 a TCP_MISS/200 0 GET u - h t 5001 z -\n"  # request bytes not a number
                    b"1.000      5 a TCP_MISS/200 10 GET http://x/\xff\xfe - H t 5001 9 T1\n")
    con = duckdb.connect()
    names = [f.name for f in FIELDS]
    read_access_log(con, log, "lines", names)
    columns = ", ".join(f'"{name}"' for name in names)
    read = con.execute(f"SELECT {columns}, start, tag FROM lines WHERE request ORDER BY rowid").fetchall()
    expected = [(*r, r.start, r.tag) for r in python_reader(log) if not isinstance(r, BadLineError)]
    assert read == [r for r in expected if r[names.index("url")] != "http://x/\ufffd\ufffd"] and len(read) == 3
