"""Latency the Multiplier adds over going straight to the Collector, and over a one-hop nginx, on loopback.

Set-up (all on 127.0.0.1, in a temporary directory; every process is stopped by PID):
  origin      nginx, one worker, serving /1k (1024 B), /13k (13312 B) and /1m (1 MiB) from files,
              Cache-Control: max-age=3600
  Collector   Debian squid 5.7, memory cache, objects warmed (every measured request is a HIT).
              One forward-proxy port for clients and the Multiplier, plus one port per proxy
              under test and one for the nginx hop, in `accel vhost` mode
  proxies     up to 8 stand-in proxies under test: ONE nginx, one worker, 8 listen ports, each a
              non-caching reverse-proxy hop (proxy_pass, keepalive upstream) to its own Collector
              port. So every client request costs the Collector 1 + N HITs with N proxies, as with
              real non-caching proxies under test (ROPE's Dummy); nginx is the cheapest honest
              hop (the perf anchors: ~50 us added per hop; a Squid child costs more CPU)
  nginx hop   the comparison: a plain one-hop nginx reverse proxy (proxy_pass, keepalive) in front
              of the Collector, its own nginx process
  Multiplier  --mode sequential, --log FILE; one instance per number of proxies: 0, 1, 2, 4, 8

Scenarios, interleaved round by round (the order rotates each round):
  origin     wrk -> origin nginx                                    no proxy at all
  direct     wrk -> Collector                                       the reference ("direct")
  nginx-hop  wrk -> nginx proxy_pass -> Collector                   what one plain proxy hop adds
  multN      wrk -> Multiplier (N proxies) -> Collector, then the fan-out to the N proxies
each one back-to-back (the next request leaves as soon as the reply is in) and, unless
--gap-ms 0, again with a pause of --gap-ms (default 2 ms) after every reply, so the fan-out
of one request is over before the next one arrives (a client with think time).

wrk runs with -t1 -c1 --latency (one persistent connection, sequential requests, an
absolute-form request target since it talks to a proxy) pinned to CPU0; every server is pinned
to CPU1, as in the project's perf anchors. Reported per size and scenario: medians over rounds of
wrk's p50 / p99 and requests/s, the added p50 / p99 versus direct and versus the origin (medians of
the per-round differences), the CPU time per client request (utime+stime from /proc/PID/stat) of
the server wrk talks to, of the Collector and of the stand-ins, and the CPU used by anything else on
the machine during the run ("foreign"). Targets: with 4 proxies, under 0.5 ms added at the
median, and no more than the one-hop nginx adds. Then it checks the Multipliers' logs (one record per
request, every proxy result OK, no warnings) and the Collector's access.log (all HITs, 1 request per
client request plus N per fan-out). Exit status 1 if a check failed.

Run: ./spe bench overhead [--quick] [--rounds N] [--seconds S] [--gap-ms MS] [--counts 0,1,2,4,8]
                          [--sizes 1k,13k,1m] [--base-port P] [--write-docs] [--keep]
 or: python3 -m bench.overhead ...
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from bench import command
from bench.lib.clients import get
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, BenchError, run_main
from bench.lib.logs import fmt_counter, read_multiplier_log, stderr_problems
from bench.lib.meters import busy_seconds, cpu_seconds
from bench.lib.servers import (
    SQUID,
    allocate_ports,
    check_alive,
    log_path,
    start_file_server,
    start_hops,
    start_multiplier,
    start_squid_conf,
    write_objects,
)
from bench.lib.wrk import run_wrk
from spe_tools.config_template import render_text
from spe_tools.duration import parse_duration
from spe_tools.process import Child, ProcessGroup, process_tree
from spe_tools.rundir import layout
from spe_tools.rundir.access_log import SPE_LOGFORMAT
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.port_usage import PortUsage, add_access_line
from spe_tools.summary_stats import median

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Multiplier overhead on loopback"

ALL_SIZES = {"1k": 1024, "13k": 13312, "1m": 1048576}
ALL_COUNTS = (0, 1, 2, 4, 8)
FIXED = ("origin", "direct", "nginx-hop")
DEFAULT_GAP_MS = 2.0
DEFAULT_GAP_MS_1M = 40.0
TARGET_N = 4
TARGET_ADDED_P50_US = 500.0

SQUID_CONF = """\
visible_hostname spe-bench
http_port 127.0.0.1:{{port}} name=direct
{{proxy_ports}}workers 1
pid_filename {{dir}}/squid.pid
cache_log {{dir}}/cache.log
logformat spe {{logformat}}
access_log stdio:{{dir}}/access.log spe
cache_store_log none
logfile_rotate 0
coredump_dir {{dir}}
netdb_filename none
icp_port 0
htcp_port 0
pinger_enable off
shutdown_lifetime 1 seconds
cache_mem 64 MB
maximum_object_size_in_memory 4 MB
memory_cache_mode always
http_access allow localhost
http_access deny all
refresh_pattern . 0 20% 4320
"""


def mult(n: int) -> str:
    return f"mult{n}"


# ---------------------------------------------------------------- set-up

def start_bench_collector(group: ProcessGroup, port: int, accel_ports: dict[str, int]) -> Child:
    """Squid logging in the Collector's format (spe_tools/rundir/access_log.py's SPE_LOGFORMAT) where a run
    directory keeps the Collector's files, so the accounting reads it with the run directory's own reader."""
    extra = "".join(f"http_port 127.0.0.1:{p} accel vhost name={n}\n" for n, p in accel_ports.items())
    conf = render_text(SQUID_CONF, {"port": port, "dir": group.workdir / layout.COLLECTOR, "proxy_ports": extra,
                                    "logformat": SPE_LOGFORMAT})
    return start_squid_conf(group, layout.COLLECTOR, conf, port, ports=tuple(accel_ports.values()))


def warm_and_check(setup: Setup, bodies: dict[str, bytes]) -> collections.Counter:
    """Fills the Collector's cache and checks every path once.

    Returns the requests sent per entry point (nginx-hop, multN) and per Collector side
    (client port, proxy ports, hop port), for the accounting at the end.
    """
    ports, origin_host = setup.ports, setup.origin_host
    sent: collections.Counter = collections.Counter()

    def check(port_name: str, target: str, body: bytes, hit: bool = False) -> None:
        status, headers, got = get(ports[port_name], target, origin_host)
        if status != 200 or got != body or (hit and "HIT" not in headers.get("x-cache", "")):
            raise BenchError(f"{port_name}: GET {target} gave {status}, {len(got)} bytes, X-Cache "
                             f"{headers.get('x-cache')} (expected 200, {len(body)} bytes{', a HIT' if hit else ''}; "
                             f"check Cache-Control from the origin)")

    for size, body in bodies.items():
        url = f"http://{origin_host}/{size}"
        check("origin", url, body)
        check("direct", url, body)
        check("direct", url, body, hit=True)
        sent["collector client port"] += 2
        check("chop", f"/{size}", body, hit=True)  # the accel ports share the cache key
        check("nginx-hop", url, body)
        sent["collector hop port"] += 2
        sent["nginx-hop"] += 1
        for i in range(setup.n_max):
            check(f"c{i + 1}", f"/{size}", body, hit=True)
            check(f"s{i + 1}", url, body)
            sent["collector proxy ports"] += 2
        for n in setup.counts:
            check(mult(n), url, body)
            sent[mult(n)] += 1
            sent["collector client port"] += 1
    return sent


# ---------------------------------------------------------------- log checks

COLLECTOR_SIDES = {"direct": "collector client port", "chop": "collector hop port"}  # the rest: proxy ports


def read_collector_log(path: Path, port_names: dict[int, str]) -> tuple[collections.Counter, collections.Counter, int]:
    """The Collector's access.log, read as the report reads it (spe_tools/rundir/port_usage.py): requests per port
    side, result codes, and the connections that sent no request (this script's readiness probes)."""
    usage: dict[str, PortUsage] = {}
    probes = 0
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines():
            # None: nothing to count, which for a line that is not blank means a connection that sent no request
            probes += add_access_line(usage, line, port_names) is None and bool(line.strip())
    sides: collections.Counter = collections.Counter()
    codes: collections.Counter = collections.Counter()
    for name, u in usage.items():
        sides[COLLECTOR_SIDES.get(name, "collector proxy ports")] += u.requests
        codes.update(u.codes)
    return sides, codes, probes


def busy_by_size(path: Path) -> collections.Counter:
    """Proxy legs refused as `busy` (the fan-out backlog reached --max-conns-per-proxy), per object."""
    busy: collections.Counter = collections.Counter()
    with path.open(errors="replace") as f:
        for line in f:
            with contextlib.suppress(json.JSONDecodeError):
                rec = json.loads(line)
                busy[rec.get("url", "").rsplit("/", 1)[-1]] += sum(p.get("error") == "busy" for p in rec["proxies"])
    return +busy


# ---------------------------------------------------------------- report

def paired(runs: list[dict], size: str, gap: float, target: str, base: str, key: str) -> float:
    """Median over rounds of (target − base) for one size and pacing, paired within each round."""
    diffs = [r[key] - b[key] for r in runs for b in runs
             if r["size"] == b["size"] == size and r["gap"] == b["gap"] == gap and r["round"] == b["round"]
             and r["target"] == target and b["target"] == base]
    return median(diffs)


def pacing(gap: float) -> str:
    return "back-to-back" if gap == 0 else f"{gap:g} ms gap"


def headline(runs: list[dict], gaps: dict[str, list[float]], counts: list[int]) -> str:
    """Added p50 / p99 per size and pacing: the hop, each Multiplier vs direct; Collector paths vs origin."""
    big = TARGET_N if TARGET_N in counts else max(counts)
    cols = ["nginx hop", *(f"Multiplier {n}p" for n in counts)]
    head = ("| size | pacing | " + " | ".join(f"{c} vs direct" for c in cols)
            + f" | Collector vs origin | nginx hop + Collector vs origin | Multiplier {big}p + Collector vs origin |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for size, size_gaps in gaps.items():
        for gap in size_gaps:
            def cell(target: str, base: str, size: str = size, gap: float = gap) -> str:
                return (f"{paired(runs, size, gap, target, base, 'p50'):+.0f} / "
                        f"{paired(runs, size, gap, target, base, 'p99'):+.0f}")
            row = [cell("nginx-hop", "direct"), *(cell(mult(n), "direct") for n in counts),
                   cell("direct", "origin"), cell("nginx-hop", "origin"), cell(mult(big), "origin")]
            lines.append(f"| {size} | {pacing(gap)} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def table(runs: list[dict], seconds: float, gaps: dict[str, list[float]], targets: list[str]) -> str:
    head = ("| size | pacing | scenario | runs × s | p50 µs (min–max) | p99 µs | added p50 µs | added p99 µs | req/s | "
            "front CPU µs/req | Collector CPU µs/req | stand-ins CPU µs/req | foreign CPU-s/run |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for size, size_gaps in gaps.items():
        for gap in size_gaps:
            for target in targets:
                rs = [r for r in runs if r["size"] == size and r["gap"] == gap and r["target"] == target]
                if not rs:
                    continue
                p50s = [r["p50"] for r in rs]
                ref = "origin" if target == "direct" else "direct"
                added50 = "–" if target == "origin" else f"{paired(runs, size, gap, target, ref, 'p50'):+.0f}"
                added99 = "–" if target == "origin" else f"{paired(runs, size, gap, target, ref, 'p99'):+.0f}"
                if target == "direct":
                    added50, added99 = f"({added50} vs origin)", f"({added99} vs origin)"
                front = "–" if target == "direct" else f"{median([r['front_cpu_us'] for r in rs]):.1f}"
                collector = "–" if target == "origin" else f"{median([r['collector_cpu_us'] for r in rs]):.1f}"
                standins = f"{median([r['standins_cpu_us'] for r in rs]):.1f}" if target.startswith("mult") and \
                    target != "mult0" else "–"
                lines.append(
                    f"| {size} | {pacing(gap)} | {target} | {len(rs)} × {seconds:g} | "
                    f"{median(p50s):.0f} ({min(p50s):.0f}–{max(p50s):.0f}) | {median([r['p99'] for r in rs]):.0f} | "
                    f"{added50} | {added99} | {median([r['rps'] for r in rs]):.0f} | {front} | {collector} | "
                    f"{standins} | {median([r['foreign_cpu'] for r in rs]):.2f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--seconds", type=parse_duration, default=2, help="seconds per wrk run (default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="1 round of 1 s per scenario, back-to-back only (a smoke run, about 1 minute)")
    parser.add_argument("--gap-ms", type=float, default=DEFAULT_GAP_MS,
                        help=f"also run every scenario with this pause between a reply and the next request "
                             f"(default {DEFAULT_GAP_MS:g}; 0 = back-to-back only)")
    parser.add_argument("--gap-ms-1m", type=float, default=DEFAULT_GAP_MS_1M,
                        help=f"the pause for 1 MB objects (default {DEFAULT_GAP_MS_1M:g}: longer than the fan-out)")
    parser.add_argument("--counts", default=",".join(map(str, ALL_COUNTS)),
                        help="numbers of proxies under test, one Multiplier each (default 0,1,2,4,8)")
    parser.add_argument("--sizes", default=",".join(ALL_SIZES), help="object sizes (default 1k,13k,1m)")
    parser.add_argument("--base-port", type=int, help="use consecutive ports from here (default: free ports)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, configs)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.gap_ms, args.gap_ms_1m = 1, 1.0, 0.0, 0.0
    try:
        args.counts = sorted({int(c) for c in args.counts.split(",")})
    except ValueError:
        parser.error("--counts: comma-separated integers, e.g. 0,1,2,4,8")
    args.sizes = [s for s in args.sizes.split(",") if s]
    if any(s not in ALL_SIZES for s in args.sizes) or not args.sizes:
        parser.error(f"--sizes: some of {','.join(ALL_SIZES)}")
    if args.rounds < 1 or args.seconds < 1 or min(args.gap_ms, args.gap_ms_1m) < 0 or \
            not 0 <= min(args.counts) <= max(args.counts) <= 32:
        parser.error("--rounds must be >= 1, --seconds >= 1, --gap-ms >= 0, --counts between 0 and 32")
    if args.base_port is not None and not 1024 <= args.base_port <= 65535 - 100:
        parser.error("--base-port must be between 1024 and 65435")
    return run_main("overhead", ("wrk", "nginx", "taskset", SQUID), lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    setup = plan(args)
    bodies = write_objects(workdir / "www", {s: ALL_SIZES[s] for s in setup.sizes})
    write_wrk_scripts(workdir, setup)
    with ProcessGroup(workdir) as group:
        servers = start_servers(group, setup)
        sent = warm_and_check(setup, bodies)
        check_alive(group)
        meter = Meter(group, setup, servers)
        for size in setup.sizes:  # warm-up: connection pools, caches, page cache (counted, not reported)
            for target in setup.targets:
                meter.measure(target, size, 0.0, 1)
        runs = measure_rounds(meter, setup, args.rounds, args.seconds)
        ending = stop_and_read(servers, setup, workdir)
    checks, problems = multiplier_checks(setup, meter, sent, ending)
    problems += [f"wrk {r['size']} {pacing(r['gap'])} {r['target']} round {r['round'] + 1}: {r['errors']}"
                 for r in runs if r["errors"]]
    check, found = collector_check(setup, meter, sent, ending)
    checks.append(check)
    problems += found
    return publish(report(args, setup, runs, checks, problems), problems, title=TITLE, write=args.write_docs)


# ---------------------------------------------------------------- the run, step by step

@dataclass
class Setup:
    """What one run measures: object sizes, numbers of proxies (one Multiplier each), each size's pacings
    (0: back-to-back, else the pause in ms after every reply) and a port per server and Collector side."""

    sizes: list[str]
    counts: list[int]
    gaps: dict[str, list[float]]
    ports: dict[str, int]

    @property
    def n_max(self) -> int:
        return max(self.counts)

    @property
    def targets(self) -> list[str]:
        return [*FIXED, *(mult(n) for n in self.counts)]

    @property
    def origin_host(self) -> str:
        return f"127.0.0.1:{self.ports['origin']}"


def plan(args: argparse.Namespace) -> Setup:
    n_max = max(args.counts)
    names = ["origin", "direct", "chop", "nginx-hop", *(f"c{i + 1}" for i in range(n_max)),
             *(f"s{i + 1}" for i in range(n_max)), *(mult(n) for n in args.counts)]
    gaps = {size: [0.0, *([gap] if gap > 0 else [])]
            for size in args.sizes for gap in [args.gap_ms_1m if size == "1m" else args.gap_ms]}
    return Setup(args.sizes, args.counts, gaps, allocate_ports(names, args.base_port))


def write_wrk_scripts(workdir: Path, setup: Setup) -> None:
    """wrk's Lua script per size and pacing. The client talks to a proxy: absolute-form target. Globals only
    (a static request, no Lua call per request), plus delay() when paced: wrk's latency clock starts when the
    request is sent."""
    for name in setup.sizes:
        for gap in setup.gaps[name]:
            text = f'wrk.path = "http://{setup.origin_host}/{name}"\nwrk.headers["Host"] = "{setup.origin_host}"\n'
            if gap:
                text += f"function delay() return {gap:g} end\n"
            (workdir / f"abs-{name}-{gap:g}.lua").write_text(text)


@dataclass
class Servers:
    origin: Child
    collector: Child
    hop: Child
    standins: Child | None
    multipliers: dict[str, Child]

    def pids(self) -> dict[str, list[int]]:
        """The processes whose CPU time each scenario (and the stand-ins) is charged with."""
        return {"origin": process_tree(self.origin.pid), "direct": [self.collector.pid],
                "nginx-hop": process_tree(self.hop.pid),
                "standins": process_tree(self.standins.pid) if self.standins else [],
                **{t: [c.pid] for t, c in self.multipliers.items()}}


def start_servers(group: ProcessGroup, setup: Setup) -> Servers:
    ports, n_max = setup.ports, setup.n_max
    origin = start_file_server(group, "origin", group.workdir / "www", [ports["origin"]])
    collector = start_bench_collector(group, ports["direct"], {
        "chop": ports["chop"], **{f"c{i + 1}": ports[f"c{i + 1}"] for i in range(n_max)}})
    hop = start_hops(group, "nginx-hop", {"hop": (ports["nginx-hop"], ports["chop"])})
    standins = start_hops(group, "standins", {f"p{i + 1}": (ports[f"s{i + 1}"], ports[f"c{i + 1}"])
                                              for i in range(n_max)}) if n_max else None
    multipliers = {mult(n): start_multiplier(group, mult(n), ports[mult(n)], ports["direct"],
                                             {f"p{i + 1}": ports[f"s{i + 1}"] for i in range(n)},
                                             log_path(group.workdir, f"{mult(n)}")) for n in setup.counts}
    return Servers(origin, collector, hop, standins, multipliers)


class Meter:
    """Runs wrk at one scenario and charges each server's CPU time to the requests wrk completed; counts the
    requests and runs per scenario for the log checks."""

    def __init__(self, group: ProcessGroup, setup: Setup, servers: Servers):
        self.group, self.setup, self.server_pids = group, setup, servers.pids()
        self.completed: collections.Counter = collections.Counter()
        self.runs: collections.Counter = collections.Counter()

    def measure(self, target: str, size: str, gap: float, seconds: float) -> dict:
        workdir = self.group.workdir
        before = {k: cpu_seconds(v) for k, v in self.server_pids.items()}
        busy0 = busy_seconds()
        r = run_wrk(f"http://127.0.0.1:{self.setup.ports[target]}/", workdir / f"abs-{size}-{gap:g}.lua", seconds,
                    1, workdir, latency=True)
        busy1 = busy_seconds()
        after = {k: cpu_seconds(v) for k, v in self.server_pids.items()}
        check_alive(self.group)
        n = max(1, r["requests"])
        delta = {k: after[k] - before[k] for k in before}
        r.update(size=size, target=target, gap=gap,
                 front_cpu_us=delta[target] * 1e6 / n,
                 collector_cpu_us=delta["direct"] * 1e6 / n,
                 standins_cpu_us=delta["standins"] * 1e6 / n,
                 foreign_cpu=(busy1 - busy0) - sum(delta.values()) - r["wrk_cpu"])
        self.completed[target] += r["requests"]
        self.runs[target] += 1
        return r


def measure_rounds(meter: Meter, setup: Setup, rounds: int, seconds: float) -> list[dict]:
    """Every scenario at every pacing, size by size, in interleaved rounds whose order rotates."""
    print(f"bench: servers on CPU{SERVER_CPU}, wrk on CPU{LOAD_CPU}; {rounds} round(s) × "
          f"{sum(len(g) for g in setup.gaps.values()) * len(setup.targets)} runs × {seconds:g} s", file=sys.stderr)
    runs = []
    for rnd in range(rounds):
        for size in setup.sizes:
            combos = [(t, g) for g in setup.gaps[size] for t in setup.targets]
            k = rnd % len(combos)  # rotate the order each round
            for target, gap in combos[k:] + combos[:k]:
                r = meter.measure(target, size, gap, seconds)
                r["round"] = rnd
                runs.append(r)
                print(f"round {rnd + 1}/{rounds} {size:>3} {pacing(gap):12} {target:9} p50 {r['p50']:6.0f} µs"
                      f"  p99 {r['p99']:6.0f} µs  {r['rps']:6.0f} req/s  front {r['front_cpu_us']:6.1f} µs/req"
                      f"  foreign {r['foreign_cpu']:.2f} CPU-s  {r['errors']}", file=sys.stderr)
    return runs


@dataclass
class Ending:
    """What the servers left once stopped: each Multiplier's exit code, log counters and stderr problems,
    and the Collector's requests per side and result codes, with the connections that sent no request."""

    exit_codes: dict[str, int | None]
    logs: dict[str, dict]
    stderr: dict[str, list[str]]
    sides: collections.Counter
    codes: collections.Counter
    probes: int


def stop_and_read(servers: Servers, setup: Setup, workdir: Path) -> Ending:
    exit_codes = {t: c.stop(deadline_s=15) for t, c in servers.multipliers.items()}
    servers.collector.stop(deadline_s=15)  # flushes access.log
    sides, codes, probes = read_collector_log(RunDir(workdir).access_log,
                                              {p: n for n, p in setup.ports.items()})
    return Ending(exit_codes, {t: read_multiplier_log(log_path(workdir, f"{t}")) for t in servers.multipliers},
                  {t: stderr_problems(c.log) for t, c in servers.multipliers.items()}, sides, codes, probes)


# ---------------------------------------------------------------- checks

def multiplier_checks(setup: Setup, meter: Meter, sent: collections.Counter,
                      ending: Ending) -> tuple[list[str], list[str]]:
    """A check line and the problems of each Multiplier. Adds to each log's counters the client requests it
    fanned out and the proxy legs it sent (for the Collector's accounting)."""
    checks, problems = [], []
    for n in setup.counts:
        t = mult(n)
        log = ending.logs[t]
        # wrk stops a run in the middle of a reply (1 MB): the Multiplier logs that request without a fan-out
        gone = sum(v for k, v in log["notes"].items() if "client went away" in k)
        log["fanned"] = log["records"] - gone
        busy = busy_by_size(log_path(meter.group.workdir, f"{t}"))
        log["sent_legs"] = log["fanned"] * n - sum(busy.values())  # a busy leg never leaves the Multiplier
        checks.append(multiplier_check_line(t, log, meter, sent, ending, gone, busy))
        problems += multiplier_problems(t, n, log, meter, sent, ending, gone)
    return checks, problems


def multiplier_check_line(t: str, log: dict, meter: Meter, sent: collections.Counter, ending: Ending, gone: int,
                          busy: collections.Counter) -> str:
    expected = meter.completed[t] + sent[t]
    ok, total = log["results"].get("OK", 0), sum(log["results"].values())
    return (f"- {t}: **{log['records']} log records**; wrk counted {meter.completed[t]} completed requests in "
            f"{meter.runs[t]} runs (warm-up included) + {sent[t]} set-up checks = {expected} (difference "
            f"{log['records'] - expected:+d}; wrk does not count the request in flight when a run stops, so 0 to "
            f"+{meter.runs[t]} is expected); **proxy results OK: {ok} of {total}**"
            + ("" if total == ok else f" ({fmt_counter(log['results'])})")
            + (f" ({gone} records without a fan-out: the client went away during the reply, as wrk does when a "
               f"run ends)" if gone else "")
            + (f" (legs refused as busy, per object: {fmt_counter(busy)}: the fan-out backlog of one client "
               f"connection reached --max-conns-per-proxy, 16)" if busy else "")
            + f"; client status {fmt_counter(log['client_status'])}; exit code {ending.exit_codes[t]}; "
            f"warning/error lines on its stderr: {len(ending.stderr[t])}")


def multiplier_problems(t: str, n: int, log: dict, meter: Meter, sent: collections.Counter, ending: Ending,
                        gone: int) -> list[str]:
    """One record per request, every proxy result OK, status 200, a clean stderr and exit."""
    problems = []
    expected = meter.completed[t] + sent[t]
    if not 0 <= log["records"] - expected <= meter.runs[t]:
        problems.append(f"{t}: {log['records']} records for {expected} requests")
    total = sum(log["results"].values())
    if total != log["results"].get("OK", 0) or total != log["fanned"] * n:
        problems.append(f"{t}: proxy results {fmt_counter(log['results'])}; expected {log['fanned']} × {n} OK")
    if gone > meter.runs[t]:
        problems.append(f"{t}: {gone} requests whose client went away, more than the {meter.runs[t]} wrk runs")
    notes = collections.Counter({k: v for k, v in log["notes"].items() if "client went away" not in k})
    for counter, what in ((log["mismatched"], "mismatched headers"), (log["errors"], "proxy errors"),
                          (notes, "notes")):
        if counter:
            problems.append(f"{t}: {what} {fmt_counter(counter)}")
    if log["bad_lines"]:
        problems.append(f"{t}: {log['bad_lines']} unreadable log lines")
    if set(log["client_status"]) - {200}:
        problems.append(f"{t}: client status {fmt_counter(log['client_status'])}")
    if ending.exit_codes[t] != 0:
        problems.append(f"{t}: exit code {ending.exit_codes[t]} on SIGTERM")
    return problems + [f"{t} stderr: {line}" for line in ending.stderr[t][:5]]


def collector_check(setup: Setup, meter: Meter, sent: collections.Counter, ending: Ending) -> tuple[str, list[str]]:
    """The Collector's view: every client request costs it one request on its client port, the fan-out one
    more per proxy on the proxy ports (the stand-ins do not cache), each nginx-hop request one on its port;
    all HITs but the first request of each object."""
    logs, sides, codes = ending.logs, ending.sides, ending.codes
    records = sum(logs[mult(n)]["records"] for n in setup.counts)
    want = {"collector client port": (meter.completed["direct"] + records + sent["collector client port"]
                                      - sum(sent[mult(n)] for n in setup.counts), meter.runs["direct"]),
            "collector hop port": (meter.completed["nginx-hop"] + sent["collector hop port"] - sent["nginx-hop"],
                                   meter.runs["nginx-hop"]),
            "collector proxy ports": (sum(logs[mult(n)]["sent_legs"] for n in setup.counts)
                                      + sent["collector proxy ports"], 0)}
    check = ("- Collector access.log: " + "; ".join(
        f"{sides[side]} requests on its {side.removeprefix('collector ')} (expected {w}"
        + (f" to {w + slack}" if slack else "") + ")" for side, (w, slack) in want.items())
        + f"; {fmt_counter(codes)}; plus {ending.probes} connections closed before a request (this script's "
        f"readiness probes)")
    problems = [f"Collector: {sides[side]} requests on its {side}, expected {w} to {w + slack}"
                for side, (w, slack) in want.items() if not 0 <= sides[side] - w <= slack]
    misses = {c: n for c, n in codes.items() if "HIT" not in c}
    if sum(misses.values()) > len(setup.sizes):  # the first request per object is a miss
        problems.append(f"Collector: {sum(misses.values())} requests were not HITs: {misses}")
    return check, problems


# ---------------------------------------------------------------- the section

def targets_summary(runs: list[dict], setup: Setup) -> list[str]:
    """Per size and pacing: the 4-proxy Multiplier's added p50 against the targets."""
    if TARGET_N not in setup.counts:
        return []
    summary = []
    for size in setup.sizes:
        for gap in setup.gaps[size]:
            a = paired(runs, size, gap, mult(TARGET_N), "direct", "p50")
            hop_added = paired(runs, size, gap, "nginx-hop", "direct", "p50")
            a0 = paired(runs, size, gap, mult(0), "direct", "p50") if 0 in setup.counts else float("nan")
            summary.append(
                f"- {size}, {pacing(gap)}: added p50 with {TARGET_N} proxies **{a:+.0f} µs** (target < "
                f"{TARGET_ADDED_P50_US:.0f} µs: **{'met' if a < TARGET_ADDED_P50_US else 'NOT met'}**); the "
                f"one-hop nginx adds {hop_added:+.0f} µs (target: no more than the hop: "
                f"**{'met' if a <= hop_added else 'NOT met'}**, {a - hop_added:+.0f} µs); the Multiplier without "
                f"proxies adds {a0:+.0f} µs ({a0 - hop_added:+.0f} µs vs the hop)")
    return summary


def set_up_note(args: argparse.Namespace, runs: list[dict], n_max: int) -> str:
    """How the run was placed and paced, and how to read its columns."""
    foreign = [r["foreign_cpu"] for r in runs]
    gap_note = (f" Each scenario also runs with a pause after every reply ({args.gap_ms:g} ms; {args.gap_ms_1m:g} ms "
                f"for 1 MB, whose fan-out to 8 proxies takes about 30 ms of CPU1) (wrk's delay(); its latency clock "
                f"starts when the request is sent), so the fan-out of one request has finished before the next "
                f"arrives: that is the latency a client with think time sees; the p99 of a paced 1 MB run rests on "
                f"about {args.seconds * 1000 / (args.gap_ms_1m + 5):.0f} requests, so it is nearly the maximum."
                if args.gap_ms > 0 else "")
    return (f"Placement as in the project's perf anchors: wrk -t1 -c1 --latency (one persistent connection, "
            f"absolute-form requests) on CPU{LOAD_CPU}; every server on CPU{SERVER_CPU}: the nginx origin, the Squid "
            f"5.7 Collector (memory HITs), the one-hop nginx (`proxy_pass`, keepalive upstream to its own Collector "
            f"port: the comparison), the {n_max} stand-in proxies under test (one nginx, one worker, {n_max} ports, "
            f"each the same kind of non-caching hop to its own Collector port, so a client request costs the "
            f"Collector 1 + N HITs) and one Multiplier per number of proxies N (sequential mode, JSON log). "
            f"Same-core caveat (anchors): a wake-up across cores costs about 60–70 µs per request on this VM and is "
            f"part of every figure; and because every server shares CPU{SERVER_CPU}, work done after the client's "
            f"reply (the fan-out) delays the next back-to-back request.{gap_note} Medians over rounds; added = "
            f"median of the per-round differences (to direct, or to the origin where named) with the same pacing. "
            f"Front CPU = the server wrk talks to (origin nginx, hop nginx or Multiplier); CPU µs/req = "
            f"Δ(utime+stime) in /proc/PID/stat / wrk's completed requests. **The machine is shared with other "
            f"work and noisy**: foreign = CPU-s used by anything else during a run (median {median(foreign):.2f}, max "
            f"{max(foreign):.2f}); approximate (tick-sampled, can go below 0 in saturated runs), only a clearly "
            f"positive value means outside load.")


def report(args: argparse.Namespace, setup: Setup, runs: list[dict], checks: list[str], problems: list[str]) -> str:
    return (f"\n## {TITLE} ({', '.join(setup.sizes)}; {', '.join(map(str, setup.counts))} proxies; "
            f"one-hop nginx; origin) — {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}\n\n"
            f"Machine: {machine()}, nproc {os.cpu_count()}. Command: `{command_line('overhead')}`.\n\n"
            f"{set_up_note(args, runs, setup.n_max)}\n\nAdded latency, p50 / p99 in µs (median over rounds of the "
            f"per-round differences):\n\n"
            f"{headline(runs, setup.gaps, setup.counts)}\n\nAll runs:\n\n"
            f"{table(runs, args.seconds, setup.gaps, setup.targets)}"
            "\n\n" + "\n".join(targets_summary(runs, setup)) + "\n\nChecks:\n\n" + "\n".join(checks) + "\n"
            + ("" if problems
               else "\nNo problems seen: every record OK, Collector requests as expected and all HITs after "
                    "warm-up, no wrk errors, no warnings from the Multipliers.\n"))

if __name__ == "__main__":
    sys.exit(main())
