"""./spe logs compact: the records as Parquet, incremental and safe while the run is still being written."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from spe_tools.logs import main as logs_main
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.parquet_log import compact, compacted, part_start, parts, read_state


def record(i: int, hour: int = 0) -> dict:
    proxy = {"name": "p", "position": 0, "status": 200, "bytes": i, "total_us": 10 * i, "result": "OK",
             "mismatched_headers": ["etag"] if i % 3 == 0 else [], "error": None,
             "cache": {"provenance": "origin", "reused": i % 2 == 0,
                       "violations": [{"rule": "age", "section": "4", "reason": "r"}] if i % 5 == 0 else [],
                       "evidence": {"served": {"age": "1"}}}}
    return {"ts": 1795000000.0 + hour * 3600 + i / 100, "id": i, "method": "GET", "url": f"http://o/{i}",
            "note": None, "tag": f"t-{i}", "client": "127.0.0.1:1",
            "collector": {"status": 200, "bytes": i, "total_us": 20 * i, "error": None, "fetch": f"f-{i}",
                          "cache": {"provenance": "origin", "reused": False}},
            "proxies": [proxy]}


def lines(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def parquet_rows(run: Path) -> list[tuple]:
    files = [str(p) for p in compacted(run).files]
    return duckdb.sql(f"SELECT id, ts, url, tag, collector.total_us, collector.cache.reused, proxies[1].name, "
                      f"proxies[1].total_us, proxies[1].mismatched_headers, proxies[1].cache.violations[1].rule "
                      f"FROM read_parquet({files}) ORDER BY id").fetchall()


def expected_rows(records: list[dict]) -> list[tuple]:
    def row(r: dict) -> tuple:
        p = r["proxies"][0]
        violations = p["cache"]["violations"]
        return (r["id"], r["ts"], r["url"], r["tag"], r["collector"]["total_us"], r["collector"]["cache"]["reused"],
                p["name"], p["total_us"], p["mismatched_headers"], violations[0]["rule"] if violations else None)
    return [row(r) for r in sorted(records, key=lambda r: r["id"])]


def test_compacting_a_log_being_written_loses_and_duplicates_nothing(tmp_path):
    log = RunDir(tmp_path).multiplier_log
    first = [record(i) for i in range(1, 21)]
    log.write_text(lines(first))
    state, added, skipped = compact(tmp_path, chunk_bytes=2000)  # several chunks, each its own part files
    assert (added, skipped, state.records, state.offset) == (20, 0, 20, log.stat().st_size)
    assert parquet_rows(tmp_path) == expected_rows(first)
    old_parts = {p: p.stat().st_mtime_ns for p in parts(RunDir(tmp_path).parquet)}
    assert len(old_parts) > 1
    # The run goes on: more records, the next hour's among them, a corrupt line, and one half-written.
    more = [record(i, hour=1 if i > 25 else 0) for i in range(21, 31)]
    half = json.dumps(record(31))
    with log.open("a") as f:
        f.write(lines(more[:3]) + '{"id": oops}\n' + lines(more[3:]) + half[:50])
    state, added, skipped = compact(tmp_path)
    assert (added, skipped, state.records, state.bad_lines) == (10, 1, 30, 1)
    assert parquet_rows(tmp_path) == expected_rows(first + more)
    assert compacted(tmp_path).bad_lines == 2  # the corrupt line, and the half-written one for now
    assert {p: p.stat().st_mtime_ns for p in old_parts} == old_parts  # never rewritten
    assert {p.parent.name for p in parts(RunDir(tmp_path).parquet)} == {"hour=2026-11-18T11", "hour=2026-11-18T12"}
    # The last line completed: read once, in the next compaction.
    with log.open("a") as f:
        f.write(half[50:] + "\n")
    assert not compacted(tmp_path).current  # a complete line not compacted yet: the report reads it from the log
    state, added, skipped = compact(tmp_path)
    assert (added, skipped, compacted(tmp_path).bad_lines) == (1, 0, 1)
    assert parquet_rows(tmp_path) == expected_rows([*first, *more, record(31)])
    assert compact(tmp_path)[1:] == (0, 0)  # nothing new: nothing written
    assert log.read_text().endswith(half + "\n")  # the log is never modified


def test_a_compaction_killed_before_its_state_is_written_again(tmp_path):
    log = RunDir(tmp_path).multiplier_log
    log.write_text(lines([record(i) for i in range(1, 6)]))
    compact(tmp_path)
    out = RunDir(tmp_path).parquet
    offset = read_state(out).offset
    with log.open("a") as f:
        f.write(lines([record(i) for i in range(6, 9)]))
    # A chunk's parts written, its state not: the parts of a compaction that died in between. Named as the next
    # compaction names none of its files (DuckDB numbers a partition's files by its threads), so only removing
    # it keeps its records out.
    orphan = out / "hour=2026-11-18T11" / f"part-{offset:015d}-7.parquet"
    next(iter(parts(out))).rename(orphan)
    compact(tmp_path)
    assert [row[0] for row in parquet_rows(tmp_path)] == list(range(6, 9))  # 1..5 lost with the renamed part
    assert all(part_start(p) >= offset for p in parts(out))


def test_another_log_in_the_same_directory_starts_over(tmp_path):
    log = RunDir(tmp_path).multiplier_log
    log.write_text(lines([record(i) for i in range(1, 6)]))
    compact(tmp_path)
    size = log.stat().st_size
    log.write_text(lines([record(i, hour=3) for i in range(100, 110)]))
    assert log.stat().st_size > size  # longer than the log compacted before: only its first bytes tell them apart
    state, added, _ = compact(tmp_path)
    assert (state.records, added) == (10, 10)
    assert [row[0] for row in parquet_rows(tmp_path)] == list(range(100, 110))


def test_a_damaged_part_file_is_skipped_and_counted(tmp_path):
    log = RunDir(tmp_path).multiplier_log
    log.write_text(lines([record(i) for i in range(1, 4)]))
    compact(tmp_path)
    log.write_text(log.read_text() + lines([record(i, hour=2) for i in range(4, 6)]))
    compact(tmp_path)
    damaged = parts(RunDir(tmp_path).parquet)[-1]
    damaged.write_bytes(damaged.read_bytes()[:40])
    found = compacted(tmp_path)
    assert (len(found.files), found.bad_parts) == (1, 1)


def test_the_command(tmp_path, capsys):
    assert logs_main(["compact", str(tmp_path)]) == 1  # no log
    RunDir(tmp_path).multiplier_log.write_text(lines([record(1)]) + "garbage\n")
    assert logs_main(["compact", str(tmp_path)]) == 0
    assert "compacted 1 records (1 unreadable lines skipped)" in capsys.readouterr().out
