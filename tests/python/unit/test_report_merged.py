"""`./spe report RUN1 RUN2 ...`: several runs (Multipliers on different hosts, each with its own request ids) merged
into one report. The reference is the one run that holds both runs' records with their ids made distinct: the
merged report must give it number for number, so no join may pair a request of one run with the same id of the
other; each proxy's figures per Multiplier must be each run's own report's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import read_records
from test_lab_trust import access_line
from test_report_cache_rules import judged_run
from test_report_engines import same
from test_report_trust import topology, write_run

from analysis.cli import main as report_main
from analysis.report import build_report, summary_json, text_report
from analysis.sections import judge_findings, per_multiplier
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import RunDir

SHIFT = 100  # the second run's ids in the single run that holds both


PORTS = {"direct": 5000, "squid": 5001, "varnish": 5002, "dummy": 5003}
LAB = topology({"squid": "squid", "varnish": "varnish", "dummy": "dummy"}, ports=PORTS)


def collector_lines(misses: dict[str, int]) -> list[str]:
    """What a run's Collector logged: each port's requests (all misses: what the proxy did not hold)."""
    return [access_line(PORTS[name], f"http://o/{i}").rstrip("\n") for name, n in misses.items() for i in range(n)]


def write(path: Path, records: list[dict], access: list[str]) -> Path:
    path.mkdir(parents=True)
    return write_run(path, records, LAB, access)


def slower(records: list[dict], factor: int) -> list[dict]:
    """The same requests answered `factor` times slower (a client group behind a slower uplink)."""
    out = []
    for r in records:
        legs = [{**p, "total_us": p["total_us"] * factor} if p.get("total_us") else p for p in r["proxies"]]
        out.append({**r, "proxies": legs})
    return out


def shifted(records: list[dict]) -> list[dict]:
    return [{**r, "id": r["id"] + SHIFT} for r in records]


def make_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """east and west: the same six judged requests with the same ids, west's three times slower; both: one run
    holding east's records and then west's, their ids shifted."""
    east_records = read_records(RunDir(judged_run(_dir(tmp_path / "made"))).multiplier_log)
    west_records = slower(east_records, 3)
    east_access = collector_lines({"direct": 6, "squid": 4, "varnish": 6, "dummy": 6})
    west_access = collector_lines({"direct": 6, "squid": 2, "varnish": 5, "dummy": 6})
    east = write(tmp_path / "east", [{**r, "multiplier": "east"} for r in east_records], east_access)
    west = write(tmp_path / "west", [{**r, "multiplier": "west"} for r in west_records], west_access)
    both = write(tmp_path / "both", east_records + shifted(west_records), east_access + west_access)
    return east, west, both


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_runs(tmp_path)


def _dir(path: Path) -> Path:
    path.mkdir()
    return path


def proxies(rep) -> list[dict]:
    return json.loads(json.dumps(summary_json(rep)["proxies"], default=str))


def test_a_merged_report_is_the_report_of_one_run_holding_both(runs):
    east, west, both = runs
    merged, whole = build_report([east, west]), build_report(both)
    assert merged.merged and merged.requests == whole.requests == 12
    rows = {row["name"]: row for row in merged.rows}
    assert rows["squid"]["hit_ratio"] == 1 - 6 / 12  # the two Collectors' counts added up
    same(proxies(merged), proxies(whole))
    for key in ("pairs", "ranking", "noise_floor", "out_of_order_legs"):  # what pairs a request's replies
        same(summary_json(merged).get(key), summary_json(whole).get(key), key)
    summaries = {s["name"]: s["summary"] for s in judge_findings.of(merged)}
    assert summaries == {s["name"]: s["summary"] for s in judge_findings.of(whole)}


def test_each_proxys_figures_per_multiplier_are_its_runs_own(runs):
    east, west, _ = runs
    merged = build_report([east, west])
    tables = per_multiplier.of(merged)
    assert list(tables) == ["east", "west"]
    for name, run in (("east", east), ("west", west)):
        alone = build_report(run)
        assert per_multiplier.of(alone) == {}  # one Multiplier: the overall table says it all
        keys = [key for key, _ in per_multiplier.COLUMNS]
        same(tables[name], [{"name": row["name"], **{k: row[k] for k in keys}} for row in alone.rows])
    assert "Lowest median latency per Multiplier: east:" in text_report(merged)


def test_examples_name_their_run_and_the_run_a_case_is_taken_from(runs):
    east, west, _ = runs
    merged = build_report([west, east])  # west first: its example of each rule comes first
    squid = next(s for s in judge_findings.of(merged) if s["name"] == "squid")
    age = next(r for r in squid["rules"] if r["rule"] == "age")
    assert (age["example"]["run"], age["example"]["id"]) == ("west", 2)
    assert age["example"]["evidence"]  # read from west's own log
    text = text_report(merged)
    assert "age 2 (west)" in text and "(RUN the run in brackets)" in text


def test_the_command_line_merges_runs_and_refuses_what_cannot_be(runs, tmp_path, capsys):
    east, west, _ = runs
    out = tmp_path / "merged"
    assert report_main([str(east), str(west), "--out", str(out), "--format", "json,text"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"] == 12 and set(summary["per_multiplier"]) == {"east", "west"}
    with pytest.raises(SystemExit) as refused:
        report_main([str(east), str(west), "--engine", "memory"])
    assert refused.value.code == 2 and "merged through DuckDB or Spark" in capsys.readouterr().err


def test_runs_of_the_same_name_are_told_apart(tmp_path):
    first = judged_run(_dir(_dir(tmp_path / "host1") / "run"))
    second = judged_run(_dir(_dir(tmp_path / "host2") / "run"))
    rep = build_report([first, second])
    assert list(rep.runs) == ["run#1", "run#2"] and list(per_multiplier.of(rep)) == ["run#1", "run#2"]


def test_a_lab_run_with_several_multipliers_reads_as_one_evaluation_with_one_collector(runs, tmp_path):
    """A lab with two [[multiplier]] tables: the run directory holds the first's log and the one Collector's
    access.log (both client groups' traffic), multipliers/west/ the second's log. `./spe report RUN` is the merged
    report, the shared Collector's usage read once (not once per Multiplier)."""
    east, west, both = runs
    lab = {**LAB, "other_multipliers": {"west": {"name": "west", "dir": "multipliers/west", "log": "multiplier.jsonl"}}}
    access = collector_lines({"direct": 6, "squid": 4, "varnish": 6, "dummy": 6}) + \
        collector_lines({"direct": 6, "squid": 2, "varnish": 5, "dummy": 6})
    run = write_run(_dir(tmp_path / "lab"), read_records(RunDir(east).multiplier_log), lab, access)
    (run / "multipliers/west").mkdir(parents=True)
    RunDir(run / "multipliers/west").multiplier_log.write_bytes(RunDir(west).multiplier_log.read_bytes())
    rep, whole = build_report(run), build_report(both)
    assert rep.merged and rep.requests == 12 and list(per_multiplier.of(rep)) == ["east", "west"]
    rows = {row["name"]: row for row in rep.rows}
    assert rows["squid"]["hit_ratio"] == 1 - 6 / 12
    same(proxies(rep), proxies(whole))
    # The second group's directory is described by the lab run's files (./spe repro of its findings reads them).
    described = LabJson.of_multiplier_run(run / "multipliers/west")
    assert described.multiplier.name == "west" and described.proxies["squid"].kind == "squid"
