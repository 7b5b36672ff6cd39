"""The Multiplier's records (RUN/multiplier.jsonl, docs/log-format.md) read whole, one dict per record, for the
readers that want a few of them as they were written (./spe repro, ./spe export); the report reads them in bounded
memory instead (parquet_log.py, DuckDB)."""

from __future__ import annotations

import json
from pathlib import Path

# What a proxy's leg may be, as the Multiplier writes its `result` (docs/log-format.md), in the report's order.
# REPLAY_REFUSED: the proxy's copy of an unsafe request did not match the client's (kept from the origin).
# OTHER_FETCH: a faithful copy of another origin fetch than the client's, differing only by what differs between
# the two fetches: no mismatch (NOT_MISMATCHES), so neither a proxy's mismatch rate, the noise floor nor the lab's
# status line counts it as one. NOT_SENT legs (unsafe requests withheld from the proxies) are no result: the
# report's readers drop them.
RESULT_CLASSES = ["OK", "STATUS_CODE_MISMATCH", "HEADER_MISMATCH", "BODY_MISMATCH", "NO_RESPONSE", "PROTOCOL_ERROR",
                  "REPLAY_REFUSED", "OTHER_FETCH"]
NOT_MISMATCHES = ("OK", "OTHER_FETCH")


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
