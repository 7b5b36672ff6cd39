"""How the Multiplier's CPU per request and memory scale, on loopback.

Two sweeps, each point with a fresh Multiplier (release build, one I/O thread, sequential mode,
JSON log) pinned to CPU1:
  rate     fixed-rate client at --rates (default 100, 500, 1000, 2000 req/s) with --proxies-for-rates
           (default 4) proxies under test
  proxies  --counts (default 0, 1, 2, 4, 8) proxies under test at --rate-for-counts (default 500 req/s)
Per point: the Multiplier's CPU time per client request (Δ utime+stime from /proc/PID/stat over the
replies; 10 ms ticks, so about ±3 % at the smallest point), its RSS (VmRSS) before and after the run
and its peak (VmHWM), the rate the client reached and its latency. A table goes to docs/benchmarks.md
and a plot to docs/images/scaling.png.

Set-up (127.0.0.1 only, stopped by PID however the run ends): the origin and the stand-in proxies
under test are one nginx (one worker, files with Cache-Control max-age=3600, one port per stand-in:
the stand-ins answer like a caching proxy with a HIT, the cheapest honest stand-in, so that the
Multiplier gets the CPU it needs at 2000 req/s on this 2-CPU machine); the Collector is the project's
configuration on Debian's stock Squid 5.7 (a memory HIT after the warm-up). The client is this process
(asyncio, fixed rate, 32 persistent connections) on CPU0; nginx and Squid are not pinned.

Run: ./spe bench scaling [--rates 100,500,1000,2000] [--proxies-for-rates 4] [--counts 0,1,2,4,8]
                         [--rate-for-counts 500] [--seconds 15] [--size 1024] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.clients import fixed_rate, get
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, BenchError, on_load_cpu, run_main
from bench.lib.logs import fmt_counter, read_multiplier_log, stderr_problems
from bench.lib.meters import busy_seconds, cpu_seconds, rss_and_peak_kb
from bench.lib.servers import (
    SQUID,
    allocate_ports,
    check_alive,
    start_file_server,
    start_multiplier,
    start_stock_collector,
    write_objects,
)
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup
from spe_tools.summary_stats import percentile

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Multiplier scaling: CPU and memory versus request rate and proxies"

PLOT = ROOT / "docs/images/scaling.png"
CONNECTIONS = 32
WARMUP_S = 2.0


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def point(group: ProcessGroup, ports: dict[str, int], n: int, rate: float, seconds: float, url: str,
          name: str) -> dict:
    """One fresh Multiplier with n proxies, driven at `rate` for `seconds` after a short warm-up."""
    log = group.workdir / f"{name}.jsonl"
    mult = start_multiplier(group, name, ports["mult"], ports["collector"],
                            {f"p{i + 1}": ports[f"s{i + 1}"] for i in range(n)}, log,
                            extra=("--ignore-header", "Expires"))  # the stand-ins compute it per reply
    try:
        host = url.split("/")[2]
        for _ in range(20):
            status, _, _ = get(ports["mult"], url, host)
            if status != 200:
                raise BenchError(f"{name}: warm-up request gave {status}")
        with on_load_cpu():
            fixed_rate(ports["mult"], lambda i: url, rate, WARMUP_S, CONNECTIONS)  # connections, pools, pages
            rss0, _ = rss_and_peak_kb(mult.pid)
            cpu0, busy0, t0 = cpu_seconds([mult.pid]), busy_seconds(), time.monotonic()
            r = fixed_rate(ports["mult"], lambda i: url, rate, seconds, CONNECTIONS)
            cpu1, busy1, wall = cpu_seconds([mult.pid]), busy_seconds(), time.monotonic() - t0
        rss1, hwm = rss_and_peak_kb(mult.pid)
        check_alive(group)
    finally:
        code = mult.stop(deadline_s=15)
        group.children.remove(mult)  # stopped on purpose: check_alive must not count it
    replies = len(r["latency"])
    lat = [x * 1e6 for x in r["latency"]]
    counts = read_multiplier_log(log)
    problems = [f"{name}: {line}" for line in stderr_problems(mult.log)[:3]]
    if r["errors"]:
        problems.append(f"{name}: {len(r['errors'])} client errors (first: {r['errors'][0]})")
    if set(r["status"]) - {200}:
        problems.append(f"{name}: client status {fmt_counter(r['status'])}")
    bad = {k: v for k, v in counts["results"].items() if k != "OK"}
    if bad:
        problems.append(f"{name}: proxy results {fmt_counter(counts['results'])}")
    if code != 0:
        problems.append(f"{name}: exit code {code} on SIGTERM")
    return {"proxies": n, "rate": rate, "achieved": replies / r["elapsed"], "replies": replies,
            "cpu_us": (cpu1 - cpu0) * 1e6 / max(1, replies), "cpu_share": (cpu1 - cpu0) / wall,
            "rss0_mb": rss0 / 1024, "rss1_mb": rss1 / 1024, "hwm_mb": hwm / 1024,
            "p50_ms": percentile(lat, 0.5) / 1000, "p99_ms": percentile(lat, 0.99) / 1000,
            "late_p99_ms": percentile(r["late"], 0.99) * 1000,
            "foreign": (busy1 - busy0) - (cpu1 - cpu0), "wall": wall, "problems": problems}


def table(rows: list[dict]) -> str:
    head = ("| proxies | rate req/s (reached) | replies | Multiplier CPU µs/req | Multiplier CPU % of a core | "
            "RSS MB before → after (peak) | client p50 / p99 ms | sent late p99 ms | other CPU-s (all cores) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(f"| {r['proxies']} | {r['rate']:g} ({r['achieved']:.0f}) | {r['replies']} | {r['cpu_us']:.1f} | "
                     f"{r['cpu_share']:.0%} | {r['rss0_mb']:.1f} → {r['rss1_mb']:.1f} ({r['hwm_mb']:.1f}) | "
                     f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f} | {r['late_p99_ms']:.1f} | {r['foreign']:.1f} |")
    return "\n".join(lines)


def plot(by_rate: list[dict], by_count: list[dict], n_for_rates: int, rate_for_counts: float, path: Path) -> None:
    import matplotlib  # noqa: PLC0415 (the plot is optional; the tables do not need matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for col, (rows, key, label) in enumerate(((by_rate, "achieved", "client request rate reached (req/s)"),
                                             (by_count, "proxies", "proxies under test"))):
        xs = [r[key] for r in rows]
        ax = axes[0][col]
        ax.plot(xs, [r["cpu_us"] for r in rows], "o-")
        ax.set_xlabel(label)
        ax.set_ylabel("Multiplier CPU per client request (µs)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax = axes[1][col]
        ax.plot(xs, [r["rss1_mb"] for r in rows], "o-", label="RSS after the run")
        ax.plot(xs, [r["hwm_mb"] for r in rows], "s--", label="peak RSS (VmHWM)")
        ax.set_xlabel(label)
        ax.set_ylabel("Multiplier memory (MB)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    axes[0][0].set_title(f"versus request rate ({n_for_rates} proxies)")
    axes[0][1].set_title(f"versus proxies under test ({rate_for_counts:g} req/s)")
    fig.suptitle("SPE Multiplier scaling on loopback (release build, one I/O thread; shared 2-vCPU machine)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="100,500,1000,2000", help="client rates for the rate sweep (req/s)")
    parser.add_argument("--proxies-for-rates", type=int, default=4, help="proxies under test in the rate sweep")
    parser.add_argument("--counts", default="0,1,2,4,8", help="proxies under test for the proxies sweep")
    parser.add_argument("--rate-for-counts", type=float, default=500, help="client rate in the proxies sweep")
    parser.add_argument("--seconds", type=parse_duration, default=15, help="seconds per point (default 15)")
    parser.add_argument("--size", type=int, default=1024, help="object size in bytes (default 1024)")
    parser.add_argument("--no-plot", action="store_true", help="do not write docs/images/scaling.png")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, configs)")
    args = parser.parse_args()
    try:
        args.rates, args.counts = ints(args.rates), ints(args.counts)
    except ValueError:
        parser.error("--rates and --counts: comma-separated integers")
    if not args.rates or not args.counts or min(args.rates) <= 0 or min(args.counts) < 0 or max(args.counts) > 32 \
            or args.seconds < 2 or args.size < 1:
        parser.error("rates > 0, counts 0..32, --seconds >= 2, --size >= 1")
    return run_main("scaling", ("nginx", "taskset", SQUID), lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    n_max = max([*args.counts, args.proxies_for_rates])
    ports = allocate_ports(["origin", "collector", "mult", *(f"s{i + 1}" for i in range(n_max))])
    write_objects(workdir / "www", {"obj": args.size})
    url = f"http://127.0.0.1:{ports['origin']}/obj"
    by_rate, by_count = [], []
    with ProcessGroup(workdir) as group:
        start_file_server(group, "nginx", workdir / "www",
                          [ports["origin"], *(ports[f"s{i + 1}"] for i in range(n_max))], cpu=None)
        start_stock_collector(group, ports["collector"], {}, cpu=None)
        status, headers, _ = get(ports["collector"], url, url.split("/")[2])
        if status != 200:
            raise BenchError(f"Collector: {url} gave {status}")
        for rate in args.rates:
            by_rate.append(point(group, ports, args.proxies_for_rates, rate, args.seconds, url, f"rate{rate}"))
            print(table(by_rate[-1:]).splitlines()[-1], file=sys.stderr)
        for n in args.counts:
            by_count.append(point(group, ports, n, args.rate_for_counts, args.seconds, url, f"proxies{n}"))
            print(table(by_count[-1:]).splitlines()[-1], file=sys.stderr)
    if not args.no_plot:
        plot(by_rate, by_count, args.proxies_for_rates, args.rate_for_counts, PLOT)
    problems = [p for r in by_rate + by_count for p in r["problems"]]
    short = [r for r in by_rate + by_count if r["achieved"] < 0.97 * r["rate"]]
    notes = [f"- {r['proxies']} proxies at {r['rate']:g} req/s: the client reached only {r['achieved']:.0f} req/s "
             f"(saturated: the machine's two cores, shared with the client, the Collector, the stand-ins and other "
             f"work)" for r in short]
    report = (f"\n## {TITLE} — "
              f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n\n"
              f"Machine: {machine()}. Command: `{command_line('scaling')}`. **The machine is shared with other work "
              f"and noisy**: the last column is the CPU time used by everything but the Multiplier during the run "
              f"(client, Collector, stand-ins and other work), for {args.seconds:g} s on 2 cores.\n\n"
              f"Each point: a fresh Multiplier (release build, one I/O thread, sequential mode, JSON log) pinned to "
              f"CPU{SERVER_CPU}, 20 warm-up requests and {WARMUP_S:g} s at the rate, then {args.seconds:g} s measured. "
              f"Client: fixed-rate asyncio client in the benchmark process on CPU{LOAD_CPU}, {CONNECTIONS} persistent "
              f"connections, {args.size} B object. The Collector (the project's configuration on stock Squid 5.7, a "
              f"memory HIT) and the stand-in proxies (one nginx serving the file on one port per proxy, like a "
              f"caching proxy's HIT) float on both cores. CPU µs/req = Δ(utime+stime) of the Multiplier / replies "
              f"(10 ms ticks). The Multiplier ignores `Expires` in its comparison (the stand-ins compute it per "
              f"reply; every other header and the body are compared). RSS = VmRSS right before and after the "
              f"measured run, peak = VmHWM.\n\n"
              f"![Multiplier CPU per request and RSS versus rate and proxies](images/scaling.png)\n\n"
              f"Versus request rate, {args.proxies_for_rates} proxies under test:\n\n{table(by_rate)}\n\n"
              f"Versus proxies under test, {args.rate_for_counts:g} req/s:\n\n{table(by_count)}\n"
              + ("\n" + "\n".join(notes) + "\n" if notes else ""))
    return publish(report, problems, title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
