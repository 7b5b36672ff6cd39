"""HAR workloads: how fast the HAR origin serves and the HAR replay sends, beside the synthetic origin and the
access-log replay, and what a 500 MB HAR costs in memory.

1. Origins under wrk (CPU0; one thread, 8 connections, --seconds each, interleaved rounds): the synthetic origin
   (`./spe origin`, a 13 KB cacheable object) and the HAR origin (`./spe origin --har`, a recorded 13 KB response),
   each on CPU1 without think time: req/s and the origin's CPU µs per request.
2. Replayers (CPU0) at --speed 10 over --requests requests recorded 1 ms apart (10,000 req/s offered: what each
   reaches is its ceiling): `./spe replay access.log` (one client, six connections) against the synthetic origin
   and `./spe replay site.har` (six connections per host, as a browser) against the HAR origin serving it, the
   same URLs and sizes: completed req/s, lateness p50/p99, errors, the replayer's CPU µs per request.
3. A --big-mb HAR (64 KB bodies, generated, then removed): the HAR origin's start (reading it) and peak RSS after
   serving its first hundred URLs, and the replay's peak RSS and time sending all of it to that origin.

Run: ./spe bench har_workloads [--seconds 10] [--rounds 3] [--requests 3000] [--big-mb 500] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.doc import add_write_docs, machine, publish
from bench.lib.har_files import write_access_log, write_big_har, write_har_entries
from bench.lib.meters import cpu_seconds, rss_and_peak_kb, run_with_peak_rss
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port

TITLE = "HAR workloads"
PYTHON = sys.executable
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
BODY_KB = 13
SPEED = 10


def start_origins(group: ProcessGroup, har: Path) -> dict[str, tuple[int, int]]:
    """The synthetic origin and the HAR origin, each on CPU1: name -> (port, pid)."""
    synthetic, recorded = free_port(), free_port()
    s = group.start("synthetic", ["taskset", "-c", "1", PYTHON, "-m", "spe_tools.workload.origin", "--listen",
                                  f"127.0.0.1:{synthetic}", "--think-mean-ms", "0", "--think-sd-ms", "0"],
                    port=synthetic, env=ENV)
    h = group.start("har", ["taskset", "-c", "1", PYTHON, "-m", "spe_tools.workload.har_origin", "--listen",
                            f"127.0.0.1:{recorded}", "--har", str(har), "--no-think"], port=recorded, env=ENV)
    return {"synthetic": (synthetic, s.pid), "har": (recorded, h.pid)}


def wrk(url: str, seconds: float) -> float:
    run = subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c8", f"-d{seconds:g}s", url],
                         capture_output=True, text=True, timeout=seconds + 60)
    m = re.search(r"Requests/sec:\s+([\d.]+)", run.stdout)
    if not m or "Non-2xx" in run.stdout:
        raise RuntimeError(f"wrk against {url}: {run.stdout}{run.stderr}")
    return float(m.group(1))


def origin_round(name: str, port: int, pid: int, seconds: float) -> tuple[float, float]:
    """(req/s, the origin's CPU µs per request) of one wrk run."""
    url = {"synthetic": f"http://127.0.0.1:{port}/obj/wrk?size={BODY_KB * 1024}&cc=public",
           "har": f"http://127.0.0.1:{port}/obj/1"}[name]
    before = cpu_seconds([pid])
    rate = wrk(url, seconds)
    return rate, 1e6 * (cpu_seconds([pid]) - before) / max(1.0, rate * seconds)


def replay_round(name: str, recording: Path, port: int, workdir: Path) -> dict:
    """One replay at --speed SPEED against `port` (the origin playing the proxy): its summary and CPU."""
    out = workdir / f"replay-{name}.json"
    argv = ["taskset", "-c", "0", PYTHON, "-m", "spe_tools.workload.replay", str(recording), "--via",
            f"127.0.0.1:{port}", "--origin", f"127.0.0.1:{port}", "--speed", str(SPEED), "--json", str(out),
            *(["--conns-per-client", "6"] if name == "log" else [])]
    before = children_cpu()
    run = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=600)
    if run.returncode:
        raise RuntimeError(f"replay of {recording}: {run.stdout}{run.stderr}")
    summary = json.loads(out.read_text())
    summary["cpu_s"] = children_cpu() - before
    return summary


def children_cpu() -> float:
    """CPU seconds of the children this process has waited for (taskset execs the replay: its own)."""
    t = os.times()
    return t.children_user + t.children_system


def big_har(workdir: Path, size_mb: float) -> dict:
    """Part 3: the HAR origin and the replay on a generated HAR of `size_mb`."""
    path = workdir / "big.har"
    started = time.monotonic()
    count = write_big_har(path, size_mb)
    written_s, size = time.monotonic() - started, path.stat().st_size
    with ProcessGroup(workdir) as group:
        port = free_port()
        started = time.monotonic()
        origin = group.start("big", ["taskset", "-c", "1", PYTHON, "-m", "spe_tools.workload.har_origin",
                                     "--listen", f"127.0.0.1:{port}", "--har", str(path), "--no-think"],
                             port=port, env=ENV, deadline_s=600)
        load_s = time.monotonic() - started
        for i in range(100):
            subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/obj/{i}"], check=True)
        origin_peak = rss_and_peak_kb(origin.pid)[1]
        started = time.monotonic()
        run, replay_peak = run_with_peak_rss(
            ["taskset", "-c", "0", PYTHON, "-m", "spe_tools.workload.replay", str(path), "--via",
             f"127.0.0.1:{port}", "--origin", f"127.0.0.1:{port}", "--speed", str(SPEED), "--json",
             str(workdir / "big.json")], ENV, 1800)
        replay_s = time.monotonic() - started
    path.unlink()
    if run.returncode:
        raise RuntimeError(f"replay of the big HAR: {run.stdout}{run.stderr}")
    summary = json.loads((workdir / "big.json").read_text())
    return {"size_mb": size / 2**20, "entries": count, "written_s": written_s, "load_s": load_s,
            "origin_peak_mb": origin_peak / 1024, "replay_peak_mb": replay_peak / 1024, "replay_s": replay_s,
            "completed": summary["completed"], "errors": summary["errors"]}


def measure(args: argparse.Namespace, workdir: Path) -> tuple[dict, dict, dict | None]:
    har, log = workdir / "site.har", workdir / "access.log"
    write_har_entries(har, args.requests, BODY_KB)
    write_access_log(log, args.requests, BODY_KB)
    origins: dict[str, list] = {"synthetic": [], "har": []}
    replays: dict[str, list] = {"log": [], "har": []}
    with ProcessGroup(workdir) as group:
        servers = start_origins(group, har)
        for r in range(args.rounds):  # interleaved, the order alternating
            for name in (("synthetic", "har") if r % 2 == 0 else ("har", "synthetic")):
                origins[name].append(origin_round(name, *servers[name], args.seconds))
            for name in (("log", "har") if r % 2 == 0 else ("har", "log")):
                server = servers["synthetic" if name == "log" else "har"][0]
                replays[name].append(replay_round(name, log if name == "log" else har, server, workdir))
    return origins, replays, big_har(workdir, args.big_mb) if args.big_mb > 0 else None


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def report(args: argparse.Namespace, origins: dict, replays: dict, big: dict | None) -> str:
    lines = ["| origin | req/s (median of rounds) | origin CPU µs/req |", "|---|---|---|"]
    for name, label in (("synthetic", "`./spe origin` (13 KB object)"), ("har", "`./spe origin --har` (13 KB)")):
        lines.append(f"| {label} | {median([r for r, _ in origins[name]]):.0f} | "
                     f"{median([c for _, c in origins[name]]):.0f} |")
    lines += ["", "| replay | completed req/s | late p50 / p99 ms | errors | replayer CPU µs/req |",
              "|---|---|---|---|---|"]
    for name, label in (("log", "`./spe replay access.log` → synthetic origin"),
                        ("har", "`./spe replay site.har` → HAR origin")):
        runs = replays[name]
        lines.append(f"| {label} | {median([s['completed'] / s['elapsed_s'] for s in runs]):.0f} | "
                     f"{median([s['late_ms']['p50'] for s in runs]):.1f} / "
                     f"{median([s['late_ms']['p99'] for s in runs]):.1f} | {sum(s['errors'] for s in runs)} | "
                     f"{median([1e6 * s['cpu_s'] / max(1, s['completed']) for s in runs]):.0f} |")
    text = "\n".join(lines)
    if big:
        text += (f"\n\nA {big['size_mb']:.0f} MB HAR ({big['entries']} entries of 64 KB bodies, written in "
                 f"{big['written_s']:.0f} s): the HAR origin read it in {big['load_s']:.1f} s, peak RSS "
                 f"{big['origin_peak_mb']:.0f} MB after serving 100 of its URLs; the replay sent all of it "
                 f"({big['completed']} completed, {big['errors']} errors) in {big['replay_s']:.1f} s, peak RSS "
                 f"{big['replay_peak_mb']:.0f} MB.")
    return (f"\n## {TITLE} — {datetime.date.today().isoformat()}\n\n"
            f"Command: `./spe bench har_workloads --seconds {args.seconds:g} --rounds {args.rounds} "
            f"--requests {args.requests} --big-mb {args.big_mb:g}`  \n"
            f"Machine: {machine()}  \n"
            f"wrk (CPU0, 1 thread, 8 connections, {args.seconds:g} s a round) at each origin (CPU1, no think "
            f"time); each replay (CPU0) of {args.requests} requests recorded 1 ms apart at --speed {SPEED} "
            f"(10,000 req/s offered), {args.rounds} interleaved rounds:\n\n{text}\n")


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=parse_duration, default=10, help="wrk's time per origin and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--requests", type=int, default=3000, help="requests per replay (default 3000)")
    parser.add_argument("--big-mb", type=float, default=500, help="size of the big HAR, MB (0: none; default 500)")
    add_write_docs(parser)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="spe-bench-har-"))
    try:
        origins, replays, big = measure(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    publish(report(args, origins, replays, big), [], title=TITLE, write=args.write_docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
