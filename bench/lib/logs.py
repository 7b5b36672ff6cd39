"""What the Multiplier and the other servers wrote: counters over a Multiplier JSON Lines log, the problems in a
server's output (but the expected start-up warnings), and how a report lists a counter."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path


def lines_in(path: Path) -> int:
    """The lines (records) in a log so far; 0 before it exists."""
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def read_multiplier_log(path: Path) -> dict:
    """Counters over a Multiplier JSON Lines log: records, statuses, proxy results, notes, errors."""
    records, bad_lines = 0, 0
    client_status: collections.Counter = collections.Counter()
    collector_status: collections.Counter = collections.Counter()
    results: collections.Counter = collections.Counter()
    notes: collections.Counter = collections.Counter()
    mismatched: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    with path.open(errors="replace") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad_lines += 1
                continue
            records += 1
            client_status[rec.get("client_status")] += 1
            collector_status[(rec.get("collector") or {}).get("status")] += 1
            if rec.get("note"):
                notes[rec["note"]] += 1
            for p in rec.get("proxies", []):
                results[p.get("result")] += 1
                for h in p.get("mismatched_headers") or []:
                    mismatched[h] += 1
                if p.get("error"):
                    errors[p["error"]] += 1
    return {"records": records, "bad_lines": bad_lines, "client_status": client_status,
            "collector_status": collector_status, "results": results, "notes": notes,
            "mismatched": mismatched, "errors": errors}


# Start-up warnings about a choice the benchmark made on purpose: the benchmarks send no unsafe request, so
# the Multiplier's note that they would reach only the Collector (no --replay-listen) says nothing about the run.
EXPECTED_WARNINGS = ("no --replay-listen:",)


def stderr_problems(path: Path) -> list[str]:
    """Warning, error and crash lines in a server's output, but the expected start-up warnings."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return [ln for ln in lines
            if re.search(r"\]\s*\[(warn|warning|error|critical)\]|fatal|abort|sanitizer", ln, re.I)
            and not any(w in ln for w in EXPECTED_WARNINGS)]


def fmt_counter(c: collections.Counter) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "none"
