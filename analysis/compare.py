"""The same proxies across several runs, side by side (./spe report --compare RUN RUN ...)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from analysis.report_data import Report

COMPARED = [("ok_pct", "match %"), ("latency_median_ms", "median ms"), ("latency_p90_ms", "p90 ms"),
            ("hit_ratio", "hit ratio"), ("rel_bandwidth_received", "rel. bw in")]


def compare_rows(reports: list[Report]) -> list[dict]:
    """One row per (proxy, run), proxies in first-seen order, runs in the given order."""
    names: list[str] = []
    for rep in reports:
        names += [r["name"] for r in rep.rows if r["name"] not in names]
    rows = []
    for name in names:
        for rep in reports:
            row = next((r for r in rep.rows if r["name"] == name), None)
            rows.append({"name": name, "run": str(rep.run), "requests": row["requests"] if row else None,
                         **{k: row.get(k) if row else None for k, _ in COMPARED}})
    return rows


def compare_text(rows: list[dict]) -> str:
    width = max(len(r["name"]) for r in rows) + 2
    run_width = max(len(r["run"]) for r in rows) + 2
    out = [f"{'':{width}}{'run':{run_width}}" + "".join(f"{label:>11}" for _, label in COMPARED)]
    for r in rows:
        cells = "".join(f"{'-' if r[k] is None else (f'{r[k]:.2f}' if isinstance(r[k], float) else r[k]):>11}"
                        for k, _ in COMPARED)
        out.append(f"{r['name']:{width}}{r['run']:{run_width}}{cells}")
    return "\n".join(out) + "\n"


def write_compare(rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "compare.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "run", "requests", *[k for k, _ in COMPARED]])
        w.writeheader()
        w.writerows(rows)
    (out / "compare.json").write_text(json.dumps(rows, indent=2))
    (out / "compare.txt").write_text(compare_text(rows))
