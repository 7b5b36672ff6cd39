"""Soak: a steady request rate through the Multiplier with real proxies for a long time.

Set-up (127.0.0.1 only, stopped by PID): the test origin, Squid as the Collector
with one port per proxy, two Squid proxies under test and the --dummy, the
Multiplier (release build). Clients send a steady total rate with the demo's
workload mix. Every --every seconds it samples the Multiplier's RSS and open file
descriptors and the clients' latency in that window. RSS, descriptors and latency
must stay flat. Not part of ./spe test.

Run: ./spe bench soak [--duration 60m] [--rate 100] [--every 10] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.doc import add_write_docs, machine, publish
from bench.lib.harness import MULTIPLIER
from bench.lib.servers import BENCH_ORDER
from spe_tools.duration import parse_duration
from spe_tools.process import Child, ProcessGroup, free_port, open_fds, rss_kb
from spe_tools.squid import start_squid
from spe_tools.summary_stats import percentile
from tests.python.httpclient import Connection

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Soak"


def workload(rng: random.Random, origin: str) -> tuple[str, str, bytes]:
    """(method, absolute URL, body) of one request of the soak's mix, in the test origin's URL space
    (tests/fixtures/mini_origin.py): skewed cacheable objects, chunked, uncacheable, HEAD and POST."""
    roll = rng.random()
    obj = int(rng.paretovariate(1.2)) % 40
    if roll < 0.60:
        return "GET", f"{origin}/c/{obj}", b""
    if roll < 0.75:
        return "GET", f"{origin}/chunked/{obj}?size={5000 + obj * 300}", b""
    if roll < 0.85:
        return "GET", f"{origin}/u/{obj}", b""
    if roll < 0.95:
        return "HEAD", f"{origin}/c/{obj}", b""
    return "POST", f"{origin}/post", f"form={obj}".encode()


def clients(port: int, origin: str, rate: float, until: float, latencies: list, errors: list, n: int = 4) -> list:
    def run(i: int) -> None:
        rng = random.Random(i)
        interval = n / rate
        next_at = time.monotonic()
        conn = Connection(port, timeout=30)
        while time.monotonic() < until:
            next_at += rng.expovariate(1 / interval)  # Poisson arrivals per client
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            method, url, body = workload(rng, origin)
            start = time.monotonic()
            try:
                conn.get(url, method=method, body=body)
                latencies.append((time.monotonic(), time.monotonic() - start))
            except (OSError, ValueError) as e:
                errors.append(repr(e))
                conn.close()
                conn = Connection(port, timeout=30)
        conn.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=parse_duration, default="60m")
    parser.add_argument("--rate", type=float, default=100, help="client requests per second in total")
    parser.add_argument("--every", type=parse_duration, default=10, help="sampling period (default 10 s)")
    add_write_docs(parser)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="spe-soak-"))
    workdir.chmod(0o755)
    latencies: list = []
    errors: list = []
    try:
        with ProcessGroup(workdir) as group:
            origin, mult = start_servers(group, workdir)
            start = time.monotonic()
            threads = clients(mult.port, f"http://127.0.0.1:{origin}", args.rate, start + args.duration, latencies,
                              errors)
            samples = sample_until(start, start + args.duration, args.every, mult.pid, latencies, errors)
            for t in threads:
                t.join(timeout=60)
            mult.stop()
            records = sum(1 for _ in open(workdir / "m.jsonl"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return publish(report(args, samples, len(latencies), records, errors), [], title=TITLE, write=args.write_docs)


def start_servers(group: ProcessGroup, workdir: Path) -> tuple[int, Child]:
    """The test origin, the Collector, two Squids and the dummy under test, the Multiplier: the origin's port
    and the Multiplier."""
    origin = free_port()
    group.start("origin", [sys.executable, str(ROOT / "tests/fixtures/mini_origin.py"), "--port", str(origin)],
                port=origin, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    names = ["squid-a", "squid-b", "dummy"]
    ports = {"direct": free_port(), **{n: free_port() for n in names}}
    start_squid(group, "collector", ports["direct"], extra_ports={n: ports[n] for n in names})
    proxies = {n: start_squid(group, n, free_port(), parent_port=ports[n]).port for n in names[:2]}
    proxies["dummy"] = free_port()
    group.start("dummy", [str(MULTIPLIER), "--dummy", "--parent", f"127.0.0.1:{ports['dummy']}",
                          "--listen", f"127.0.0.1:{proxies['dummy']}"], port=proxies["dummy"])
    port = free_port()
    proxy_flags = [a for n, p in proxies.items() for a in ("--proxy", f"{n}=127.0.0.1:{p}")]
    mult = group.start("multiplier", [str(MULTIPLIER), "--listen", f"127.0.0.1:{port}", "--collector",
                                      f"127.0.0.1:{ports['direct']}", "--log", str(workdir / "m.jsonl"),
                                      # its origin is a fixture: the proxies get the POSTs as before
                                      "--unsafe-requests", "send", *BENCH_ORDER, *proxy_flags], port=port)
    return origin, mult


def sample_until(start: float, end: float, every: float, pid: int, latencies: list, errors: list) -> list[dict]:
    """Every `every` seconds until `end`: the Multiplier's RSS and descriptors, and the latency of the client
    replies since the previous sample (t counted from `start`)."""
    samples: list[dict] = []
    seen = 0
    while time.monotonic() < end:
        time.sleep(every)
        window = [lat for _, lat in latencies[seen:]]
        seen += len(window)
        s = window_sample(time.monotonic() - start, pid, window)
        samples.append(s)
        print(f"t={s['t']:7.0f}s rss={s['rss_mb']:6.1f}MB fds={s['fds']:4} req={s['requests']:5} "
              f"p50={s['p50_ms'] or 0:6.2f}ms p99={s['p99_ms'] or 0:7.2f}ms errors={len(errors)}",
              file=sys.stderr, flush=True)
    return samples


def window_sample(t: float, pid: int, window: list[float]) -> dict:
    """One sample: the time, the Multiplier's RSS (MB) and open descriptors, the window's replies and their
    p50 and p99 in ms (None without replies)."""
    p50, p99 = percentile(window, 0.5), percentile(window, 0.99)
    return {"t": t, "rss_mb": rss_kb(pid) / 1024, "fds": open_fds(pid), "requests": len(window),
            "p50_ms": None if p50 is None else 1000 * p50, "p99_ms": None if p99 is None else 1000 * p99}


def report(args: argparse.Namespace, samples: list[dict], replies: int, records: int, errors: list) -> str:
    def row(s: dict) -> str:
        return (f"| {s['t']:.0f} | {s['rss_mb']:.1f} | {s['fds']} | {s['requests']} | {s['p50_ms'] or 0:.2f} | "
                f"{s['p99_ms'] or 0:.2f} |")
    picks = [samples[0], samples[len(samples) // 4], samples[len(samples) // 2], samples[3 * len(samples) // 4],
             samples[-1]] if samples else []
    command = ("./spe bench soak" + ("" if args.duration == 3600 else f" --duration {args.duration:g}s")
               + ("" if args.rate == 100 else f" --rate {args.rate:g}"))
    return (f"\n## {TITLE} — {datetime.date.today()}\n\nMachine: {machine()}. Command: `{command}`. Squid Collector, "
            f"two Squid proxies and the dummy under test, release build.\n\n"
            f"| t (s) | Multiplier RSS (MB) | open fds | requests in window | p50 ms | p99 ms |\n"
            f"|---|---|---|---|---|---|\n"
            + "\n".join(row(s) for s in picks)
            + f"\n\n{replies} client replies, {records} records, {len(errors)} client errors"
            + (f" (first: {errors[0]})" if errors else "") + ".\n")

if __name__ == "__main__":
    sys.exit(main())
