"""Workload throughput: the synthetic origin and the load client, each at 500 requests per second or more.

Side by side: `./spe load` straight at `./spe origin` (no think time, the default content model:
13 KB mean, 10 % chunked, 1 % POST ...) at each --rates value for --seconds; the load client on
CPU0, the origin on CPU1. Reported: requests sent per second, replies per second, errors, response
and send-lateness percentiles, CPU seconds per request of each process. Then the origin alone
under wrk (one thread, 8 connections, a 13 KB object) for its ceiling. Both must reach 500 req/s
with every request answered and no errors; the exit status says whether they did.

Run: ./spe bench workload_throughput [--rates 500,1000] [--seconds 20] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import ROOT, command
from bench.lib.doc import add_write_docs, machine, publish
from bench.lib.meters import cpu_seconds
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Workload throughput"

PYTHON = sys.executable
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
TARGET = 500


def run_load(origin_port: int, rate: int, seconds: float, workdir: Path) -> dict:
    out = workdir / f"load-{rate}.json"
    argv = ["taskset", "-c", "0", PYTHON, "-m", "spe_tools.workload.load", "--origin", f"127.0.0.1:{origin_port}",
            "--rate", str(rate), "--duration", f"{seconds}s", "--robots", "8", "--seed", str(rate),
            "--report-every", str(seconds), "--json", str(out)]
    proc = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu = 0.0
    try:
        while proc.poll() is None:  # sample the client's CPU time until it exits (children's time is lost)
            try:
                cpu = cpu_seconds([proc.pid])
            except OSError:
                break
            try:
                proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        proc.communicate(timeout=seconds + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads(out.read_text())
    summary["client_cpu_s"] = cpu
    return summary


def wrk_origin(origin_port: int, seconds: float) -> float:
    run = subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c8", f"-d{seconds:g}s",
                          f"http://127.0.0.1:{origin_port}/obj/wrk?size=13312&cc=public"],
                         capture_output=True, text=True, timeout=seconds + 60)
    m = re.search(r"Requests/sec:\s+([\d.]+)", run.stdout)
    if not m:
        raise RuntimeError(f"wrk output not understood:\n{run.stdout}{run.stderr}")
    return float(m.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="500,1000", help="load rates to run, req/s (default 500,1000)")
    parser.add_argument("--seconds", type=parse_duration, default=20, help="per rate (default 20)")
    add_write_docs(parser)
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="spe-bench-workload-"))
    try:
        with ProcessGroup(workdir) as group:
            port = free_port()
            origin = group.start("origin", ["taskset", "-c", "1", PYTHON, "-m", "spe_tools.workload.origin",
                                            "--listen", f"127.0.0.1:{port}", "--think-mean-ms", "0",
                                            "--think-sd-ms", "0"], port=port, env=ENV)
            rows = [load_row(port, origin.pid, rate, args.seconds, workdir) for rate in rates]
            ceiling = wrk_origin(port, min(args.seconds, 10))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    problems = problems_of(rows, ceiling)
    publish(report(args, rows, ceiling, problems), [], title=TITLE, write=args.write_docs)
    return 0 if not problems else 1


def load_row(origin_port: int, origin_pid: int, rate: int, seconds: float, workdir: Path) -> tuple[int, dict, float]:
    """(rate, the load client's summary, the origin's CPU seconds) of one load run."""
    before = cpu_seconds([origin_pid])
    summary = run_load(origin_port, rate, seconds, workdir)
    return rate, summary, cpu_seconds([origin_pid]) - before


def problems_of(rows: list[tuple[int, dict, float]], ceiling: float) -> list[str]:
    """Every run at the target rate or above answered completely, the best reply rate and wrk's ceiling at
    least the target."""
    problems = [f"at {rate}/s: {s['errors']} errors, {s['lost']} lost, {s['completed']} of {s['sent']} completed"
                for rate, s, _ in rows
                if rate >= TARGET and (s["errors"] or s["lost"] or s["completed"] != s["sent"])]
    best = max((s["reply_rate"] for rate, s, _ in rows if not s["errors"]), default=0.0)
    if best < TARGET * 0.97:
        problems.append(f"load client and origin side by side reached {best:.0f} replies/s, below {TARGET}")
    if ceiling < TARGET:
        problems.append(f"origin alone under wrk: {ceiling:.0f} req/s, below {TARGET}")
    return problems


def report(args: argparse.Namespace, rows: list[tuple[int, dict, float]], ceiling: float, problems: list[str]) -> str:
    lines = ["| load rate req/s | sent/s | replies/s | errors | response p50 / p99 ms | sent late p50 / p99 ms "
             "| client CPU µs/req | origin CPU µs/req |", "|---|---|---|---|---|---|---|---|"]
    for rate, s, origin_cpu in rows:
        n = max(1, s["completed"])
        lines.append(f"| {rate} | {s['rate_achieved']:.1f} | {s['reply_rate']:.1f} | {s['errors']} | "
                     f"{s['response_ms']['p50']:.2f} / {s['response_ms']['p99']:.2f} | "
                     f"{s['late_ms']['p50']:.2f} / {s['late_ms']['p99']:.2f} | "
                     f"{1e6 * s['client_cpu_s'] / n:.0f} | {1e6 * origin_cpu / n:.0f} |")
    table = "\n".join(lines)
    verdict = "PASS" if not problems else "FAIL: " + "; ".join(problems)
    return (f"\n## {TITLE} — {datetime.date.today().isoformat()}\n\n"
            f"Command: `./spe bench workload_throughput --rates {args.rates} --seconds {args.seconds}`  \n"
            f"Machine: {machine()}  \n"
            f"`./spe load` (CPU0, 8 robots) straight at `./spe origin` (CPU1, no think time, default content "
            f"model), {args.seconds} s per rate:\n\n{table}\n\n"
            f"Origin alone under wrk (1 thread, 8 connections, 13 KB cacheable object): {ceiling:.0f} req/s.  \n"
            f"Target: each at least {TARGET} req/s: {verdict}\n")

if __name__ == "__main__":
    sys.exit(main())
