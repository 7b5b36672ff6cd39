"""The same proxies across several runs, side by side (./spe report --compare RUN RUN ...).

A run is read as its report reads it, but only its per-proxy table is built (hit ratios and the prefetch columns
they need included) and, of the sections, only those whose computing changes the columns compared: no figure, no
paired comparison, no judge's tallies. A run's summary.json is not reused: nothing in it says which log, access log
and code it was computed from (a run still going on, compacted since, or reported by an older SPE would be compared
as it was then).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from analysis.report import Progress, build_report
from analysis.report_data import Report
from analysis.sections import bypass

COMPARED = [("ok_pct", "match %"), ("latency_median_ms", "median ms"), ("latency_p90_ms", "p90 ms"),
            ("hit_ratio", "hit ratio"), ("rel_bandwidth_received", "rel. bw in")]
# The sections whose computing changes the columns compared: the bypass evidence blanks the hit ratio and bandwidth of
# a proxy whose replies did not come through its Collector port (tests/python/unit/test_report_compare.py checks that
# computing the others changes none of them).
ROW_SECTIONS = (bypass.NAME,)


def compared_report(run: Path, progress: Progress | None = None, engine: str = "duckdb") -> Report:
    """The run's report as far as the comparison reads it: its rows."""
    return build_report(run, progress, engine, computed=ROW_SECTIONS)


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
