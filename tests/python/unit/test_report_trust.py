"""How far a report can be trusted, on hand-made run directories whose right answers are worked out here:
SPE's own noise floor (the dummy, noise pairs) beside each proxy's mismatch rate, and proxies whose replies
did not come through their Collector port (no hit ratio or bandwidth printed for them)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from test_analysis import measure, proxy, record

from analysis.cli import main as report_main
from analysis.readers.records import load_jsonl
from analysis.report import build_report, text_report, text_table
from analysis.sections import bypass, mismatches, noise
from analysis.sections.collector_ports import port_rows
from spe_tools.rundir.layout import RunDir


def write_run(path: Path, records: list[dict], lab: dict | None = None, access_log: list[str] | None = None) -> Path:
    RunDir(path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records))
    if lab is not None:
        RunDir(path).lab_json.write_text(json.dumps(lab))
    if access_log is not None:
        RunDir(path).access_log.parent.mkdir()
        RunDir(path).access_log.write_text("".join(line + "\n" for line in access_log))
    return path


def topology(kinds: dict[str, str], pairs: list[list[str]] = (), ports: dict[str, int] | None = None) -> dict:
    return {"collector": {"ports": ports or {"direct": 5000}},
            "proxies": {name: {"kind": kind} for name, kind in kinds.items()}, "noise_pairs": list(pairs)}


def noisy_run(path: Path) -> Path:
    """4 requests. squid and squid-twin: a noise pair; they disagree on request 2 (body) and the twin does not
    answer request 4, so they disagree on 1 of the 3 requests both answered. dummy: 1 of 4 differs.
    varnish: 2 of 4 differ (50 %, above the floor of 33.33 %); nginx: none."""
    records = []
    for i in range(1, 5):
        records.append(record(i, measure(), [
            proxy("squid"),
            proxy("squid-twin", result="BODY_MISMATCH", md5="bb") if i == 2 else
            proxy("squid-twin", result="NO_RESPONSE", status=None, error="timeout") if i == 4 else proxy("squid-twin"),
            proxy("dummy", result="HEADER_MISMATCH", headers=["date"]) if i == 3 else proxy("dummy"),
            proxy("varnish", result="HEADER_MISMATCH", headers=["age"]) if i <= 2 else proxy("varnish"),
            proxy("nginx"),
        ]))
    kinds = {"squid": "squid", "squid-twin": "squid", "dummy": "dummy", "varnish": "varnish", "nginx": "nginx"}
    return write_run(path, records, topology(kinds, [["squid", "squid-twin"]]))


def test_the_noise_floor_and_each_proxy_beside_it(tmp_path):
    rep = build_report(noisy_run(tmp_path))
    floor = noise.of(rep)
    assert floor["measured"] and not floor["zero"]
    assert floor["pairs"] == [{"a": "squid", "b": "squid-twin", "both_answered": 3, "disagreements": 1,
                               "pct": 100 / 3}]
    assert floor["dummies"] == [{"name": "dummy", "requests": 4, "mismatches": 1, "pct": 25.0}]
    assert floor["floor_pct"] == 100 / 3
    text = text_report(rep)  # the floor opens the verdict's answer to "Can I trust this run?"
    trust = text[text.index("\nCan I trust this run?\n") + len("\nCan I trust this run?\n"):]
    assert trust.startswith(
        "Noise floor: 33.33 % (dummy 1 of 4 replies differ from the Collector's; squid = squid-twin disagree on "
        "1 of 3 requests; goal: 0)\n")
    assert text.index(trust) < text.index(text_table(rep.rows))  # the verdict comes first
    beside = [" ".join(line.split()) for line in trust.splitlines()[1:6]]
    assert beside == ["squid 0.00 % mismatches, within the noise floor",
                      "squid-twin 50.00 % mismatches, above the noise floor",
                      "dummy 25.00 % mismatches, within the noise floor",
                      "varnish 50.00 % mismatches, above the noise floor",
                      "nginx 0.00 % mismatches, within the noise floor"]


def test_the_noise_floor_in_every_format(tmp_path, capsys):
    run = noisy_run(tmp_path)
    assert report_main([str(run)]) == 0
    assert "Noise floor: 33.33 %" in capsys.readouterr().out
    summary = json.loads((run / "report/summary.json").read_text())
    assert summary["noise_floor"]["floor_pct"] == 100 / 3 and summary["noise_floor"]["pairs"][0]["disagreements"] == 1
    rows = {r["name"]: r for r in summary["proxies"]}
    assert rows["varnish"]["mismatch_pct"] == 50 and rows["varnish"]["noise_floor"] == "above"
    assert rows["nginx"]["noise_floor"] == "within" and rows["nginx"]["noise_floor_pct"] == 100 / 3
    with open(run / "report/summary.csv") as f:
        csv_rows = {r["name"]: r for r in csv.DictReader(f)}
    assert csv_rows["varnish"]["noise_floor"] == "above" and float(csv_rows["varnish"]["mismatch_pct"]) == 50
    assert float(csv_rows["squid-twin"]["noise_pair_disagreement_pct"]) == float(csv_rows["squid"][
        "noise_pair_disagreement_pct"]) == 100 / 3 and csv_rows["varnish"]["noise_pair_disagreement_pct"] == ""
    page = (run / "report/report.html").read_text()
    assert '<h2 id="noise-floor">Noise floor</h2>' in page and "squid = squid-twin" in page


def test_a_zero_noise_floor_meets_the_goal(tmp_path):
    records = [record(i, measure(), [proxy("a"), proxy("b"), proxy("dummy")]) for i in range(1, 4)]
    rep = build_report(write_run(tmp_path, records, topology({"a": "squid", "b": "squid", "dummy": "dummy"},
                                                             [["a", "b"]])))
    assert noise.of(rep)["zero"] and noise.of(rep)["floor_pct"] == 0
    assert ("Noise floor: 0.00 % (dummy 0 of 3 replies differ from the Collector's; a = b disagree on 0 of 3 "
            "requests; goal met: SPE agrees with itself)") in text_report(rep)


def test_a_run_without_dummy_or_pair_says_the_floor_was_not_measured(tmp_path):
    records = [record(i, measure(), [proxy("squid"), proxy("ats")]) for i in range(1, 3)]
    rep = build_report(write_run(tmp_path, records, topology({"squid": "squid", "ats": "trafficserver"})))
    assert not noise.of(rep)["measured"]
    assert ("Noise floor: not measured (this lab has no dummy proxy and no noise pair, two proxies of the same kind "
            "and settings)") in text_report(rep)
    bare = build_report(RunDir(tmp_path).multiplier_log)  # a log file alone: kinds unknown
    assert "Noise floor: not measured (no lab.json" in text_report(bare)


def stamped(fetch: str | None = "f1", **kw) -> dict:
    return {**measure(**kw), "fetch": fetch}


def stamped_proxy(name: str, fetch: str | None = "f1", **kw) -> dict:
    return {**proxy(name, **kw), "fetch": fetch}


def test_a_mismatch_from_a_fetch_of_the_proxys_own_says_so(tmp_path):
    """nginx forwarded a HEAD as a GET: its reply names another origin fetch than the client's; squid's
    differing reply came from the client's own fetch, so no such hint for it."""
    head = record(1, stamped("c0ffee.7; t=1.5"), [
        stamped_proxy("nginx", "c0ffee.9; t=1.6", result="HEADER_MISMATCH", headers=["x-origin-serial"]),
        stamped_proxy("squid", "c0ffee.7; t=1.5", result="HEADER_MISMATCH", headers=["x-origin-serial"])])
    head["method"] = "HEAD"
    rep = build_report(write_run(tmp_path, [head], topology({"nginx": "nginx", "squid": "squid"})) /
                       "multiplier.jsonl")
    hints = {e["proxy"]: e["hint"] for e in mismatches.of(rep)["examples"]["HEADER_MISMATCH"]}
    assert "another origin fetch than the client's (c0ffee.9 instead of c0ffee.7)" in hints["nginx"]
    assert "a HEAD it forwarded as a GET" in hints["nginx"]
    assert hints["squid"] is None
    assert "another origin fetch" in text_report(rep)


PORTS = {"direct": 5000, "squid": 5001, "ats": 5002}


def origin_fetch(i: int, port: int = 5000, hierarchy: str = "HIER_DIRECT/127.0.0.1", code: str = "TCP_MISS") -> str:
    return f"100.{i} 1 127.0.0.1 {code}/200 1200 GET http://o/{i} - {hierarchy} text/plain {port} 100"


def test_the_fetch_stamp_is_read_from_the_log(tmp_path):
    write_run(tmp_path, [record(1, stamped("f7"), [stamped_proxy("squid", "f3"), stamped_proxy("ats", None)])])
    results = load_jsonl(RunDir(tmp_path).multiplier_log).results
    assert results.sort("name")["fetch"].to_list() == ["f7", None, "f3"]  # Collector (direct), ats, squid


def test_replies_without_the_collector_stamp_get_no_cache_figures(tmp_path):
    """ats fetched from the origin itself: no stamp on 4 of its 5 checked replies, while its port saw a request
    (so only the stamp tells). squid's replies carry an older fetch's stamp (a cached copy): fine. A 304 and a
    503 of the proxy's own carry none and prove nothing."""
    records = [record(i, stamped(f"f{i}"), [stamped_proxy("squid", "f1"), stamped_proxy("ats", None)])
               for i in range(1, 5)]
    records.append(record(5, stamped("f5", status=304, body=0), [stamped_proxy("squid", None, status=304, body=0),
                                                                stamped_proxy("ats", None, status=304, body=0)]))
    records.append(record(6, stamped("f6"), [stamped_proxy("squid", None, status=503, result="STATUS_CODE_MISMATCH"),
                                             stamped_proxy("ats", "f6")]))
    log = [origin_fetch(i) for i in range(1, 7)] + [origin_fetch(1, 5001, "HIER_NONE/-", "TCP_MEM_HIT"),
                                                    origin_fetch(6, 5002, "HIER_NONE/-", "TCP_MEM_HIT")]
    rep = build_report(write_run(tmp_path, records, topology({"squid": "squid", "ats": "trafficserver"},
                                                             ports=PORTS), log))
    assert set(bypass.of(rep)) == {"ats"} and bypass.of(rep)["ats"]["unstamped"] == 4
    rows = {r["name"]: r for r in rep.rows}
    for column in ("hit_ratio", "byte_hit_ratio", "rel_bandwidth_received", "rel_bandwidth_sent"):
        assert rows["ats"][column] is None, column
        assert rows["squid"][column] is not None, column
    assert rows["ats"]["bypassed_replies"] == 4 and rows["squid"]["bypassed_replies"] == 0
    text = text_report(rep)
    assert ("\nats: 4 of 5 replies did not come through its Collector port (no Collector stamp); hit ratio and "
            "bandwidth not computed\n") in text
    ats_line = next(line for line in text.splitlines() if line.startswith("ats "))
    assert ats_line.split()[-4:] == ["-", "-", "-", "-"]


def test_a_silent_collector_port_gets_no_cache_figures(tmp_path):
    """No stamps at all (a Collector without them): ats's Collector port saw no request while ats answered
    every request the Collector fetched from the origin; squid's port saw its misses."""
    records = [record(i, measure(), [proxy("squid"), proxy("ats")]) for i in range(1, 5)]
    log = [origin_fetch(i) for i in range(1, 5)] + [origin_fetch(1, 5001, "HIER_NONE/-", "TCP_MEM_HIT")]
    rep = build_report(write_run(tmp_path, records, topology({"squid": "squid", "ats": "trafficserver"},
                                                             ports=PORTS), log))
    assert set(bypass.of(rep)) == {"ats"} and bypass.of(rep)["ats"]["silent_port_replies"] == 4
    rows = {r["name"]: r for r in rep.rows}
    assert rows["ats"]["hit_ratio"] is None and rows["squid"]["hit_ratio"] == 0.75
    assert ("ats: its Collector port saw no request while it answered 4 requests the Collector fetched from the "
            "origin; hit ratio and bandwidth not computed") in text_report(rep)


def test_a_silent_port_without_origin_fetches_is_no_evidence(tmp_path):
    """The Collector answered every request from its cache: nothing says where ats's replies came from."""
    records = [record(i, measure(), [proxy("ats")]) for i in range(1, 3)]
    log = [origin_fetch(i, 5000, "HIER_NONE/-", "TCP_MEM_HIT") for i in range(1, 3)]
    rep = build_report(write_run(tmp_path, records, topology({"ats": "trafficserver"}, ports=PORTS), log))
    assert bypass.of(rep) == {} and {r["name"]: r for r in rep.rows}["ats"]["hit_ratio"] == 1.0


def test_a_proxy_whose_collector_port_is_unknown_is_not_judged_and_a_silent_port_is_listed(tmp_path):
    """lab.json names no port for "mine" (nothing says where its requests would arrive): no evidence. ats's
    port is named and silent: the Collector-per-port table shows it with 0 requests."""
    records = [record(i, measure(), [proxy("ats"), proxy("mine")]) for i in range(1, 3)]
    log = [origin_fetch(i) for i in range(1, 3)]
    rep = build_report(write_run(tmp_path, records, topology({"ats": "trafficserver", "mine": "external"},
                                                             ports=PORTS), log))
    assert set(bypass.of(rep)) == {"ats"}
    ports = {r["port"]: r for r in port_rows(rep)}
    assert ports["ats"]["requests"] == 0 and ports["squid"]["requests"] == 0 and "mine" not in ports


def test_a_copy_of_another_fetch_is_no_noise_and_no_mismatch(tmp_path):
    """OTHER_FETCH (a faithful copy of another origin fetch than the client's) is the two fetches' difference:
    the dummy's does not raise the floor, a proxy's does not count in its mismatch rate, and two twins that kept
    different fetches of the same body do not disagree."""
    records = [record(i, measure(), [
        proxy("dummy", result="OTHER_FETCH", headers=["x-xact"]) if i == 1 else proxy("dummy"),
        proxy("squid", result="OTHER_FETCH", headers=["x-xact"]) if i <= 2 else proxy("squid"),
        proxy("squid-twin"),
    ]) for i in range(1, 5)]
    rep = build_report(write_run(tmp_path, records, topology({"dummy": "dummy", "squid": "squid",
                                                              "squid-twin": "squid"}, [["squid", "squid-twin"]])))
    assert noise.of(rep)["zero"] and noise.of(rep)["floor_pct"] == 0
    rows = {r["name"]: r for r in rep.rows}
    assert rows["squid"]["other_fetch_pct"] == 50 and rows["squid"]["mismatch_pct"] == 0
    assert mismatches.of(rep)["total"] == 0 and mismatches.of(rep)["by_proxy"]["squid"] == {"OTHER_FETCH": 2}
