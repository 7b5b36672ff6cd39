"""Tail isolation: misbehaving proxies under test must not slow the client, at the median nor at p99.

Two Multipliers (release build) side by side in one run, in front of the same origin
(tests/fixtures/mini_origin.py) and the same Collector stand-in (Debian Squid):

  good     one proxy under test: a Debian Squid, child of the Collector
  faulty   the same good Squid plus nine misbehaving proxies (tests/fixtures/fault_proxy.py):
           hang, reset, garbage, huge_header (4 MB), endless, short_body, slow (--delay-ms),
           head_body (a HEAD reply with a body) and `refused` (a port nothing listens on)

Four concurrent clients (threads, one keep-alive connection to each Multiplier) send --requests
requests each to each Multiplier, in interleaved rounds: --per-round requests per client to one
Multiplier, then to the other, the order alternating per round, every client starting a phase
together. Every fifth request is a HEAD (head_body misbehaves on HEAD only), the rest GETs of eight
cacheable 5000-byte objects, warmed first so the Collector answers from its cache.

Reported: client p50 / p99 / max per Multiplier, the p99 ratio and the target (faulty p99 within
1.5 x good p99 + 5 ms: met / NOT met); the CPU time (utime + stime from /proc) each group of
processes used during the measured rounds (the faulty proxies are Python processes on the same
2 cores as everything else), and what the rest of the machine used meanwhile (other jobs).
Checks (exit status 1 when one fails): every client reply 200, one record per request, the good
proxy OK everywhere. Each fault's verdicts are listed, and those other than the class
tests/python/loopback/test_multiplier_faults.py expects (or `busy`) are named, without failing the run.

Everything listens on 127.0.0.1 and is stopped by PID. Unpinned, as a user would run it.

Another build (e.g. an older commit's, for a before/after in one sitting): SPE_MULTIPLIER=PATH.

Run: ./spe bench tail_isolation [--requests 400] [--clients 4] [--per-round 4] [--timeout 5]
                                [--delay-ms 300] [--threads 1] [--split-cpus] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import sys
import threading
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import BenchError, run_main
from bench.lib.meters import busy_seconds
from bench.lib.servers import log_path, pin, start_multiplier
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, cpu_times, free_port, process_tree
from spe_tools.squid import start_squid
from spe_tools.summary_stats import percentile
from tests.python.httpclient import Connection

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Tail isolation"

# fault mode -> the (result, error) the Multiplier must log for it, by method
# (tests/python/loopback/test_multiplier_faults.py)
FAULTS = {
    "hang": {"GET": ("NO_RESPONSE", "timeout"), "HEAD": ("NO_RESPONSE", "timeout")},
    "reset": {"GET": ("NO_RESPONSE", "reset")},
    "garbage": {"GET": ("PROTOCOL_ERROR", "bad header"), "HEAD": ("PROTOCOL_ERROR", "bad header")},
    "huge_header": {"GET": ("PROTOCOL_ERROR", "header too large"), "HEAD": ("PROTOCOL_ERROR", "header too large")},
    "endless": {"GET": ("BODY_MISMATCH", "body too large")},
    "short_body": {"GET": ("PROTOCOL_ERROR", "truncated")},
    "refused": {"GET": ("NO_RESPONSE", "refused"), "HEAD": ("NO_RESPONSE", "refused")},
    "slow": {"GET": ("OK", None), "HEAD": ("OK", None)},
    "head_body": {"GET": ("OK", None), "HEAD": ("PROTOCOL_ERROR", "extra data")},
}
OBJECTS = 8
SIZE = 5000
NAMES = ("good", "faulty")


def request_of(client: int, n: int) -> tuple[str, str]:
    """(method, path) of a client's n-th request: every fifth a HEAD, objects in turn."""
    return ("HEAD" if n % 5 == 4 else "GET"), f"/c/tail-{(client + n) % OBJECTS}?size={SIZE}"


def start_servers(group: ProcessGroup, timeout_s: float, delay_ms: int, split: bool, threads: int) -> dict:
    """Origin, Collector, the good Squid, the nine fault proxies and both Multipliers; their ports and pids."""
    origin = free_port()
    origin_argv = [sys.executable, str(ROOT / "tests/fixtures/mini_origin.py"), "--port", str(origin)]
    origin_child = group.start("origin", origin_argv, port=origin,
                               env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    collector = start_squid(group, "collector", free_port())
    good = start_squid(group, "good", free_port(), parent_port=collector.port)
    faults, pids = {}, []
    for mode in FAULTS:
        if mode == "refused":
            faults[mode] = free_port()  # nothing listens there
            continue
        argv = [sys.executable, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(free_port()),
                "--parent", f"127.0.0.1:{collector.port}", "--mode", mode, "--delay-ms", str(delay_ms)]
        child = group.start(f"fault-{mode}", argv, port=int(argv[3]))
        faults[mode], pids = child.port, [*pids, child.pid]
    extra = ("--timeout", f"{timeout_s:g}", "--threads", str(threads))
    mults = {
        "good": start_multiplier(group, "mult-good", free_port(), collector.port, {"good": good.port},
                                 log_path(group.workdir, "good"), cpu=None, extra=extra),
        "faulty": start_multiplier(group, "mult-faulty", free_port(), collector.port,
                                   {"good": good.port, **faults}, log_path(group.workdir, "faulty"), cpu=None,
                                   extra=extra),
    }
    if split:  # the faulty processes on CPU1, everything else on CPU0: the Multiplier's own share alone
        for pid in pids:
            pin(pid, 1)
        for pid in [origin_child.pid, collector.pid, good.pid, *(m.pid for m in mults.values())]:
            pin(pid, 0)
        os.sched_setaffinity(0, {0})
    return {"origin": origin, "mults": mults, "fault_pids": pids,
            "squid_pids": process_tree(collector.pid) + process_tree(good.pid)}


def warm_up(servers: dict) -> int:
    """Every object (GET and HEAD) once through each Multiplier, so that the rounds hit warm caches."""
    sent = 0
    for m in servers["mults"].values():
        with Connection(m.port, timeout=30) as c:
            for i in range(OBJECTS):
                for method in ("GET", "HEAD"):
                    reply = c.get(f"http://127.0.0.1:{servers['origin']}/c/tail-{i}?size={SIZE}", method=method)
                    if reply.status != 200:
                        raise BenchError(f"warm-up {method} /c/tail-{i} through {m.name}: status {reply.status}")
                    sent += 1
    return sent


def run_rounds(servers: dict, clients: int, requests: int, per_round: int) -> dict:
    """The interleaved rounds; latencies (s) and problems per Multiplier name."""
    origin = servers["origin"]
    ports = {name: m.port for name, m in servers["mults"].items()}
    latencies: dict[str, list[float]] = {name: [] for name in NAMES}
    statuses: dict[str, collections.Counter] = {name: collections.Counter() for name in NAMES}
    errors: list[str] = []
    trace: list[tuple] = []  # (Multiplier, client, method, path, start, seconds): kept with --keep
    rounds = (requests + per_round - 1) // per_round
    barrier = threading.Barrier(clients)
    lock = threading.Lock()

    def client(i: int) -> None:
        conns = {name: Connection(port, timeout=30) for name, port in ports.items()}
        sent = dict.fromkeys(NAMES, 0)
        try:
            for r in range(rounds):
                for name in (NAMES if r % 2 == 0 else NAMES[::-1]):
                    barrier.wait(timeout=120)  # every client starts a phase together
                    for _ in range(min(per_round, requests - sent[name])):
                        method, path = request_of(i, sent[name])
                        start = time.perf_counter()
                        reply = conns[name].get(f"http://127.0.0.1:{origin}{path}", method=method)
                        elapsed = time.perf_counter() - start
                        with lock:
                            trace.append((name, i, method, path, start, elapsed))
                            latencies[name].append(elapsed)
                            statuses[name][reply.status] += 1
                        sent[name] += 1
        except (OSError, ValueError, threading.BrokenBarrierError) as e:
            with lock:
                errors.append(f"client {i}: {type(e).__name__}: {e}")
            barrier.abort()
        finally:
            for c in conns.values():
                c.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return {"latencies": latencies, "statuses": statuses, "errors": errors, "trace": trace}


def cpu_snapshot(servers: dict) -> dict[str, tuple[float, float]]:
    groups = {"faulty proxies (8 Python processes)": servers["fault_pids"],
              "Multiplier good": [servers["mults"]["good"].pid],
              "Multiplier faulty": [servers["mults"]["faulty"].pid],
              "Squids (Collector + good proxy)": servers["squid_pids"]}
    return {name: cpu_times(pids) for name, pids in groups.items()}


def wait_records(path: Path, count: int, deadline_s: float) -> list[dict]:
    end = time.monotonic() + deadline_s
    while True:
        lines = path.read_text().split("\n")[:-1] if path.exists() else []
        if len(lines) >= count or time.monotonic() > end:
            return [json.loads(line) for line in lines if line.strip()]
        time.sleep(0.2)


def check_records(records: list[dict], expected: int, name: str) -> tuple[list[str], dict]:
    """Problems in a Multiplier's records, and per fault mode a Counter of (method, result, error)."""
    problems = []
    if len(records) != expected:
        problems.append(f"{name}: {len(records)} records for {expected} requests")
    seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for rec in records:
        if rec.get("client_status") != 200:
            problems.append(f"{name}: record {rec.get('id')} client_status {rec.get('client_status')}")
        for p in rec.get("proxies", []):
            seen[p["name"]][(rec["method"], p["result"], p.get("error"))] += 1
    for (method, result, error), n in seen["good"].items():
        if result != "OK":
            problems.append(f"{name}: the good proxy got {result} ({error}) on {n} {method}")
    return problems, seen


def unexpected_verdicts(seen: dict) -> list[str]:
    """Fault verdicts other than the class test_multiplier_faults.py expects (`busy`, no free connection slot
    while earlier legs still hang, is expected with a client faster than the faults)."""
    out = []
    for mode, expect in FAULTS.items():
        for (method, result, error), n in sorted(seen[mode].items(), key=str):
            if method in expect and (result, error) not in (expect[method], ("NO_RESPONSE", "busy")):
                out.append(f"{mode} on {method}: {n} × {result} ({error}), expected {expect[method]}")
    return out


def report(args: argparse.Namespace, results: dict, cpu: dict, foreign_s: float, wall_s: float,
           seen: dict, problems: list[str]) -> str:
    lat = {n: [x * 1e3 for x in results["latencies"][n]] for n in NAMES}
    p50 = {n: percentile(lat[n], 0.5) for n in NAMES}
    p99 = {n: percentile(lat[n], 0.99) for n in NAMES}
    allowed = 1.5 * p99["good"] + 5
    met = p99["faulty"] <= allowed
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"\n## {TITLE} — {stamp}\n",
             f"Machine: {machine()}, shared with other jobs (see the CPU table). Command: "
             f"`{command_line('tail_isolation')}`. Two release Multipliers "
             f"(`--timeout {args.timeout:g} --threads {args.threads}`), "
             f"{'the faulty proxies on CPU1, everything else on CPU0' if args.split_cpus else 'unpinned'}: "
             f"*good* with one Debian Squid under test, *faulty* with the same Squid plus nine misbehaving proxies "
             f"({', '.join(FAULTS)}; slow = {args.delay_ms} ms). {args.clients} clients × {args.requests} requests "
             f"to each, interleaved rounds of {args.per_round} (order alternating), 1 in 5 a HEAD, 5000-byte "
             f"cached objects. Latency measured by the clients, send to last byte.\n",
             "| Multiplier | requests | p50 ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    for n in NAMES:
        lines.append(f"| {n} | {len(lat[n])} | {p50[n]:.2f} | {p99[n]:.2f} | {max(lat[n], default=float('nan')):.2f} |")
    lines.append(f"\np99 faulty / good: **{p99['faulty'] / p99['good']:.2f}x** "
                 f"(p50 {p50['faulty'] / p50['good']:.2f}x). "
                 f"Target: faulty p99 ≤ 1.5 × good p99 + 5 ms = {allowed:.2f} ms: **{'met' if met else 'NOT met'}**.\n")
    lines += [f"CPU used during the {wall_s:.1f} s of rounds (utime + stime, /proc):\n",
              "| processes | user s | sys s | share of one core |", "|---|---|---|---|"]
    for name, (user, system) in cpu.items():
        lines.append(f"| {name} | {user:.2f} | {system:.2f} | {(user + system) / wall_s:.0%} |")
    lines.append(f"| everything else on the machine (other jobs, the clients) | | | "
                 f"{foreign_s / wall_s:.0%} ({foreign_s:.2f} s) |")
    lines.append("\nResults the faulty Multiplier logged per fault (method: result (error) × count): "
                 + "; ".join(f"{mode}: " + ", ".join(f"{m} {r}{f' ({e})' if e else ''} ×{c}"
                                                     for (m, r, e), c in sorted(seen[mode].items(),
                                                                                key=lambda kv: str(kv[0])))
                             for mode in FAULTS) + ".\n")
    odd = unexpected_verdicts(seen)
    if odd:
        lines.append("Verdicts other than the expected class (not counted as failures here):\n\n"
                     + "\n".join(f"- {o}" for o in odd) + "\n")
    text = "\n".join(lines)
    if results["errors"]:
        problems += results["errors"]
    return text


def measure(args: argparse.Namespace, workdir: Path) -> int:
    problems: list[str] = []
    with ProcessGroup(workdir) as group:
        servers = start_servers(group, args.timeout, args.delay_ms, args.split_cpus, args.threads)
        warm = warm_up(servers)
        time.sleep(args.timeout + 0.5)  # the warm-up's hanging legs have timed out
        before, busy0, t0 = cpu_snapshot(servers), busy_seconds(), time.monotonic()
        results = run_rounds(servers, args.clients, args.requests, args.per_round)
        wall = time.monotonic() - t0
        (workdir / "latencies.json").write_text(json.dumps(results["trace"]))
        after, busy1 = cpu_snapshot(servers), busy_seconds()
        cpu = {k: (after[k][0] - before[k][0], after[k][1] - before[k][1]) for k in before}
        foreign = (busy1 - busy0) - sum(u + s for u, s in cpu.values())
        for n in NAMES:
            bad = {s: c for s, c in results["statuses"][n].items() if s != 200}
            if bad:
                problems.append(f"{n}: client statuses other than 200: {bad}")
        expected = warm // 2 + args.clients * args.requests
        seen: dict = {}
        for n in NAMES:
            records = wait_records(log_path(workdir, f"{n}"), expected, args.timeout + 15)
            found, counts = check_records(records, expected, n)
            problems += found
            if n == "faulty":
                seen = counts
        text = report(args, results, cpu, foreign, wall, seen, problems)
    return publish(text, problems, title=TITLE, write=args.write_docs)


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400,
                        help="requests per client to each Multiplier (4 × 400: the p99 is the 16th-worst)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=4, help="requests per client per phase of a round")
    parser.add_argument("--timeout", type=parse_duration, default=5.0,
                        help="the Multipliers' --timeout (a hanging leg's life)")
    parser.add_argument("--delay-ms", type=int, default=300, help="the slow proxy's delay")
    parser.add_argument("--threads", type=int, default=1, help="the Multipliers' --threads")
    parser.add_argument("--split-cpus", action="store_true",
                        help="faulty proxies on CPU1, everything else (clients included) on CPU0")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    return run_main("tail", (), lambda workdir: measure(args, workdir), keep=args.keep)


if __name__ == "__main__":
    sys.exit(main())
