"""Connections and memory: the Multiplier's resident memory with 1,000, 3,000 and 10,000 concurrent
idle keep-alive client connections, and per in-flight request. Target: under 10 KB per idle
connection.

Set-up (127.0.0.1 only, free ports, every process stopped by PID): nginx serving /1k on 5 ports
(the Collector stand-in and 4 stand-in proxies under test) and the Multiplier (release build,
sequential mode, JSON log, 4 proxies). This script raises RLIMIT_NOFILE to the hard limit (and the
hard limit itself when it may: root with CAP_SYS_RESOURCE); the Multiplier takes the whole hard limit.

Descriptors: an idle client after one request costs the Multiplier 2 + 4 = 6 (its own socket, the
Collector's, one per proxy) and nginx 5. A count whose idle state does not fit the hard limit is
measured connected only, and the report says why (with a 20,000 limit: at most about 3,300 clients).
The Multiplier's descriptors are counted in each state (/proc/PID/fd): the idle state is valid only
if it holds every upstream connection (a 200 reply alone does not show it: in sequential mode the
client has its reply before the proxies are asked).

For each count N: open N client connections (RSS "connected"), then send one request on each,
--concurrency at a time, and read its reply, keeping the connection (RSS "idle after one request":
each client connection then also keeps its Collector connection and one connection per proxy, as the
Multiplier mirrors the client's persistence). KB per connection = (RSS - RSS before the connections) / N.
RSS is read 2.5 s after each step: the Multiplier gives freed heap memory back (mi_collect) once the
requests in flight fall to a quarter of their peak, checked every second. What the burst leaves
behind (heap pages shared by freed request memory and live connection memory) grows with the
concurrency, not with N; the marginal KB per connection between two counts leaves it out.
Then the connections close and the next N starts from a fresh Multiplier.
In-flight: a second Multiplier whose Collector (a small asyncio server) holds every reply for a
while; K clients each send one request; KB per in-flight request = (RSS with K requests waiting -
RSS with the same K connections idle) / K.

Run: ./spe bench connections [--counts 1000,10000] [--in-flight 1000] [--write-docs]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import h11

from bench import command
from bench.lib.clients import read_reply
from bench.lib.doc import add_write_docs, machine, publish
from bench.lib.harness import MULTIPLIER, BenchError
from bench.lib.meters import busy_seconds
from bench.lib.servers import BENCH_ORDER
from spe_tools.config_template import render_text
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port, open_fds, rss_kb

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Connections and memory"

N_PROXIES = 4
TARGET_KB_PER_IDLE = 10.0
NOFILE = 200_000
PER_IDLE_CLIENT_FDS = 2 + N_PROXIES  # the Multiplier: the client's socket, the Collector's, one per proxy
SPARE_FDS = 64  # log, epoll, listener, stdio ... and the warm-up connections
SETTLE_S = 2.5  # after a step: the Multiplier's trim check runs every second

ORIGIN_CONF = """\
worker_processes 1;
daemon off;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log warn;
worker_rlimit_nofile {{nofile}};
events { worker_connections {{nofile}}; }
http {
    access_log off;
    keepalive_timeout 600s; keepalive_requests 10000000;
    client_body_temp_path {{dir}}/tmp; proxy_temp_path {{dir}}/tmp; fastcgi_temp_path {{dir}}/tmp;
    uwsgi_temp_path {{dir}}/tmp; scgi_temp_path {{dir}}/tmp;
    server {
{{listens}}
        root {{www}};
        location / { }
    }
}
"""

# A Collector stand-in that answers every request after `hold` seconds (keep-alive).
SLOW_COLLECTOR = """\
import asyncio, sys
port, hold = int(sys.argv[1]), float(sys.argv[2])
BODY = bytes(1024)
REPLY = b"HTTP/1.1 200 OK\\r\\nContent-Length: 1024\\r\\nContent-Type: application/octet-stream\\r\\n\\r\\n" + BODY
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            if not head:
                break
            await asyncio.sleep(hold)
            writer.write(REPLY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


def settled_rss_kb(pid: int, seconds: float = SETTLE_S) -> int:
    time.sleep(seconds)
    return rss_kb(pid)


def own_cpu_seconds() -> float:
    """CPU time of this script and of its reaped children (the Multipliers, nginx and its workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def per_connection_kb(rss_after_kb: int, rss_before_kb: int, n: int) -> float:
    return (rss_after_kb - rss_before_kb) / n if n else float("nan")


def raise_nofile() -> int:
    """Soft (and, if allowed, hard) RLIMIT_NOFILE raised for this process and its children; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(hard, NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    except (ValueError, OSError):  # raising the hard limit needs CAP_SYS_RESOURCE (not in most containers)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def idle_fits(n: int, limit: int) -> bool:
    """The idle state of n clients fits the Multiplier's and nginx's descriptor limit."""
    return n * PER_IDLE_CLIENT_FDS + SPARE_FDS <= limit


# ---------------------------------------------------------------- clients (asyncio)

async def open_clients(port: int, n: int, batch: int = 500) -> list:
    conns = []
    for start in range(0, n, batch):
        conns += await asyncio.wait_for(asyncio.gather(
            *(asyncio.open_connection("127.0.0.1", port) for _ in range(min(batch, n - start)))), 60)
    return conns


async def send_request(conn, target: str) -> None:
    _, writer = conn
    writer.write(f"GET {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    await writer.drain()


async def reply_status(conn) -> int:
    """Reads the reply to the GET that send_request wrote (h11 frames it); its status."""
    parser = h11.Connection(h11.CLIENT)
    parser.send(h11.Request(method="GET", target="/", headers=[("Host", "bench")]))  # h11's framing: a GET's
    status, _ = await read_reply(conn[0], parser)
    return status


async def one_request_each(conns: list, target: str, batch: int) -> int:
    ok = 0
    for start in range(0, len(conns), batch):
        part = conns[start:start + batch]
        await asyncio.gather(*(send_request(c, target) for c in part))
        statuses = await asyncio.wait_for(asyncio.gather(*(reply_status(c) for c in part)), 120)
        ok += sum(s == 200 for s in statuses)
    return ok


def close_all(conns: list) -> None:
    for _, writer in conns:
        with contextlib.suppress(Exception):
            writer.transport.abort()


# ---------------------------------------------------------------- main

def start_multiplier(group: ProcessGroup, name: str, collector: int, proxies: list[int]) -> tuple[int, int]:
    port = free_port()
    argv = [str(MULTIPLIER), "--listen", f"127.0.0.1:{port}", "--collector", f"127.0.0.1:{collector}",
            "--log", str(group.workdir / f"{name}.jsonl"), "--client-timeout", "600", "--via-name", f"spe-{name}",
            *BENCH_ORDER]
    for i, p in enumerate(proxies, 1):
        argv += ["--proxy", f"p{i}=127.0.0.1:{p}"]
    child = group.start(name, argv, port=port, deadline_s=15)
    return child.pid, port


async def idle_rows(group: ProcessGroup, counts: list[int], origin_ports: list[int], limit: int,
                    concurrency: int) -> list[dict]:
    rows = []
    target = f"http://127.0.0.1:{origin_ports[0]}/1k"
    for n in counts:
        pid, port = start_multiplier(group, f"idle{n}", origin_ports[0], origin_ports[1:])
        warm = await open_clients(port, 4)
        await one_request_each(warm, target, 4)  # allocator and log warmed by a few requests
        close_all(warm)
        await asyncio.sleep(0.2)  # the loop closes aborted sockets on its next turns, not in close_all
        base, base_fds = settled_rss_kb(pid), open_fds(pid)
        conns = await open_clients(port, n)
        connected, connected_fds = settled_rss_kb(pid), open_fds(pid)
        row = {"n": n, "base": base, "connected": connected, "connected_fds": connected_fds - base_fds,
               "idle": None, "ok": None, "upstream": None}
        if idle_fits(n, limit):
            row["ok"] = await one_request_each(conns, target, concurrency)
            row["idle"], idle_fds = settled_rss_kb(pid), open_fds(pid)
            row["upstream"] = idle_fds - base_fds - n
        close_all(conns)
        rows.append(row)
        idle = (f"{row['idle']} KB (idle after one request); {row['ok']} replies 200, "
                f"{row['upstream']} upstream connections held" if row["idle"] is not None
                else f"idle state not measured ({n * PER_IDLE_CLIENT_FDS + SPARE_FDS} descriptors > limit {limit})")
        print(f"{n} connections: RSS {base} -> {connected} KB (connected) -> {idle}", flush=True)
        group.children[-1].stop()
    return rows


async def in_flight_row(group: ProcessGroup, k: int, proxies: list[int], hold: float) -> dict:
    slow_port = free_port()
    script = group.workdir / "slow_collector.py"
    script.write_text(SLOW_COLLECTOR)
    group.start("slow-collector", [sys.executable, str(script), str(slow_port), str(hold)], port=slow_port)
    pid, port = start_multiplier(group, "inflight", slow_port, proxies)
    target = f"http://127.0.0.1:{proxies[0]}/1k"
    conns = await open_clients(port, k)
    before = settled_rss_kb(pid)
    started = time.monotonic()
    for start in range(0, k, 500):
        await asyncio.gather(*(send_request(c, target) for c in conns[start:start + 500]))
    during = settled_rss_kb(pid)
    if time.monotonic() - started >= hold:
        raise BenchError(f"the requests were not all in flight at once; raise --hold (now {hold} s)")
    statuses = await asyncio.wait_for(asyncio.gather(*(reply_status(c) for c in conns)), hold + 120)
    close_all(conns)
    return {"k": k, "before": before, "during": during, "ok": sum(s == 200 for s in statuses)}


def idle_problem(r: dict) -> str | None:
    """Why the idle state of a row is not the intended one (None: it is)."""
    want = r["n"] * (1 + N_PROXIES)
    if r["ok"] != r["n"]:
        return f"only {r['ok']:,} of {r['n']:,} replies were 200"
    if r["upstream"] != want:
        return f"the Multiplier held {r['upstream']:,} upstream connections, not {want:,}"
    return None


def marginal_kb(rows: list[dict]) -> tuple[dict, dict, float] | None:
    """KB per idle connection between the smallest and the largest valid idle count (the burst's residue cancels)."""
    valid = [r for r in rows if r["idle"] is not None and idle_problem(r) is None]
    if len(valid) < 2:
        return None
    lo, hi = valid[0], valid[-1]
    return lo, hi, ((hi["idle"] - hi["base"]) - (lo["idle"] - lo["base"])) / (hi["n"] - lo["n"])


def report(args: argparse.Namespace, rows: list[dict], flight: dict | None, limit: int, foreign: str) -> str:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"\n## {TITLE} (idle keep-alive clients, in-flight requests) — {now}\n",
             f"Machine: {machine()}. Command: `{' '.join(['./spe bench connections', *sys.argv[1:]])}`.\n",
             "The Multiplier (release build, one I/O thread, sequential mode, JSON log) with 4 stand-in proxies "
             "(nginx serving /1k; the Collector stand-in is the same nginx). RSS from /proc/PID/status (VmRSS) "
             f"{SETTLE_S:g} s after each step (the Multiplier checks every second whether to give freed heap memory "
             "back, mi_collect with the release build's mimalloc, which it does once the requests in flight have "
             "fallen to a quarter of their peak); "
             "baseline = after start-up and 4 warm-up requests, before the connections. "
             "\"Idle after one request\": each client connection has sent one request and got its reply, and is "
             f"kept alive; the requests were sent {args.concurrency} at a time. The Multiplier then also keeps that "
             "client's Collector connection and one connection to each proxy (it mirrors the client's persistence), "
             "checked by counting its descriptors (/proc/PID/fd). "
             f"Open-file limit {limit:,} for the Multiplier and nginx (the hard limit; raising it needs "
             f"CAP_SYS_RESOURCE): an idle client after one request takes {PER_IDLE_CLIENT_FDS} descriptors in the "
             f"Multiplier, so counts above {(limit - SPARE_FDS) // PER_IDLE_CLIENT_FDS:,} are measured connected only. "
             f"RSS does not depend on CPU load ({foreign}).\n",
             "| client connections | state | Multiplier RSS MB | over baseline MB | KB per connection "
             "| descriptors over baseline | replies 200 |",
             "|---|---|---|---|---|---|---|"]
    verdict = []
    for r in rows:
        kb = per_connection_kb(r["connected"], r["base"], r["n"])
        lines.append(f"| {r['n']:,} | connected, no request yet | {r['connected'] / 1024:.1f} "
                     f"| {(r['connected'] - r['base']) / 1024:.1f} | {kb:.1f} | {r['connected_fds']:,} | – |")
        verdict.append(f"{r['n']:,} connections, connected, no request yet: **{kb:.1f} KB** per connection "
                       f"(target < {TARGET_KB_PER_IDLE:g} KB: {'met' if kb < TARGET_KB_PER_IDLE else 'NOT met'})")
        if r["idle"] is None:
            need = r["n"] * PER_IDLE_CLIENT_FDS + SPARE_FDS
            lines.append(f"| {r['n']:,} | idle after one request | not measured: needs about {need:,} descriptors, "
                         f"the limit is {limit:,} | | | | |")
            continue
        kb = per_connection_kb(r["idle"], r["base"], r["n"])
        problem = idle_problem(r)
        lines.append(f"| {r['n']:,} | idle after one request | {r['idle'] / 1024:.1f} "
                     f"| {(r['idle'] - r['base']) / 1024:.1f} | {kb:.1f} | {r['n'] + r['upstream']:,} | {r['ok']:,} |")
        verdict.append(f"{r['n']:,} connections, idle after one request: **{kb:.1f} KB** per connection "
                       + (f"(INVALID: {problem})" if problem else
                          f"(target < {TARGET_KB_PER_IDLE:g} KB: {'met' if kb < TARGET_KB_PER_IDLE else 'NOT met'})"))
    text = "\n".join(lines) + "\n\n"
    if flight:
        kb = per_connection_kb(flight["during"], flight["before"], flight["k"])
        text += (f"In flight: {flight['k']:,} client connections each with one request waiting for the Collector "
                 f"(which holds every reply {args.hold:g} s): RSS {flight['before'] / 1024:.1f} MB idle → "
                 f"{flight['during'] / 1024:.1f} MB with the requests in flight: **{kb:.1f} KB per in-flight request** "
                 f"(request, parser, Collector connection and its buffers, fan-out record); "
                 f"{flight['ok']:,} replies 200 afterwards.\n\n")
    text += "".join(f"- {v}\n" for v in verdict)
    if m := marginal_kb(rows):
        lo, hi, kb = m
        text += (f"- marginal, idle after one request, from {lo['n']:,} to {hi['n']:,} connections: **{kb:.1f} KB** "
                 f"per connection (what one more idle client costs; the memory a burst of {args.concurrency} "
                 f"requests leaves behind is in both counts and cancels) (target < {TARGET_KB_PER_IDLE:g} KB: "
                 f"{'met' if kb < TARGET_KB_PER_IDLE else 'NOT met'})\n")
    return text


def start_origin(group: ProcessGroup, limit: int) -> list[int]:
    """One nginx serving /1k on 1 + N_PROXIES ports (the Collector and the proxies' stand-ins), allowed `limit`
    connections; its ports."""
    workdir = group.workdir
    (workdir / "www").mkdir()
    (workdir / "www/1k").write_bytes(bytes(1024))
    (workdir / "origin/tmp").mkdir(parents=True)
    origin_ports = [free_port() for _ in range(1 + N_PROXIES)]
    listens = "\n".join(f"        listen 127.0.0.1:{p} backlog=4096;" for p in origin_ports)
    (workdir / "origin/nginx.conf").write_text(render_text(ORIGIN_CONF, {
        "dir": workdir / "origin", "nofile": limit, "listens": listens, "www": workdir / "www"}))
    group.start("origin", ["nginx", "-e", str(workdir / "origin/error.log"), "-p", str(workdir / "origin"),
                           "-c", str(workdir / "origin/nginx.conf")], port=origin_ports[0], deadline_s=15)
    return origin_ports


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1000,3000,10000", help="idle connection counts, comma-separated")
    parser.add_argument("--concurrency", type=int, default=500, help="requests sent at once to reach the idle state")
    parser.add_argument("--in-flight", type=int, default=1000, help="requests held in flight (0: skip)")
    parser.add_argument("--hold", type=parse_duration, default=20, help="seconds the slow Collector holds each reply")
    add_write_docs(parser)
    args = parser.parse_args()
    for tool in ("nginx",):
        if not shutil.which(tool):
            raise SystemExit(f"connections: {tool} is not installed (./spe setup)")
    if not MULTIPLIER.exists():
        raise SystemExit(f"connections: {MULTIPLIER} is missing (./spe build)")
    limit = raise_nofile()
    counts = [int(c) for c in args.counts.split(",") if c]
    workdir = Path(tempfile.mkdtemp(prefix="spe-connections-"))
    busy0, own0, t0 = busy_seconds(), own_cpu_seconds(), time.monotonic()
    workdir.chmod(0o755)  # nginx workers run as an unprivileged user when started as root
    try:
        with ProcessGroup(workdir) as group:
            origin_ports = start_origin(group, limit)
            rows = asyncio.run(idle_rows(group, counts, origin_ports, limit, args.concurrency))
            flight = (asyncio.run(in_flight_row(group, args.in_flight, origin_ports[1:], args.hold))
                      if args.in_flight else None)
    except BenchError as e:
        print(f"connections: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    foreign = (f"foreign CPU, used by other work on the machine during the run: "
               f"{(busy_seconds() - busy0) - (own_cpu_seconds() - own0):.1f} CPU-s in {time.monotonic() - t0:.0f} s")
    text = report(args, rows, flight, limit, foreign)
    return publish(text, [], title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
