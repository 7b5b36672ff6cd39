"""Reading the cache-rule judge's verdicts out of a Multiplier log: the `cache` object of the Collector's
reply and of every proxy leg (docs/log-format.md), one row per judged reply.

The log is read once, for the tables (records.py) and the verdicts together, when every line fits the
documented format (the common case: a second read would double the report's parsing time). When one does
not, the two are read apart, each with its own schema, so that a `cache` object of an unexpected shape
loses only its place in this section, never the tables. The judged headers (`evidence`) are free-form
maps Arrow cannot read against a schema: they are read with `json`, only for the few replies the report
shows as examples.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow as pa

from analysis.readers.records import (
    COLLECTOR,
    Records,
    is_rope,
    load_jsonl,
    load_rope,
    parse_ndjson,
    read_json_lines,
    records_from_frame,
    split_lines,
)
from spe_tools.rundir.log_schema import CACHE, CACHE_LOG_SCHEMA, JUDGED_LOG_SCHEMA

CACHE_FIELDS = [f.name for f in CACHE]
MARK = b'"cache"'


def _judged(frame: pl.DataFrame) -> pl.DataFrame:
    """One column per `cache` field; replies without a `cache` object (older logs) dropped."""
    return frame.filter(pl.col("cache").is_not_null()).with_columns(
        pl.col("cache").struct.field(*CACHE_FIELDS)).drop("cache")


def _verdict_table(df: pl.DataFrame) -> pl.DataFrame:
    base = ["id", "method", "url"]
    collector = df.select(*base, pl.lit(COLLECTOR).alias("name"), pl.col("collector").struct.field("cache"))
    proxies = df.select(*base, "proxies").explode("proxies").drop_nulls("proxies").select(
        *base, pl.col("proxies").struct.field("name", "cache"))
    return pl.concat([_judged(collector), _judged(proxies)])


def _verdicts(df: pl.DataFrame) -> pl.DataFrame | None:
    verdicts = _verdict_table(df) if df.height else None
    return verdicts if verdicts is not None and verdicts.height else None


def load_judged_run(log: Path) -> tuple[Records, pl.DataFrame | None, int]:
    """The run's tables, its verdicts (as load_verdicts) and the lines naming an unreadable `cache` object."""
    if is_rope(log):
        return load_rope(log), None, 0
    lines, bad = split_lines(Path(log).read_bytes())
    try:
        df = read_json_lines(lines, JUDGED_LOG_SCHEMA) if lines else pl.DataFrame()
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a line that does not fit: read each part apart
        del lines
        return load_jsonl(log), *load_verdicts(log)
    return records_from_frame(df, bad), _verdicts(df), 0


def load_verdicts(log: Path) -> tuple[pl.DataFrame | None, int]:
    """(one row per judged reply: id, method, url, name and the `cache` fields; None when no record of the
    log has a `cache` object, e.g. a log written before the judge or a ROPE text log), and how many lines
    that mention `cache` could not be read."""
    if is_rope(log):
        return None, 0
    lines, _ = split_lines(Path(log).read_bytes())
    df, bad = parse_ndjson([line for line in lines if MARK in line], CACHE_LOG_SCHEMA)
    return _verdicts(df), bad


def _source_entry(record: dict, name: str) -> dict | None:
    if name == COLLECTOR:
        return record.get("collector")
    return next((p for p in record.get("proxies") or [] if isinstance(p, dict) and p.get("name") == name), None)


def _lines_from_end(f: BinaryIO, block: int = 1 << 20) -> Iterator[bytes]:
    """The file's lines, last first, read a block at a time from its end as it was when this began (the last line
    may be half-written while the Multiplier writes the log: the caller skips what does not parse)."""
    end = f.seek(0, 2)
    rest = b""
    while end > 0:
        start = max(0, end - block)
        f.seek(start)
        lines = (f.read(end - start) + rest).split(b"\n")
        rest = lines.pop(0)  # maybe the end of a line that begins in the block before
        yield from reversed(lines)
        end = start
    yield rest


def load_evidence(log: Path, wanted: set[tuple[int, str]], from_end: bool = False) -> dict[tuple[int, str], dict]:
    """The `evidence` object of each wanted (request id, source name) reply; stops reading once all are found.
    `from_end` reads the log backwards, for replies near its end (the latest examples): as cheap for them as the
    forward read is for the first ones, however long the log. None found without the log (a run in object
    storage is read from its Parquet files only)."""
    found: dict[tuple[int, str], dict] = {}
    if not wanted or not Path(log).exists():
        return found
    with Path(log).open("rb") as f:
        for line in _lines_from_end(f) if from_end else f:
            if b'"evidence"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            for request, name in wanted - found.keys():
                if record.get("id") != request:
                    continue
                entry = _source_entry(record, name) or {}
                evidence = (entry.get("cache") or {}).get("evidence")
                if isinstance(evidence, dict):
                    found[(request, name)] = evidence
            if found.keys() == wanted:
                break
    return found
