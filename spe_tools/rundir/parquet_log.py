"""A run's records as Parquet files (`./spe logs compact RUN`), for an analysis whose memory does not grow with
the log: DuckDB reads Parquet column by column and spills to disk, where the JSON Lines must be parsed whole.

Layout (docs/log-format.md, "Parquet"): RUN/parquet/hour=YYYY-MM-DDTHH/part-<offset>-<n>.parquet, partitioned by
the hour (UTC) of each record's `ts`, with the columns of log_schema.JUDGED_LOG_SCHEMA and `seq`, the record's
place in the log (its line among the non-empty ones, from 0: the analysis keeps the log's order);
RUN/parquet/compacted.json says how far the log has been compacted. Each compaction reads multiplier.jsonl from
where the last one stopped to its last newline, in chunks; each chunk becomes new part files named by the byte
offset it starts at (never a rewrite of an older one), then the state is replaced atomically. So a run still
being written loses no record and duplicates none: a half-written last line waits for the next compaction, and
the parts of a chunk whose state was never written (a compaction killed between the two) are removed and written
again by the next one.
The JSON Lines file is never modified. A line DuckDB cannot read against the schema is skipped and counted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

import duckdb
import pyarrow.parquet as pq

from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.log_schema import duckdb_columns, sql_string

STATE = "compacted.json"
PathOrUrl = TypeVar("PathOrUrl", Path, str)
LOCK = ".lock"
STAGING = ".staging.jsonl"  # the chunk being compacted (read_json reads files, not byte ranges)
CHUNK_BYTES = 64 << 20  # JSON Lines per chunk: what a compaction holds in memory at once
HEAD_BYTES = 4096  # the log's first bytes, hashed: another log at the same path (a new run) starts over
BLOCK = 1 << 20


@dataclass(frozen=True)
class CompactState:
    """How far the log has been compacted: every complete line before `offset`, none after."""

    offset: int = 0
    records: int = 0
    bad_lines: int = 0
    head_bytes: int = 0
    head_sha256: str = ""


@dataclass(frozen=True)
class Compacted:
    """A run's Parquet files, and the lines of its log written since the last compaction (the tail): what the
    report reads instead of the whole JSON Lines."""

    files: list[Path]
    records: int
    bad_lines: int  # the compactions' unreadable lines, and a half-written last line not compacted yet
    bad_parts: int  # part files that could not be opened (skipped)
    tail: tuple[int, int]  # the log's bytes [start, stop) not compacted yet: whole lines (empty when current)
    tail_seq: int  # the `seq` of the tail's first line

    @property
    def current(self) -> bool:
        return self.tail[0] == self.tail[1]


def _head(log: Path, length: int) -> str:
    with log.open("rb") as f:
        return hashlib.sha256(f.read(length)).hexdigest()


def read_state(out: Path) -> CompactState | None:
    try:
        return CompactState(**json.loads((out / STATE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_state(out: Path, state: CompactState) -> None:
    """Replaced atomically: a reader sees the old state or the new one, never half of one."""
    tmp = out / f"{STATE}.tmp"
    with tmp.open("w") as f:
        json.dump(asdict(state), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out / STATE)


def state_of(log: Path, out: Path) -> CompactState | None:
    """The state, if it describes this log (the same first bytes, at least as long); else None."""
    state = read_state(out)
    if state is None or not log.exists() or log.stat().st_size < state.offset:
        return None
    return state if _head(log, state.head_bytes) == state.head_sha256 else None


def part_start(path: Path) -> int:
    """The byte offset of the chunk a part file holds (part-<offset>-<n>.parquet)."""
    return int(path.name.split("-")[1])


def parts(out: Path) -> list[Path]:
    return sorted(out.glob("hour=*/part-*.parquet"), key=lambda p: (part_start(p), str(p)))


def committed_parts(paths: Iterable[PathOrUrl], state: CompactState) -> list[PathOrUrl]:
    """Of a run's part files (local paths, or URLs of a stored run), those `state` counts as records, in the log's
    order: a part at or past its offset is a compaction cut short, not records yet."""
    counted = (p for p in paths if part_start(Path(p)) < state.offset)
    return sorted(counted, key=lambda p: (part_start(Path(p)), str(p)))


def _line_end(f, start: int, stop: int) -> int:
    """The offset just after the last newline in [start, stop) of the file, or start when there is none."""
    pos = stop
    while pos > start:
        size = min(BLOCK, pos - start)
        f.seek(pos - size)
        block = f.read(size)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return pos - size + newline + 1
        pos -= size
    return start


def _next_line_end(f, start: int, stop: int) -> int:
    """The offset just after the first newline in [start, stop), or start when there is none."""
    f.seek(start)
    pos = start
    while pos < stop:
        block = f.read(min(BLOCK, stop - pos))
        if not block:
            break
        newline = block.find(b"\n")
        if newline >= 0:
            return pos + newline + 1
        pos += len(block)
    return start


def read_json_sql(path: Path | list[Path]) -> str:
    """DuckDB's read_json of Multiplier logs against the schema: an unreadable line becomes a row of nulls
    (id null), which the callers count and drop."""
    paths = path if isinstance(path, list) else [path]
    columns = "{" + ", ".join(f"{sql_string(k)}: {sql_string(v)}" for k, v in duckdb_columns().items()) + "}"
    return (f"read_json([{', '.join(sql_string(str(p)) for p in paths)}], columns={columns}, "
            "format='newline_delimited', ignore_errors=true, maximum_object_size=67108864)")


def copy_bytes(log, start: int, stop: int, dest: Path) -> None:
    """Bytes [start, stop) of the open log into a file of their own (DuckDB's read_json reads whole files)."""
    log.seek(start)
    with dest.open("wb") as f:
        remaining = stop - start
        while remaining:
            block = log.read(min(BLOCK * 8, remaining))
            if not block:
                break
            f.write(block)
            remaining -= len(block)


def _compact_chunk(con: duckdb.DuckDBPyConnection, log, start: int, stop: int, out: Path,
                   first_seq: int) -> tuple[int, int]:
    """Bytes [start, stop) of the log (whole lines) as new part files, each record's `seq` its place among the
    log's lines from `first_seq` on; (records, unreadable lines)."""
    staging = out / STAGING
    copy_bytes(log, start, stop, staging)
    con.execute(f"CREATE OR REPLACE TEMP TABLE chunk AS SELECT * FROM {read_json_sql(staging)}")
    records, bad = con.execute("SELECT count(id), count(*) - count(id) FROM chunk").fetchall()[0]
    if records:
        con.execute(f"""COPY (SELECT {first_seq} + rowid AS seq, *, strftime(to_timestamp(ts), '%Y-%m-%dT%H') AS hour
                              FROM chunk WHERE id IS NOT NULL)
                        TO {sql_string(str(out))} (FORMAT parquet, PARTITION_BY (hour), OVERWRITE_OR_IGNORE,
                                                    FILENAME_PATTERN 'part-{start:015d}-{{i}}')""")
    con.execute("DROP TABLE chunk")
    staging.unlink()
    return records, bad


def _connect(out: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"memory_limit": "1GB", "temp_directory": str(out / ".tmp")})
    con.execute("SET TimeZone = 'UTC'")
    return con


def compact(run: Path, chunk_bytes: int = CHUNK_BYTES) -> tuple[CompactState, int, int]:
    """Compacts what the log gained since the last compaction: (the new state, records added, unreadable lines
    skipped). One compaction at a time per run (a lock file); a log that is not the one compacted before (a new
    run in the same directory) starts over."""
    files = RunDir(run)
    log, out = files.multiplier_log, files.parquet
    if not log.exists():
        raise FileNotFoundError(f"no {log.name} in {run}")
    out.mkdir(exist_ok=True)
    with (out / LOCK).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = state_of(log, out)
        if state is None:  # never compacted, or another log: start over
            for old in (p for p in out.iterdir() if p.name != LOCK):
                shutil.rmtree(old) if old.is_dir() else old.unlink()
            state = CompactState()
        for orphan in (p for p in parts(out) if part_start(p) >= state.offset):
            orphan.unlink()  # written by a compaction killed before its state
        added = skipped = 0
        con = _connect(out)
        try:
            with log.open("rb") as f:
                end = _line_end(f, state.offset, log.stat().st_size)
                while state.offset < end:
                    stop = _line_end(f, state.offset, min(end, state.offset + chunk_bytes))
                    if stop == state.offset:  # a line longer than a chunk
                        stop = _next_line_end(f, state.offset, end)
                    records, bad = _compact_chunk(con, f, state.offset, stop, out, state.records + state.bad_lines)
                    head = min(stop, HEAD_BYTES)
                    state = replace(state, offset=stop, records=state.records + records,
                                    bad_lines=state.bad_lines + bad, head_bytes=head, head_sha256=_head(log, head))
                    _write_state(out, state)
                    added, skipped = added + records, skipped + bad
        finally:
            con.close()
            shutil.rmtree(out / ".tmp", ignore_errors=True)
    return state, added, skipped


def _readable(path: Path) -> bool:
    try:
        pq.read_metadata(path)
        return True
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return False


def compacted(run: Path) -> Compacted | None:
    """The run's Parquet files (None when its log was never compacted, or is another log now) and the whole lines
    written after them, which the reader reads from the log; a half-written last line counts as unreadable, as
    it does read from the log."""
    files = RunDir(run)
    log, out = files.multiplier_log, files.parquet
    state = state_of(log, out)
    if state is None:
        return None
    with log.open("rb") as f:
        size = log.stat().st_size
        stop = _line_end(f, state.offset, size)
        f.seek(stop)
        partial = bool(f.read(size - stop).strip())
    committed = committed_parts(parts(out), state)
    readable = [p for p in committed if _readable(p)]
    return Compacted(readable, state.records, state.bad_lines + partial, len(committed) - len(readable),
                     (state.offset, stop), state.records + state.bad_lines)
