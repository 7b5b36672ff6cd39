"""The report read through DuckDB (from the JSON Lines, and from `./spe logs compact`'s Parquet files) gives the
same numbers as the whole log parsed into memory, on the hand-made runs of the other tests and a generated one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_analysis import conformance_like_run, measure, paired_run, proxy, record
from test_analysis import run as hand_made_run  # noqa: F401 (a fixture)
from test_prefetch import prefetch_run, twin_run
from test_report_cache_rules import judged_run
from test_report_trust import noisy_run

from analysis.readers.engine import FrameTables, RunTables
from analysis.readers.records import load_jsonl
from analysis.report import build_report, summary_json
from bench.report_speed import write_compacted_run, write_run
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.parquet_log import compact, compacted, part_start


def same(a, b, where: str = "") -> None:
    """Equal, floats to 1e-9 relative (a sum or a mean may be added up in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (where, a, b)
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), where
        for key in a:
            same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def summary(run: Path, engine: str) -> dict:
    """summary.json as the report writes it: the per-proxy table (with the sections' columns) and every section's
    keys, through JSON as in the file."""
    rep = build_report(run, engine=engine)
    return {"bad_cache_lines": rep.bad_cache_lines, **json.loads(json.dumps(summary_json(rep), default=str))}


def assert_same_report(run: Path) -> None:
    memory = summary(run, "memory")
    same(summary(run, "duckdb"), memory, "jsonl")
    log = RunDir(run).multiplier_log
    compact(run, chunk_bytes=log.stat().st_size // 3 + 1)  # several chunks: the parts of several compactions
    with RunTables(RunDir(run).multiplier_log) as tables:
        assert tables.source == "parquet"
    same(summary(run, "duckdb"), memory, "parquet")


def mixed_run(path: Path) -> Path:
    """What the other runs lack: skipped fan-outs, CONNECTs (one intercepted), legs never sent, SPE's queueing and
    the client held back, a proxy entry without a name, and a corrupt line."""
    lines = []
    for i in range(1, 41):
        legs = [{**proxy("a", total_ms=1 + i % 7, ttfb_ms=0.5 + i % 3), "queued_us": (i % 5) * 1000},
                {**proxy("b", total_ms=2 + i % 11, result="BODY_MISMATCH" if i % 9 == 0 else "OK"), "queued_us": 0}]
        if i % 8 == 0:
            legs[1] = {**proxy("b", result="NOT_SENT", status=None, error="not sent")}
        rec = record(i, measure(total_ms=3 + i % 13), legs)
        if i % 10 == 0:
            rec = {**record(i, measure(status=None, error="timeout"), []), "note": "no fan-out: the client went away"}
        if i % 12 == 0:
            rec["client_held_us"] = 1000 * i
        lines.append(json.dumps(rec))
    lines.append(json.dumps({**record(41, measure(status=None), [], url="h:443"), "method": "CONNECT",
                             "note": "CONNECT intercepted: TLSv1.3, certificate for h"}))
    lines.append(json.dumps({**record(42, measure(), [], url="h:443"), "method": "CONNECT",
                             "note": "CONNECT tunnel (not multiplied): 1 bytes up, 2 bytes down"}))
    lines.append(json.dumps(record(43, measure(), [proxy("a")], url="https://h/x")))
    lines.insert(5, '{"id": 7, oops')
    RunDir(path).multiplier_log.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("make", [conformance_like_run, paired_run, noisy_run, judged_run, mixed_run],
                         ids=lambda make: make.__name__)
def test_the_engines_agree_on_the_hand_made_runs(tmp_path, make):
    assert_same_report(make(tmp_path) or tmp_path)


@pytest.mark.parametrize("make", [prefetch_run, twin_run], ids=lambda make: make.__name__)
def test_the_engines_agree_on_prefetching(tmp_path, make):
    """The prefetch columns (queries over either engine's `results` and the access log) on runs with prefetches,
    tags, a proxy that drops them, a twin and an agent's log."""
    run = make(tmp_path)
    pf = next(p for p in summary(run, "memory")["proxies"] if p["name"] == "pf")
    assert pf["prefetch_requests"] == 4 and pf["prefetch_lead_ms_p50"] is not None
    assert (pf["twin_gain_requests"], pf["prefetch_agent_fetches"]) == ((2, 1) if make is twin_run else (None, None))
    assert_same_report(run)


def test_the_engines_agree_on_the_analysis_tests_run(hand_made_run):  # noqa: F811 (the fixture)
    assert_same_report(hand_made_run)


def test_the_engines_agree_on_a_generated_run(tmp_path):
    """The report benchmark's records: 4 proxies, every result class, latencies spread over 3 decades, a truncated
    last line; 3,000 records make each percentile's two ranks differ."""
    write_run(RunDir(tmp_path).multiplier_log, 3000)
    assert_same_report(tmp_path)


def test_a_run_compacted_then_written_on_reads_its_parquet_and_the_rest_of_its_log(tmp_path):
    log = RunDir(mixed_run(tmp_path)).multiplier_log
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:20]))
    compact(tmp_path)
    log.write_text("".join(lines) + '{"id": 99, "ts": 1')  # the run went on: more lines, the last half-written
    with RunTables(log) as tables:
        assert tables.source.startswith("parquet and ") and tables.requests == len(lines) - 1
    same(summary(tmp_path, "duckdb"), summary(tmp_path, "memory"))


def test_an_empty_log(tmp_path):
    RunDir(tmp_path).multiplier_log.write_text('{"id": 1, trunc')
    rep = build_report(tmp_path)
    assert (rep.requests, rep.bad_lines, len(rep.rows)) == (0, 1, 1)
    same(summary(tmp_path, "duckdb"), summary(tmp_path, "memory"))


def test_log_order_orders_the_replies_as_the_in_memory_table_on_either_engine(tmp_path):
    """The Collector's replies in the log's order, then the proxies' record by record, as analysis/readers/records.py
    makes them: the first few rows the sections keep (the examples) are the same ones."""
    log = RunDir(mixed_run(tmp_path)).multiplier_log
    records = load_jsonl(log)
    expected = records.results.select("id", "name").rows()
    for tables in (RunTables(log), FrameTables(records.results, None)):
        with tables:
            assert tables.rows(f"SELECT id, name FROM results ORDER BY {tables.log_order}") == expected


def test_a_run_compacted_while_written_with_its_compacted_lines_punched_out_reads_as_the_whole_log(tmp_path):
    """The benchmark's large runs (bench/report_speed.py --parquet): chunks of the log written, compacted and
    freed (a sparse log, its size and first bytes kept), a tail left; the report reads every record, the
    truncated last line counted, as the same run written whole and read into memory."""
    whole = tmp_path / "whole" / "run"  # named as the run it is compared with: the examples name their run
    whole.mkdir(parents=True)
    write_run(RunDir(whole).multiplier_log, 3000)
    run = tmp_path / "run"
    run.mkdir()
    write_compacted_run(run, 3000, chunk=700, progress=lambda text: None)
    log = RunDir(run).multiplier_log
    assert log.stat().st_size == RunDir(whole).multiplier_log.stat().st_size
    assert log.stat().st_blocks * 512 < log.stat().st_size / 4  # the compacted lines' blocks freed
    found = compacted(run)
    assert (found.records, found.bad_lines, len({part_start(p) for p in found.files})) == (2700, 1, 4)
    with RunTables(log) as tables:
        assert tables.source.startswith("parquet and ") and (tables.requests, tables.bad_lines) == (3000, 1)
    same({**summary(run, "duckdb"), "run": "r"}, {**summary(whole, "memory"), "run": "r"})
