"""Analysis on small hand-made run directories whose right answers are worked out here."""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from markupsafe import escape

from analysis import sections
from analysis.cli import main as report_main
from analysis.readers.records import COLLECTOR, load_jsonl, load_rope
from analysis.report import build_report, html_report, short_report, summary_json, text_report
from analysis.sections import figures, mismatches, paired
from analysis.sections.collector_ports import port_rows
from spe_tools.rundir.layout import RunDir
from spe_tools.summary_stats import mean_ci, median_ci, percentile


def measure(status=200, total_ms=1.0, ttfb_ms=0.5, connect_us=0, body=1000, header=200, md5="aa", error=None):
    return {"status": status, "http_version": "HTTP/1.1" if status else None, "header_bytes": header if status else 0,
            "bytes": body if status else 0, "md5": md5 if status else None, "connect_us": connect_us,
            "ttfb_us": int(ttfb_ms * 1000) if status else None, "total_us": int(total_ms * 1000), "error": error}


def proxy(name, result="OK", headers=(), **kw):
    return {**measure(**kw), "name": name, "position": 0, "result": result, "mismatched_headers": list(headers),
            "error_detail": None}


def record(i, collector, proxies, url=None):
    return {"ts": 1000.0 + i, "id": i, "client": "127.0.0.1:1", "method": "GET", "url": url or f"http://o/{i}",
            "version": "HTTP/1.1", "validation": False, "client_status": 200, "note": None,
            "collector": collector, "proxies": proxies}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """4 requests. good: OK, 1/2/3/4 ms. dead: refused every time. flaky: OK, BODY, OK, HEADER."""
    lines = []
    for i in range(1, 5):
        lines.append(record(i, measure(total_ms=10 * i), [
            proxy("good", total_ms=i, connect_us=100 if i == 1 else 0),
            proxy("dead", result="NO_RESPONSE", status=None, total_ms=0.1, error="refused"),
            proxy("flaky", result=["OK", "BODY_MISMATCH", "OK", "HEADER_MISMATCH"][i - 1], total_ms=2.0,
                  headers=["etag"] if i == 4 else []),
        ]))
    text = "\n".join(json.dumps(r) for r in lines[:2]) + "\n{\"id\": oops}\n"  # broken inside the braces
    text += "\n".join(json.dumps(r) for r in lines[2:]) + "\n"
    text += "this is not json\n" + json.dumps(lines[0])[:40]  # garbage, then a truncated last line
    RunDir(tmp_path).multiplier_log.write_text(text)
    RunDir(tmp_path).lab_json.write_text(json.dumps({"collector": {"ports": {"direct": 5000, "good": 5001,
                                                                             "flaky": 5003}},
                                                   "proxies": {}}))
    RunDir(tmp_path).access_log.parent.mkdir()
    log = [
        # the direct path pulled 4 replies of 1200 bytes and sent 4 requests of 100 bytes
        *[f"100.{i} 1 127.0.0.1 TCP_MISS/200 1200 GET http://o/{i} - HIER_DIRECT/o text/plain 5000 100"
          for i in range(1, 5)],
        # good forwarded one request (a miss), flaky two
        "101.0 1 127.0.0.1 TCP_MEM_HIT/200 1200 GET http://o/1 - HIER_NONE/- text/plain 5001 150",
        "102.0 1 127.0.0.1 TCP_MEM_HIT/200 1200 GET http://o/1 - HIER_NONE/- text/plain 5003 100",
        "102.1 1 127.0.0.1 TCP_MEM_HIT/200 600 GET http://o/2 - HIER_NONE/- text/plain 5003 100",
        "103.0 0 127.0.0.1 NONE_NONE/000 0 - error:transaction-end-before-headers - HIER_NONE/- - 5000 0",
        "garbage line",
    ]
    RunDir(tmp_path).access_log.write_text("\n".join(log) + "\n")
    return tmp_path


def test_percentiles_and_confidence_intervals():
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.99) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)
    assert mean_ci([1.0]) is None
    low, high = mean_ci([1.0, 2.0, 3.0, 4.0])  # mean 2.5, s = 1.2910, half = 1.96 * s / 2
    assert (low, high) == pytest.approx((2.5 - 1.96 * math.sqrt(5 / 3) / 2, 2.5 + 1.96 * math.sqrt(5 / 3) / 2))
    assert median_ci(list(map(float, range(100)))) == (40.0, 59.0)  # ranks 50 -/+ 9.8


def test_jsonl_loader_counts_bad_and_truncated_lines(run):
    records = load_jsonl(RunDir(run).multiplier_log)
    assert records.requests == 4
    assert records.bad_lines == 3
    assert records.proxies == ["good", "dead", "flaky"]
    assert records.results.filter(records.results["name"] == COLLECTOR).height == 4


def test_the_per_proxy_table(run):
    rows = {r["name"]: r for r in build_report(run).rows}
    good, dead, flaky, direct = rows["good"], rows["dead"], rows["flaky"], rows[COLLECTOR]
    assert (direct["requests"], direct["responses"]) == (4, 4)
    assert direct["latency_mean_ms"] == 25.0 and direct["latency_median_ms"] == 25.0
    assert (good["responses"], good["ok_pct"]) == (4, 100.0)
    assert good["latency_mean_ms"] == 2.5 and good["latency_median_ms"] == 2.5
    assert good["latency_p90_ms"] == pytest.approx(3.7) and good["latency_p99_ms"] == pytest.approx(3.97)
    assert good["connect_mean_ms"] == pytest.approx(0.025) and good["ttfb_mean_ms"] == 0.5
    # A proxy that answered nothing: no latency figures, all NO_RESPONSE.
    assert (dead["responses"], dead["ok_pct"], dead["no_response_pct"]) == (0, 0.0, 100.0)
    assert dead["latency_mean_ms"] is None and dead["latency_median_ms"] is None
    assert (flaky["ok_pct"], flaky["body_mismatch_pct"], flaky["header_mismatch_pct"]) == (50.0, 25.0, 25.0)
    # Cache behaviour from the Collector's ports: good forwarded 1 of 4 requests, flaky 2 of 4.
    assert good["hit_ratio"] == 0.75 and flaky["hit_ratio"] == 0.5
    assert good["byte_hit_ratio"] == pytest.approx(1 - 1200 / 4800)  # delivered 4 x (1000 + 200)
    assert good["rel_bandwidth_received"] == pytest.approx(1200 / 4800)
    assert good["rel_bandwidth_sent"] == pytest.approx(150 / 400)
    assert flaky["rel_bandwidth_received"] == pytest.approx(1800 / 4800)
    assert dead["hit_ratio"] is None and dead["byte_hit_ratio"] is None  # delivered nothing: no ratio
    assert direct["rel_bandwidth_received"] == 1.0 and direct["hit_ratio"] is None


def conformance_like_run(path: Path, tagged: bool = True) -> Path:
    """8 requests, tagged as the Multiplier tags them. reuser: 4 GETs answered from its cache (no Collector
    request), then 4 PUTs it forwarded to its Collector port and whose legs failed (the replay port refused them:
    a 502 recorded REPLAY_REFUSED, error `replay refused`). missing: every GET a miss, its PUTs answered (OK)."""
    records = []
    for i in range(1, 9):
        put = i > 4
        reuser = (proxy("reuser", result="REPLAY_REFUSED", status=502, error="replay refused") if put
                  else proxy("reuser"))
        rec = record(i, measure(), [reuser, proxy("missing")], url=f"http://o/{i % 4}")
        rec["method"] = "PUT" if put else "GET"
        rec["tag"] = f"t-{i}" if tagged else None
        records.append(rec)
    RunDir(path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records))
    RunDir(path).lab_json.write_text(json.dumps({"collector": {"ports": {"direct": 5000, "reuser": 5001,
                                                                         "missing": 5002}}, "proxies": {}}))
    RunDir(path).access_log.parent.mkdir()
    log = []
    for i in range(1, 9):
        method, tag = ("PUT" if i > 4 else "GET"), (f"t-{i}" if tagged else "-")
        log.append(f"100.{i} 1 127.0.0.1 TCP_MISS/200 1200 {method} http://o/{i % 4} - HIER_DIRECT/o text/plain "
                   f"5000 100 {tag}")
        log.append(f"101.{i} 1 127.0.0.1 TCP_MISS/200 1200 {method} http://o/{i % 4} - HIER_NONE/- text/plain "
                   f"5002 100 {tag}")
        if i > 4:  # reuser's PUTs reached its Collector port; its GETs did not
            log.append(f"102.{i} 1 127.0.0.1 TCP_MISS/502 1200 PUT http://o/{i % 4} - HIER_NONE/- text/plain "
                       f"5001 100 {tag}")
    RunDir(path).access_log.write_text("\n".join(log) + "\n")
    return path


def test_a_failed_legs_collector_requests_are_no_misses(tmp_path):
    """The conformance run's defect: every proxy's hit ratio 0.00 while the judge counted hundreds of reuses. The
    failed legs' Collector requests were counted as misses of the responses delivered, without those legs."""
    rows = {r["name"]: r for r in build_report(conformance_like_run(tmp_path)).rows}
    reuser, missing = rows["reuser"], rows["missing"]
    assert reuser["responses"] == 4 and reuser["collector_requests"] == 4  # the PUTs' requests, still listed
    assert reuser["hit_ratio"] == 1.0 and reuser["byte_hit_ratio"] == 1.0  # was 0.00: 4 requests / 4 responses
    assert missing["hit_ratio"] == 0.0 and missing["responses"] == 8  # its PUTs were answered: misses as ever


def test_without_tags_a_failed_legs_requests_cannot_be_told_apart(tmp_path):
    """A log from before request tags: the Collector requests are counted as before."""
    rows = {r["name"]: r for r in build_report(conformance_like_run(tmp_path, tagged=False)).rows}
    assert rows["reuser"]["hit_ratio"] == 0.0 and rows["missing"]["hit_ratio"] == 0.0


def test_collector_ports_and_mismatch_report(run):
    rep = build_report(run)
    ports = {r["port"]: r for r in port_rows(rep)}
    assert (ports["direct"]["requests"], ports["direct"]["hits"], ports["direct"]["bytes_out"]) == (4, 0, 4800)
    assert (ports["flaky"]["requests"], ports["flaky"]["hits"], ports["flaky"]["misses"]) == (2, 2, 0)
    assert rep.bad_collector_lines == 1  # the garbage line; the no-request probe line is not counted
    m = mismatches.of(rep)
    assert m["by_proxy"] == {"dead": {"NO_RESPONSE": 4}, "flaky": {"BODY_MISMATCH": 1, "HEADER_MISMATCH": 1}}
    assert m["headers"] == [("etag", 1)]
    assert [e["id"] for e in m["examples"]["HEADER_MISMATCH"]] == [4]
    assert "stale" in m["examples"]["HEADER_MISMATCH"][0]["hint"]
    assert "did not answer (refused)" in m["examples"]["NO_RESPONSE"][0]["hint"]


def test_a_run_without_proxies(tmp_path):
    RunDir(tmp_path).multiplier_log.write_text(json.dumps(record(1, measure(), [])) + "\n")
    rep = build_report(tmp_path)
    assert [r["name"] for r in rep.rows] == [COLLECTOR]
    assert drawn(rep) == FIGURES  # with no proxy to plot


def drawn(rep) -> set[str]:
    """The figures of the report drawn, by name (each a PNG file's contents)."""
    return {name for name, png in figures.of(rep).items() if png.startswith(b"\x89PNG\r\n")}


FIGURES = {"latency_cdf.png", "latency_over_time.png", "hit_ratio_vs_latency.png", "bandwidth_vs_latency.png"}


def test_rope_text_log(tmp_path):
    log = tmp_path / "old.rope.log"
    log.write_text(
        "Wed Jun 20 02:10:11 2001:(pid=4630):RESULT: Collector: 0:34195 0:34090 5083 {DUMMY,} 192.168.0.2 "
        "non-validation HTTP/1.0 GET http://www.cs.rutgers.edu/\n"
        "Wed Jun 20 02:10:11 2001:(pid=4630):RESULT: Proxy-1: 0:108105 0:50553 5083 {200,200,OK,} 192.168.0.2 "
        "non-validation HTTP/1.0 GET http://www.cs.rutgers.edu/\n"
        "Wed Jun 20 02:10:11 2001:(pid=4630):RESULT: Proxy-2: 1:180157 0:3868 5083 {200,200,HEADER_MISMATCH,etag,} "
        "192.168.0.2 non-validation HTTP/1.0 GET http://www.cs.rutgers.edu/\nbroken line\n")
    records = load_rope(log)
    assert (records.requests, records.bad_lines, records.proxies) == (1, 1, ["Proxy-1", "Proxy-2"])
    rep = build_report(log)
    rows = {r["name"]: r for r in rep.rows}
    assert rows["Proxy-1"]["latency_mean_ms"] == pytest.approx(158.658)
    assert rows["Proxy-2"]["latency_mean_ms"] == pytest.approx(1184.025)
    assert rows["Proxy-2"]["header_mismatch_pct"] == 100.0
    assert drawn(rep) == FIGURES


def test_cli_writes_every_format(run, capsys):
    assert report_main([str(run), "--out", str(run / "out")]) == 0
    names = {p.name for p in (run / "out").iterdir()}
    assert {"report.html", "summary.csv", "summary.json", "report.txt", "latency_cdf.png"} <= names
    summary = json.loads((run / "out" / "summary.json").read_text())
    assert [p["name"] for p in summary["proxies"]] == [COLLECTOR, "good", "dead", "flaky"]
    assert (run / "out" / "summary.csv").read_text().splitlines()[0].startswith("name,requests,responses,ok_pct")
    assert "Report written" in capsys.readouterr().out
    page = (run / "out" / "report.html").read_text()
    for png in FIGURES:
        inlined = base64.b64encode((run / "out" / png).read_bytes()).decode()
        assert f"src='data:image/png;base64,{inlined}'" in page  # the page shows the files' very figures
    assert plt.get_fignums() == []  # each figure closed once drawn


def test_the_tables_text_and_summary_draw_no_figure(run, monkeypatch):
    """matplotlib is most of a small report's time: only the outputs that show the figures draw them."""
    def no_drawing(fig):
        raise AssertionError("a figure was drawn")

    monkeypatch.setattr(figures, "png_bytes", no_drawing)
    rep = build_report(run)
    assert text_report(rep) and summary_json(rep)["proxies"] and short_report(rep)
    assert report_main([str(run), "--out", str(run / "out"), "--format", "csv,json,text"]) == 0
    assert sorted(p.name for p in (run / "out").iterdir()) == ["report.txt", "summary.csv", "summary.json"]
    with pytest.raises(AssertionError, match="a figure was drawn"):
        html_report(rep)


def test_compare_runs_side_by_side(run, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    RunDir(other).multiplier_log.write_text(json.dumps(record(1, measure(total_ms=5), [proxy("good", total_ms=8)]))
                                            + "\n")
    out = tmp_path / "cmp"
    assert report_main(["--compare", str(run), str(other), "--out", str(out)]) == 0
    rows = json.loads((out / "compare.json").read_text())
    good = [r for r in rows if r["name"] == "good"]
    assert [r["latency_median_ms"] for r in good] == [2.5, 8.0]
    dead = [r for r in rows if r["name"] == "dead"]
    assert dead[1]["requests"] is None  # not in the second run
    assert "good" in capsys.readouterr().out


def uncacheable_body_mismatch_run(path: Path, lab: dict | None, squid_conf: str | None = None) -> Path:
    """One request whose uncacheable Collector reply a proxy answered with another body, and its capture."""
    path.mkdir()
    RunDir(path).multiplier_log.write_text(json.dumps(record(1, measure(md5="aa"), [
        proxy("squid1", result="BODY_MISMATCH", md5="bb")])) + "\n")
    RunDir(path).captures.mkdir()
    (RunDir(path).captures / "00000001-squid1.txt").write_text(
        "# SPE mismatch capture\nrequest: 1 GET http://o/1 HTTP/1.1\nproxy: squid1\nresult: BODY_MISMATCH\n"
        "\n## Collector reply header\nHTTP/1.1 200 OK\r\nCache-Control: private, no-cache\r\n\r\n"
        "\n## Collector body: first 4 of 4 bytes, md5 aa\nspe1\n"
        "\n## Proxy reply header\nHTTP/1.1 200 OK\r\nCache-Control: private, no-cache\r\n\r\n"
        "\n## Proxy body: first 4 of 4 bytes, md5 bb\nspe2\n")
    if lab is not None:
        RunDir(path).lab_json.write_text(json.dumps(lab))
    if squid_conf is not None:
        RunDir(path).access_log.parent.mkdir()
        RunDir(path).collector_conf.write_text(squid_conf)
    return path


def uncacheable_hint(run: Path) -> str:
    rep = build_report(run)
    hint = mismatches.of(rep)["examples"]["BODY_MISMATCH"][0]["hint"]
    assert hint in text_report(rep) and html.escape(hint) in html_report(rep)
    return hint


def test_uncacheable_body_mismatch_hint_names_the_runs_collector(tmp_path):
    patched = uncacheable_hint(uncacheable_body_mismatch_run(
        tmp_path / "patched", {"collector": {"kind": "spe", "uncacheable_ttl_s": 180, "ports": {}}}))
    assert "patched Collector" in patched and "caching bug" in patched
    assert "stock" not in patched  # the run had the patched one: no excuse from a stock Collector
    stock = uncacheable_hint(uncacheable_body_mismatch_run(
        tmp_path / "stock", {"collector": {"kind": "squid", "ports": {}}}))
    assert "stock Squid" in stock and "expected" in stock and "caching bug" not in stock
    # The patched Collector with sharing turned off fetches again for each proxy, like stock Squid.
    unshared = uncacheable_hint(uncacheable_body_mismatch_run(
        tmp_path / "unshared", {"collector": {"kind": "spe", "uncacheable_ttl_s": 0, "ports": {}}}))
    assert "uncacheable_ttl_s = 0" in unshared and "expected" in unshared and "caching bug" not in unshared
    # No lab.json: the Collector's own configuration tells the patched one (collector_* directives).
    from_conf = uncacheable_hint(uncacheable_body_mismatch_run(
        tmp_path / "conf", None, "http_port 127.0.0.1:1\ncollector_uncacheable_ttl 180 seconds\n"))
    assert "patched Collector" in from_conf and "stock" not in from_conf
    unknown = uncacheable_hint(uncacheable_body_mismatch_run(tmp_path / "unknown", None))
    assert "does not record" in unknown


def test_skipped_fan_outs_are_counted_by_reason(tmp_path):
    """2 records fanned out, 3 did not (client gone twice, the Collector failed once with its detail):
    the report says so, so client requests = proxy requests + skipped fan-outs."""
    lines = [record(1, measure(), [proxy("good")]), record(2, measure(), [proxy("good")])]
    gone = "no fan-out: the client went away during the reply"
    for i, note in ((3, gone), (4, gone), (5, "no fan-out: the Collector at 127.0.0.1:9 failed: timeout "
                                               "(reading the header: timed out)")):
        lines.append({**record(i, measure(status=None, error="timeout"), []), "note": note})
    RunDir(tmp_path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    rep = build_report(tmp_path)
    assert rep.requests == 5 and {r["name"]: r["requests"] for r in rep.rows}["good"] == 2
    assert rep.skipped == {"the client went away during the reply": 2,
                           "the Collector at 127.0.0.1:9 failed: timeout": 1}
    text = text_report(rep)
    assert "3 fan-outs skipped" in text and "2 the client went away during the reply" in text
    assert "3 fan-outs skipped" in html_report(rep)
    assert report_main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["skipped_fanouts"] == rep.skipped


def test_no_skipped_fan_outs_line_when_every_request_fanned_out(run):
    rep = build_report(run)
    assert rep.skipped == {} and "fan-outs skipped" not in text_report(rep) + html_report(rep)


def test_spes_own_queueing_is_reported_apart_from_the_proxies_times(tmp_path):
    """4 records: the client held back before two of them (0.5 s and 1.5 s); slow's legs waited 0, 100, 200
    and 300 ms for their turn, fast's never. The report says so, and no latency column includes the wait."""
    lines = []
    for i in range(1, 5):
        r = record(i, measure(), [{**proxy("slow", total_ms=2.0), "queued_us": (i - 1) * 100_000},
                                  {**proxy("fast", total_ms=1.0), "queued_us": 0}])
        if i >= 3:
            r["client_held_us"] = 500_000 if i == 3 else 1_500_000
        lines.append(r)
    RunDir(tmp_path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    rep = build_report(tmp_path)
    assert rep.held == {"requests": 2, "total_s": 2.0}
    rows = {r["name"]: r for r in rep.rows}
    assert rows["slow"]["queued_median_ms"] == pytest.approx(150.0)
    assert rows["slow"]["queued_p99_ms"] == pytest.approx(297.0)
    assert rows["slow"]["latency_median_ms"] == pytest.approx(2.0)  # the proxy's own time only
    assert rows["fast"]["queued_median_ms"] == 0.0 and rows[COLLECTOR]["queued_median_ms"] is None
    line = "client held back before 2 request(s) (2.00 s in all); legs' wait to be sent, median/p99 ms: " \
           "slow 150.00/297.00, fast 0.00/0.00"
    assert line in text_report(rep)
    assert str(escape(line)) in html_report(rep)  # as the report's templates escape it
    assert report_main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["client_held"] == {"requests": 2, "total_s": 2.0}
    assert {r["name"]: r["queued_p99_ms"] for r in summary["proxies"]}["slow"] == pytest.approx(297.0)


def test_a_log_without_holds_reports_the_waits_alone(tmp_path):
    """A run SPE's measuring kept up with (the Multiplier holds the client for nothing else): no hold is
    reported, the waits are."""
    lines = [record(i, measure(), [{**proxy("slow", total_ms=2.0), "queued_us": i * 100_000}]) for i in range(1, 3)]
    RunDir(tmp_path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    text = text_report(build_report(tmp_path))
    assert "SPE's queueing (in no proxy's times): legs' wait to be sent, median/p99 ms: slow " in text
    assert "held back" not in text
    # an answer to "Can I trust this run?" (what SPE itself added), before the per-proxy table
    trust = text.index("Can I trust this run?")
    assert trust < text.index("SPE's queueing") < text.index("Per proxy (ROPE's Tables 1 and 2):")


@pytest.mark.parametrize("engine", ["duckdb", "memory"])
def test_legs_sent_out_of_the_clients_order_are_counted_per_proxy(tmp_path, engine):
    """Request 1 hung at `hung`: its legs of requests 2-4 went past it (overtook [1]); `fine` kept the order. The
    report counts them under "Can I trust this run?" and in summary.json, on either engine."""
    lines = [record(1, measure(), [proxy("hung", result="NO_RESPONSE", status=None, error="timeout"), proxy("fine")])]
    lines += [record(i, measure(), [{**proxy("hung"), "overtook": [1]}, proxy("fine")]) for i in range(2, 5)]
    lines[3]["url"] = lines[0]["url"]  # request 4 is for request 1's URL: its cache state may differ
    RunDir(tmp_path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    rep = build_report(tmp_path, engine=engine)
    rows = {r["name"]: r for r in rep.rows[1:]}
    assert (rows["hung"]["out_of_order_legs"], rows["fine"]["out_of_order_legs"]) == (3, 0)
    assert rep.data["out-of-order"] == {"hung": {"legs": 3, "related": 1, "overtaken": 1}}
    text = text_report(rep)
    trust = text[text.index("Can I trust this run?"):]
    assert "out of the client's order (an earlier leg still out after --order-wait): hung 3 of 4 (past 1 request(s) " \
           "it was still answering; 1 past one for the same URL or an unsafe one)" in trust
    summary = summary_json(rep)
    assert summary["out_of_order_legs"] == {"hung": {"legs": 3, "related": 1, "overtaken": 1}}
    assert {r["name"]: r["out_of_order_legs"] for r in summary["proxies"][1:]} == {"hung": 3, "fine": 0}


def test_a_run_in_the_clients_order_has_no_out_of_order_section(run):
    rep = build_report(run)
    assert "out-of-order" not in [s.name for s in sections.shown(rep)]
    assert "out of the client's order" not in text_report(rep)


def test_a_log_without_queueing_fields_reports_none(run):
    rep = build_report(run)
    assert rep.held == {"requests": 0, "total_s": 0.0}
    assert all(r["queued_median_ms"] is None for r in rep.rows)
    assert "SPE's queueing" not in text_report(rep)


def test_https_is_counted_and_an_intercepted_connect_is_no_skipped_fan_out(tmp_path):
    connect = {**record(1, measure(status=None), [], url="localhost:8443"), "method": "CONNECT",
               "note": "CONNECT intercepted: TLSv1.3, certificate for localhost"}
    opaque = {**record(2, measure(status=200), [], url="bank.example:443"), "method": "CONNECT",
              "note": "CONNECT tunnel (not multiplied: --no-intercept *.example): 10 bytes up, 20 bytes down"}
    failed = {**record(3, measure(status=None), [], url="localhost:8443"), "method": "CONNECT",
              "note": "CONNECT intercepted: TLS handshake failed: the client closed the connection during the "
                      "handshake"}
    lines = [connect, opaque, failed, {**record(4, measure(), [proxy("good")], url="https://localhost:8443/a"),
                                       "intercepted": True},
             record(5, measure(), [proxy("good")], url="http://localhost:8080/b")]
    RunDir(tmp_path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    rep = build_report(tmp_path)
    assert rep.https == {"requests": 1, "intercepted_tunnels": 1, "opaque_tunnels": 1, "failed_handshakes": 1}
    assert set(rep.skipped) == {"CONNECT tunnel (not multiplied: --no-intercept *.example)",
                                "CONNECT intercepted: TLS handshake failed: the client closed the connection "
                                "during the handshake"}
    text = text_report(rep)
    assert ("HTTPS: 1 requests read inside 1 intercepted TLS tunnels, multiplied like HTTP; 1 CONNECT tunnels "
            "passed unread; 1 TLS handshakes failed") in text
    assert "intercepted TLS tunnels" in html_report(rep)
    assert report_main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["https"] == rep.https


def paired_run(path: Path) -> Path:
    """slow = base + 10 ms on every request, twin = base + noise of mean 0 (-0.5 to +0.5 ms), base spread
    over 1..300 ms; slow fails once."""
    lines = []
    for i in range(1, 301):
        base = float((i * 37) % 300 + 1)
        lines.append(record(i, measure(total_ms=base), [proxy("base", total_ms=base),
                                                        proxy("slow", total_ms=base + 10),
                                                        proxy("twin", total_ms=base + ((i * 7919) % 11 - 5) / 10)]))
    lines[5]["proxies"][1] = proxy("slow", status=None, error="timeout")  # one failed leg: left out of its pairs
    RunDir(path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_paired_comparison_finds_a_known_difference_and_calls_the_rest_a_tie(tmp_path):
    """Unpaired, the spread between requests hides slow's 10 ms; paired it is exact. The ranking puts base and
    twin in one tier, slow after."""
    rep = build_report(paired_run(tmp_path))
    by_pair = {(p["a"], p["b"]): p for p in paired.pairs_of(rep)}
    slow = by_pair[("base", "slow")]
    assert slow["n"] == 299 and slow["mean_ms"] == pytest.approx(-10) and slow["median_ms"] == pytest.approx(-10)
    assert slow["mean_ci_low_ms"] == pytest.approx(-10) and slow["significant"] and slow["faster"] == "base"
    twin = by_pair[("base", "twin")]
    assert twin["n"] == 300 and not twin["significant"] and twin["faster"] is None
    assert twin["mean_ci_low_ms"] < 0 < twin["mean_ci_high_ms"]
    assert [set(tier) for tier in paired.ranking_of(rep)] == [{"base", "twin"}, {"slow"}]
    text = text_report(rep)
    first = " = ".join(paired.ranking_of(rep)[0])
    assert "Ranking (paired, 95 %; '=' a tie the run cannot split): " + first + " > slow" in text
    assert "base - slow: mean -10.00 [-10.00, -10.00], median -10.00 [-10.00, -10.00], n 299: base faster" in text
    assert "Paired comparison" in html_report(rep) and "base faster" in html_report(rep)
    assert report_main([str(tmp_path), "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["ranking"] == paired.ranking_of(rep) and len(summary["pairs"]) == 3


def test_the_ranking_only_orders_what_is_significant_across_tiers():
    from analysis.sections.paired import ranking
    rows = [{"name": n, "latency_mean_ms": m} for n, m in (("a", 1.0), ("b", 2.0), ("c", 3.0))]
    # a beats c, but b ties both: nobody can be put after anyone for certain
    pairs = [{"a": "a", "b": "b", "faster": None}, {"a": "a", "b": "c", "faster": "a"},
             {"a": "b", "b": "c", "faster": None}]
    assert ranking(rows, pairs) == [["a", "b", "c"]]
    pairs[1:] = [{"a": "a", "b": "c", "faster": "a"}, {"a": "b", "b": "c", "faster": "b"}]
    assert ranking(rows, pairs) == [["a", "b"], ["c"]]


def test_the_paired_matrix_shows_each_pair_from_both_sides(tmp_path):
    """One cell per ordered pair, the row's latency minus the column's: base - slow is -10 ms (base faster),
    slow - base +10 ms with the interval mirrored; proxies in ranking order, nothing on the diagonal."""
    from analysis.sections.paired import matrix
    rep = build_report(paired_run(tmp_path))
    names, cells = matrix(paired.pairs_of(rep), paired.ranking_of(rep))
    assert set(names[:2]) == {"base", "twin"} and names[2] == "slow"
    at = {(a, b): cells[i][j] for i, a in enumerate(names) for j, b in enumerate(names)}
    assert at[("base", "base")] is None
    assert (at[("base", "slow")]["mean_ms"], at[("base", "slow")]["verdict"]) == (pytest.approx(-10), "faster")
    slow = at[("slow", "base")]
    assert (slow["mean_ms"], slow["verdict"], slow["n"]) == (pytest.approx(10), "slower", 299)
    forward = at[("base", "slow")]
    assert (slow["mean_ci_low_ms"], slow["mean_ci_high_ms"]) == (-forward["mean_ci_high_ms"],
                                                                 -forward["mean_ci_low_ms"])
    assert at[("base", "twin")]["verdict"] == at[("twin", "base")]["verdict"] == "tie"
    page = html_report(rep)
    matrix_html = page[page.index('<h2 id="paired">'):]
    assert '<td class="bad" title="slow − base: median +10.00 ms' in matrix_html
    text = text_report(rep)
    slow_row = next(line for line in text.splitlines() if line.startswith("  slow "))
    assert slow_row.split() == ["slow", "+10.00*", "+10.00*", "."]
