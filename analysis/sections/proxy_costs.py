"""What each proxy cost, beside what it did: the CPU seconds its processes used (in all, and per 1,000 requests it
answered: the per-proxy table's `responses`), the memory they held (peak and mean of the samples) and the disk its
cache took, from the run's proxy-costs.json (the lab samples it each second: spe_tools/lab/watch/proxy_costs.py); the
Collector and the Multiplier the same way, for reference. A run without the file (an older run, a log the lab did
not write) says so.

Several runs merged add up (each ran its own proxies): CPU and disk summed, the peak the largest, the mean weighted
by samples. Per 1,000 requests is left out unless every run read was sampled: the requests of a run without
samples would be counted against no CPU. A run directory inside another (a lab's other Multiplier, multipliers/NAME)
is that run's: its file covers it."""

from __future__ import annotations

from pathlib import Path

from analysis.section import BEST, RunData, Section, fmt
from spe_tools.rundir.layout import PROXY_COSTS
from spe_tools.rundir.proxy_costs_json import COLLECTOR, MULTIPLIER, PROXY, RSS, ProcessCost, ProxyCosts

NAME = "proxy-costs"
TITLE = "What does each proxy cost?"
MB = 2**20  # as the lab file's cache_mb
ROLES = (PROXY, COLLECTOR, MULTIPLIER)  # the rows' order: the proxies, then SPE's own for reference
NO_SAMPLES = {"runs": 0, "sampled_runs": 0, "final": None, "interval_s": None, "elapsed_s": None, "rows": []}


def _own_runs(paths: list[Path]) -> list[Path]:
    """The runs read that are not inside another one read (whose lab also ran their processes)."""
    return [p for p in paths if not any(p != q and p.is_relative_to(q) for q in paths)]


def _answered(run: RunData) -> dict[str, int]:
    """Role or proxy name -> the requests it answered: the per-proxy table's `responses` (the Collector's row is
    the direct path's), and for the Multipliers every client request."""
    return {**{row["name"]: row["responses"] for row in run.rows[1:]}, COLLECTOR: run.rows[0]["responses"],
            MULTIPLIER: run.records.requests}


def _combined(same: list[ProcessCost]) -> ProcessCost:
    """One name's costs over the runs read, each of which ran its own processes."""
    samples = sum(c.samples for c in same)
    means = [(c.memory_mean_bytes, c.samples) for c in same if c.memory_mean_bytes is not None]
    peaks = [c.memory_peak_bytes for c in same if c.memory_peak_bytes is not None]
    disks = [c.disk_bytes for c in same if c.disk_bytes is not None]
    return ProcessCost(
        same[0].name, same[0].role, same[0].kind, list(dict.fromkeys(p for c in same for p in c.processes)),
        cpu_s=sum(c.cpu_s for c in same), cpu_user_s=sum(c.cpu_user_s for c in same),
        cpu_system_s=sum(c.cpu_system_s for c in same), pids=sum(c.pids for c in same), samples=samples,
        memory=RSS if any(c.memory == RSS for c in same) else same[0].memory,
        memory_peak_bytes=max(peaks) if peaks else None,
        memory_mean_bytes=sum(m * n for m, n in means) // max(1, sum(n for _, n in means)) if means else None,
        cache_dir=same[0].cache_dir, disk_bytes=sum(disks) if disks else None)


def _row(cost: ProcessCost, answered: int | None) -> dict:
    per_1k = 1000 * cost.cpu_s / answered if answered else None
    return {"name": cost.name, "role": cost.role, "kind": cost.kind, "processes": cost.processes,
            "cpu_s": cost.cpu_s, "cpu_user_s": cost.cpu_user_s, "cpu_system_s": cost.cpu_system_s,
            "answered": answered, "cpu_s_per_1k": per_1k, "memory": cost.memory,
            "memory_peak_bytes": cost.memory_peak_bytes, "memory_mean_bytes": cost.memory_mean_bytes,
            "cache_dir": cost.cache_dir, "disk_bytes": cost.disk_bytes, "samples": cost.samples, "pids": cost.pids}


def _order(cost: ProcessCost, proxies: list[str]) -> tuple[int, int]:
    """The proxies in the per-proxy table's order (one it does not list last), then the reference rows."""
    role = ROLES.index(cost.role) if cost.role in ROLES else len(ROLES)
    return role, proxies.index(cost.name) if cost.name in proxies else len(proxies)


def proxy_costs(run: RunData) -> dict:
    runs = _own_runs([files.path for files in run.runs.values()] or [run.run])
    found = [costs for costs in (ProxyCosts.read(path) if path.is_dir() else None for path in runs) if costs]
    if not found:
        return {**NO_SAMPLES, "runs": len(runs)}
    by_name: dict[tuple[str, str], list[ProcessCost]] = {}
    for costs in found:
        for cost in costs.costs:
            by_name.setdefault((cost.role, cost.name), []).append(cost)
    combined = sorted((_combined(same) for same in by_name.values()), key=lambda c: _order(c, run.records.proxies))
    answered = _answered(run) if len(found) == len(runs) else {}
    rows = [_row(c, answered.get(c.name if c.role == PROXY else c.role)) for c in combined]
    return {"runs": len(runs), "sampled_runs": len(found), "final": all(c.final for c in found),
            "interval_s": found[0].interval_s, "elapsed_s": max(c.elapsed_s for c in found), "rows": rows}


def of(rep) -> dict:
    return rep.data.get(NAME) or NO_SAMPLES


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / MB:.1f}"


def verdict(rep) -> list[str]:
    """The proxies by CPU per 1,000 requests answered, the least first, each with its peak memory."""
    ranked = sorted((r for r in of(rep)["rows"] if r["role"] == PROXY and r["cpu_s_per_1k"] is not None),
                    key=lambda r: r["cpu_s_per_1k"])
    if not ranked:
        return []
    return ["CPU seconds per 1,000 requests answered: " + ", ".join(
        f"{r['name']} {fmt(r['cpu_s_per_1k'])} (peak {_mb(r['memory_peak_bytes'])} MB)" for r in ranked)]


def _notes(data: dict) -> list[str]:
    notes = []
    if data["sampled_runs"] < data["runs"]:
        notes.append(f"  {data['sampled_runs']} of {data['runs']} runs have cost samples: the figures are theirs, "
                     "and per 1,000 requests is left out")
    if data["final"] is False:
        notes.append(f"  {PROXY_COSTS} was written before the lab stopped (the lab was killed, or still runs): the "
                     "costs so far")
    return notes


def _line(row: dict, width: int) -> str:
    return (f"  {row['name']:{width}}{fmt(row['cpu_s']):>9}{fmt(row['cpu_s_per_1k']):>9}"
            f"{_mb(row['memory_peak_bytes']):>9}{_mb(row['memory_mean_bytes']):>9}{_mb(row['disk_bytes']):>9}"
            + ("  (RSS)" if row["memory"] == RSS else ""))


def details(rep) -> list[str]:
    data = of(rep)
    if not data["rows"]:
        return [f"{TITLE} Unknown: this run has no cost samples ({PROXY_COSTS}: the lab writes it while it runs; "
                "older runs and runs the lab did not take have none)"]
    width = max(len(row["name"]) for row in data["rows"]) + 2
    out = [TITLE, "  CPU seconds (user + system) of each proxy's processes, workers and companions included, in all "
                  "and per 1,000 requests it answered;",
           f"  their memory together (PSS) at its peak and on average; its cache's disk. Sampled every "
           f"{fmt(data['interval_s'], 0)} s for {fmt(data['elapsed_s'], 0)} s.",
           *_notes(data),
           f"  {'':{width}}{'CPU s':>9}{'per 1k':>9}{'peak MB':>9}{'mean MB':>9}{'disk MB':>9}"]
    out += [_line(row, width) for row in data["rows"] if row["role"] == PROXY]
    out += ["  SPE's own, for reference:", *(_line(row, width) for row in data["rows"] if row["role"] != PROXY)]
    return [*out, "  disk -: no disk cache (in memory, or none); (RSS): memory as RSS, shared pages counted in each "
                  "process (PSS could not be read)"]


SECTION = Section(NAME, TITLE, question=BEST, compute=proxy_costs,
                  applies=lambda rep: NAME in rep.data, verdict_text=verdict, details_text=details,
                  summary=lambda rep, rows: {"proxy_costs": rep.data.get(NAME)})
