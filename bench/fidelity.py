"""Measurement fidelity of the Multiplier, ROPE section 7, on loopback.

--part dummies (ROPE 7.2, "proxy penalty"): two identical dummy proxies under test (the Multiplier
  in --dummy mode, passing every request to its own Collector port) against the direct path. A steady
  fixed-rate client sends a mix of object sizes (1 KB to 256 KB, all Collector HITs after a warm-up);
  from the Multiplier's JSON Lines log it compares, request by request, the Collector's measured
  latency (total_us) with each dummy's: mean, median and p90 of each, and the paired difference with
  its 95 % confidence interval (normal approximation for the mean, order statistics for the median:
  spe_tools/summary_stats.py).
  A dummy is one more hop than the direct path, so it is expected to be slower by the cost of a hop;
  the two dummies must be equal to each other.

--part positions (ROPE 7.4, "proxy ordering effects"): three identically configured Debian Squids
  under test (memory cache, each a child of its own Collector port), warmed so every measured request
  is a HIT in each. The Multiplier rotates the fan-out order by one per request (docs/log-format.md:
  `position`), so each proxy takes each position equally often. Reported per proxy and per position:
  mean and median latency, the spread (max − min) / mean across positions (target < 1 %), and the
  paired position effect: each leg's latency minus the mean of the three legs of the same request,
  which removes the object's own variation, with its 95 % interval. Run in two placements: every server
  on CPU1 (the perf anchors' placement) and unpinned (the scheduler spreads the servers on both CPUs),
  each with the Multiplier's --legs parallel (every proxy at once) and --legs serial (one after another).

Common set-up (127.0.0.1 only, stopped by PID however the run ends): nginx origin serving the objects
from files (Cache-Control max-age=3600), the Collector = the project's configuration (configs/collector)
on Debian's stock Squid 5.7, the release Multiplier (sequential mode, --log), the client in this
process (asyncio, fixed rate, 16 persistent connections) on CPU0.

Run: ./spe bench fidelity [--part dummies|positions|both] [--rate 100] [--seconds 30]
                          [--placements pinned,unpinned] [--legs parallel,serial] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench import command
from bench.lib.clients import fixed_rate, get
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, BenchError, on_load_cpu, run_main
from bench.lib.logs import fmt_counter, stderr_problems
from bench.lib.meters import busy_seconds
from bench.lib.servers import (
    SQUID,
    allocate_ports,
    check_alive,
    start_dummy,
    start_file_server,
    start_multiplier,
    start_squid_pinned,
    start_stock_collector,
    write_objects,
)
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup
from spe_tools.summary_stats import mean_ci, median, median_ci, percentile

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Measurement fidelity"

# The object mix: (size, share); 20 objects of each size. Mean about 27 KB, ROPE's was 13 KB exponential.
MIX = ((1024, 0.30), (4096, 0.25), (13312, 0.25), (65536, 0.15), (262144, 0.05))
PER_SIZE = 20
TARGET_SPREAD = 0.01
ROPE_72 = "ROPE 7.2 (Polygraph, 5500 requests over a LAN): direct 216 ms mean / 142 ms median, dummy 260 / 180 ms"
ROPE_74 = ("ROPE 7.4 (3100 requests, three Apache caches in a fixed order): means 248, 242, 244 ms (spread 2.5 %), "
           "medians 121, 125, 120 ms (4.1 %)")


def objects() -> dict[str, int]:
    return {f"o/{size}-{k}": size for size, _ in MIX for k in range(PER_SIZE)}


def url_list(origin_host: str, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    sizes, weights = zip(*MIX, strict=True)
    return [f"http://{origin_host}/o/{s}-{rng.randrange(PER_SIZE)}" for s in rng.choices(sizes, weights, k=n)]


def warm(port: int, origin_host: str, names: list[str]) -> int:
    """Every object once through the Multiplier (fills the Collector and the caching proxies)."""
    for name in names:
        status, _, _ = get(port, f"http://{origin_host}/{name}", origin_host)
        if status != 200:
            raise BenchError(f"warm-up: {name} gave {status}")
    time.sleep(1.0)  # let the last fan-outs finish
    return len(names)


def drive(port: int, origin_host: str, rate: float, seconds: float, seed: int) -> dict:
    """The fixed-rate client on LOAD_CPU, with the machine's CPU use around it."""
    urls = url_list(origin_host, int(rate * seconds) + 1, seed)
    busy0, t0 = busy_seconds(), time.monotonic()
    with on_load_cpu():
        result = fixed_rate(port, urls.__getitem__, rate, seconds)
    result["busy_cpu"] = busy_seconds() - busy0
    result["wall"] = time.monotonic() - t0
    return result


def records(path: Path, first_id: int) -> list[dict]:
    """The measured records (id > first_id) whose client got a 200 and every proxy a reply."""
    out = []
    with path.open() as f:
        for line in f:
            rec = json.loads(line)
            if rec["id"] > first_id and rec.get("client_status") == 200 and rec["collector"].get("total_us") \
                    and all(p.get("total_us") for p in rec["proxies"]):
                out.append(rec)
    return out


def result_counts(path: Path, first_id: int) -> tuple[int, collections.Counter]:
    n, results = 0, collections.Counter()
    with path.open() as f:
        for line in f:
            rec = json.loads(line)
            if rec["id"] > first_id:
                n += 1
                results.update(p["result"] for p in rec["proxies"])
    return n, results


def ms(us: float) -> str:
    return f"{us / 1000:.3f}"


def mean_pm(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95 % confidence interval."""
    low, high = mean_ci(values)
    return (low + high) / 2, (high - low) / 2


def describe(values: list[float]) -> str:
    return f"{ms(statistics.fmean(values))} | {ms(median(values))} | {ms(percentile(values, 0.9))}"


def client_line(r: dict) -> str:
    lat = [x * 1e6 for x in r["latency"]]
    return (f"client: {len(r['latency'])} replies in {r['elapsed']:.1f} s ({len(r['latency']) / r['elapsed']:.1f}/s), "
            f"status {fmt_counter(r['status'])}, {len(r['errors'])} errors, latency p50 {ms(percentile(lat, 0.5))} ms "
            f"p99 {ms(percentile(lat, 0.99))} ms, sent late p99 {percentile(r['late'], 0.99) * 1000:.2f} ms; "
            f"machine CPU during the run {r['busy_cpu']:.1f} CPU-s of {2 * r['wall']:.0f}")


def run_part(args: argparse.Namespace, workdir: Path, part: str, proxies: list[str], start_proxy: Callable,
             cpu: int | None = SERVER_CPU, extra: tuple[str, ...] = (),
             seed: int = 0) -> tuple[Path, int, dict, list[str]]:
    """The origin, the Collector with a port per proxy, the proxies under test (start_proxy(group, name, port,
    Collector port, cpu)) and the Multiplier, warmed, then the fixed-rate client: the Multiplier's log, the last
    warm-up record's id, the client's figures and the warnings on the Multiplier's stderr."""
    ports = allocate_ports(["origin", "collector", "mult", *proxies, *(f"c-{p}" for p in proxies)])
    origin_host = f"127.0.0.1:{ports['origin']}"
    log = workdir / f"{part}.jsonl"
    with ProcessGroup(workdir / part) as group:
        group.workdir.mkdir()
        group.workdir.chmod(0o755)
        start_file_server(group, "origin", workdir / "www", [ports["origin"]], cpu)
        start_stock_collector(group, ports["collector"], {p: ports[f"c-{p}"] for p in proxies}, cpu)
        for p in proxies:
            start_proxy(group, p, ports[p], ports[f"c-{p}"], cpu)
        mult = start_multiplier(group, "mult", ports["mult"], ports["collector"], {p: ports[p] for p in proxies},
                                log, cpu=cpu, extra=extra)
        first = warm(ports["mult"], origin_host, list(objects()))
        client = drive(ports["mult"], origin_host, args.rate, args.seconds, seed=seed)
        check_alive(group)
        mult.stop(deadline_s=15)
        return log, first, client, stderr_problems(mult.log)[:5]


# ---------------------------------------------------------------- 7.2: dummies

DUMMIES = ["dummy1", "dummy2"]


def part_dummies(args: argparse.Namespace, workdir: Path) -> tuple[str, list[str]]:
    log, first, client, stderr = run_part(args, workdir, "dummies", DUMMIES, start_dummy, seed=72)
    problems = [f"Multiplier stderr: {line}" for line in stderr]
    recs = records(log, first)
    n_all, results = result_counts(log, first)
    if len(recs) < 100:
        raise BenchError(f"dummies: only {len(recs)} usable records of {n_all}")
    direct = [r["collector"]["total_us"] for r in recs]
    legs = {d: [next(p for p in r["proxies"] if p["name"] == d)["total_us"] for r in recs] for d in DUMMIES}
    both = [a - b for a, b in zip(legs[DUMMIES[0]], legs[DUMMIES[1]], strict=True)]
    m12, h12 = mean_pm(both)
    lo12, hi12 = median_ci(both)
    by_pos = {pos: [p["total_us"] for r in recs for p in r["proxies"] if p["position"] == pos] for pos in (0, 1)}
    mean_gap = statistics.fmean(legs[DUMMIES[0]] + legs[DUMMIES[1]]) / statistics.fmean(direct) - 1
    text = (f"### 7.2 Proxy penalty: two dummies against the direct path\n\n"
            f"{len(recs)} measured requests ({n_all} logged after the warm-up; proxy results "
            f"{fmt_counter(results)}), {args.rate:g} req/s for {args.seconds:g} s, every server on CPU{SERVER_CPU}. "
            f"{client_line(client)}.\n\n" + "\n".join(penalty_rows(direct, legs)) + "\n\n"
            f"- dummy1 − dummy2 (identical proxies): mean {m12 / 1000:+.3f} ms (±{h12 / 1000:.3f}), median "
            f"{median(both) / 1000:+.3f} ms ({lo12 / 1000:+.3f} … {hi12 / 1000:+.3f})\n"
            f"- by fan-out position (either dummy): first {ms(statistics.fmean(by_pos[0]))} ms mean / "
            f"{ms(median(by_pos[0]))} ms median, second {ms(statistics.fmean(by_pos[1]))} / "
            f"{ms(median(by_pos[1]))} ms\n"
            f"- the dummies' mean is {mean_gap:+.0%} of the direct mean; {ROPE_72}, i.e. +20 %\n\n"
            + "\n".join(size_rows(recs, direct, legs)) + "\n")
    return text, problems


def penalty_rows(direct: list[float], legs: dict[str, list[float]]) -> list[str]:
    """The direct path and each dummy, and each dummy's paired difference to the direct path."""
    rows = ["| path | mean ms | median ms | p90 ms | paired difference to direct: mean ms (95 % CI) | "
            "median ms (95 % CI) |", "|---|---|---|---|---|---|",
            f"| direct (the Collector, as the Multiplier measured it) | {describe(direct)} | – | – |"]
    for d, times in legs.items():
        diff = [a - b for a, b in zip(times, direct, strict=True)]
        m, h = mean_pm(diff)
        lo, hi = median_ci(diff)
        rows.append(f"| {d} (Multiplier --dummy → its Collector port) | {describe(times)} | {m / 1000:+.3f} "
                    f"(±{h / 1000:.3f}) | {median(diff) / 1000:+.3f} "
                    f"({lo / 1000:+.3f} … {hi / 1000:+.3f}) |")
    return rows


def size_rows(recs: list[dict], direct: list[float], legs: dict[str, list[float]]) -> list[str]:
    """Per object size: the direct and the dummies' medians and their median paired difference."""
    rows = ["| object size | requests | direct median ms | dummies median ms | median paired difference ms |",
            "|---|---|---|---|---|"]
    for size, _ in MIX:
        idx = [i for i, r in enumerate(recs) if r["collector"]["bytes"] == size]
        if not idx:
            continue
        dm = [times[i] for times in legs.values() for i in idx]
        pd = [times[i] - direct[i] for times in legs.values() for i in idx]
        rows.append(f"| {size // 1024} KB | {len(idx)} | {ms(median([direct[i] for i in idx]))} | "
                    f"{ms(median(dm))} | {median(pd) / 1000:+.3f} |")
    return rows


# ---------------------------------------------------------------- 7.4: positions

SQUIDS = ["squid1", "squid2", "squid3"]


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.fmean(values)


def part_positions(args: argparse.Namespace, workdir: Path, placement: str, order: str) -> tuple[str, list[str]]:
    cpu = SERVER_CPU if placement == "pinned" else None
    log, first, client, stderr = run_part(args, workdir, f"positions-{placement}-{order}", SQUIDS,
                                          start_squid_pinned, cpu, ("--legs", order), seed=74)
    problems = [f"Multiplier stderr ({placement}): {line}" for line in stderr]
    recs = [r for r in records(log, first) if len(r["proxies"]) == len(SQUIDS)]
    n_all, results = result_counts(log, first)
    if len(recs) < 100:
        raise BenchError(f"positions ({placement}, {order} legs): only {len(recs)} usable records of {n_all}")
    # each leg: (proxy, position, latency, the mean latency of the request's legs)
    legs = [(p["name"], p["position"], p["total_us"], statistics.fmean(q["total_us"] for q in r["proxies"]))
            for r in recs for p in r["proxies"]]
    by_proxy = {n: [t for name, _, t, _ in legs if name == n] for n in SQUIDS}
    by_pos = {k: [t for _, pos, t, _ in legs if pos == k] for k in range(len(SQUIDS))}
    s_mean = spread([statistics.fmean(v) for v in by_pos.values()])
    s_median = spread([median(v) for v in by_pos.values()])
    s_proxy = spread([statistics.fmean(v) for v in by_proxy.values()])
    verdict = "met" if max(s_mean, s_median) < TARGET_SPREAD else "NOT met"
    where = f"every server on CPU{SERVER_CPU}" if cpu is not None else "no server pinned (both CPUs)"
    how = ("`--legs parallel`: every proxy gets the request at once" if order == "parallel" else
           "`--legs serial`: each proxy gets the request when the previous one has answered")
    text = (f"#### Placement: {where}; {how}\n\n"
            f"{len(recs)} measured requests ({n_all} logged after the warm-up; proxy results {fmt_counter(results)}), "
            f"{args.rate:g} req/s for {args.seconds:g} s. {client_line(client)}.\n\n"
            + "\n".join(effect_rows(legs, by_proxy, by_pos)) + "\n\n"
            f"- spread (max − min) / mean across positions: **{s_mean:.1%} of the means, {s_median:.1%} of the "
            f"medians** (target < {TARGET_SPREAD:.0%}: **{verdict}**); across proxies {s_proxy:.1%} of the means\n")
    return text, problems


def effect_rows(legs: list[tuple], by_proxy: dict[str, list[float]], by_pos: dict[int, list[float]]) -> list[str]:
    """Per proxy and per position: legs, mean, median and the paired effect (a leg's latency minus the mean of
    its request's legs) with its 95 % interval, also as a share of the overall mean."""
    overall = statistics.fmean(t for _, _, t, _ in legs)
    rows = ["| | legs | mean ms | median ms | paired effect: mean ms (95 % CI) | as % of the mean |",
            "|---|---|---|---|---|---|"]
    groups = [(f"proxy {n}", times, [t - m for name, _, t, m in legs if name == n]) for n, times in by_proxy.items()]
    groups += [(f"position {k}", times, [t - m for _, pos, t, m in legs if pos == k]) for k, times in by_pos.items()]
    for label, times, effect in groups:
        mean_e, half = mean_pm(effect)
        rows.append(f"| {label} | {len(times)} | {ms(statistics.fmean(times))} | "
                    f"{ms(median(times))} | {mean_e / 1000:+.3f} (±{half / 1000:.3f}) | "
                    f"{mean_e / overall:+.1%} |")
    return rows


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("dummies", "positions", "both"), default="both")
    parser.add_argument("--rate", type=float, default=100, help="client requests per second (default 100)")
    parser.add_argument("--seconds", type=parse_duration, default=30, help="seconds per measurement (default 30)")
    parser.add_argument("--placements", default="pinned,unpinned",
                        help="for --part positions: pinned (every server on CPU1), unpinned, or both (default)")
    parser.add_argument("--legs", default="parallel,serial",
                        help="for --part positions: the Multiplier's --legs, parallel, serial or both (default)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, configs)")
    args = parser.parse_args()
    args.placements = [p for p in args.placements.split(",") if p]
    if not args.placements or set(args.placements) - {"pinned", "unpinned"}:
        parser.error("--placements: pinned, unpinned or pinned,unpinned")
    args.legs = [p for p in args.legs.split(",") if p]
    if not args.legs or set(args.legs) - {"parallel", "serial"}:
        parser.error("--legs: parallel, serial or parallel,serial")
    if args.rate <= 0 or args.seconds < 5:
        parser.error("--rate must be > 0 and --seconds >= 5")
    return run_main("fidelity", ("nginx", "taskset", SQUID), lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    write_objects(workdir / "www", objects())
    sections, problems = [], []
    if args.part in ("dummies", "both"):
        text, probs = part_dummies(args, workdir)
        print(text, file=sys.stderr)
        sections.append(text)
        problems += probs
    if args.part in ("positions", "both"):
        texts = []
        for placement, order in ((p, o) for p in args.placements for o in args.legs):
            text, probs = part_positions(args, workdir, placement, order)
            print(text, file=sys.stderr)
            texts.append(text)
            problems += probs
        sections.append("### 7.4 Proxy ordering: three identical Squids, rotating fan-out order\n\n"
                        "Paired effect = a leg's latency minus the mean of the three legs of the same request "
                        "(same object, same moment), averaged per position or proxy; it removes the object's own "
                        "variation, which in the plain means is far larger than 1 %. " + ROPE_74 + ".\n\n"
                        + "\n".join(texts))
    report = (f"\n## {TITLE} (ROPE 7.2 dummies, 7.4 positions) — "
              f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n\n"
              f"Machine: {machine()}. Command: `{command_line('fidelity')}`. **The machine is shared with other "
              f"work and noisy** (the machine CPU figure in each part counts everything, both cores). Origin: nginx "
              f"serving {len(objects())} objects ({', '.join(f'{s // 1024} KB {w:.0%}' for s, w in MIX)} of the "
              f"requests), warmed first, so every measured request is a Collector HIT (and a HIT in each Squid under "
              f"test). Collector: the project's configuration on Debian's stock Squid 5.7. The Multiplier: release "
              f"build, sequential mode; latencies are its log's `total_us` (from the start of each leg to the last "
              f"body byte). Client: fixed rate, 16 persistent connections, on CPU{LOAD_CPU}.\n\n"
              + "\n".join(sections))
    return publish(report, problems, title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
