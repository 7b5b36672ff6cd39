"""The Multiplier's records (RUN/multiplier.jsonl, docs/log-format.md) read whole, one dict per record, for the
readers that want a few of them as they were written (./spe repro, ./spe export); the report reads them in bounded
memory instead (parquet_log.py, DuckDB)."""

from __future__ import annotations

import json
from pathlib import Path


def read_records(path: Path) -> list[dict]:
    """The records of a multiplier.jsonl, in the file's order; a line that is no JSON object (the half-written
    last line of a run that was killed) is left out."""
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def request_sequence(records: list[dict], target: dict) -> list[dict]:
    """Every record for the target's URL up to and including it, in time order (then id): what happened to the
    URL before the target request, as a repro case replays it."""
    until = (target["ts"], target["id"])
    return sorted((r for r in records if r.get("url") == target["url"] and (r["ts"], r["id"]) <= until),
                  key=lambda r: (r["ts"], r["id"]))
