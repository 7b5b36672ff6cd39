"""Helpers shared by the benchmarks: the machine line, the results file, starting the servers
(origin, Collector, stand-in proxies, Multiplier) pinned and stopped by PID, a fixed-rate client,
and log readers (statistics come from analysis/stats.py)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http.client
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import h11
import psutil

from bench import ROOT
from spe_tools.collector import start_collector
from spe_tools.lab.render import render_text
from spe_tools.process import (
    Child,
    ProcessError,
    ProcessGroup,
    cpu_times,
    free_port,
    port_open,
    process_tree,
    rss_kb,
    tail,
)
from spe_tools.squid import run_squid, squid_config

RESULTS = ROOT / "docs/benchmarks.md"


def machine() -> str:
    """'2 vCPU <CPU model>, Linux <kernel>' of this machine."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} vCPU {model}, Linux {platform.release()}"


HEADER = ("# Benchmarks\n\nThe latest result of each benchmark, one section each, written by the command it "
          "names; earlier runs: `git log -p docs/benchmarks.md`.\n")


def is_heading_of(line: str, title: str) -> bool:
    """Whether a line is the level-2 heading of this benchmark: '## TITLE', '## TITLE — <date>' or
    '## TITLE (<detail>) — <date>'. A longer title that only starts with the same words ('## Tail isolation:
    the fan-out ...') is another, hand-written section."""
    if not line.startswith("## "):
        return False
    heading = line[3:].rstrip("\n")
    return heading == title or heading.startswith((f"{title} — ", f"{title} ("))


def sections_of(lines: list[str], title: str) -> list[tuple[int, int]]:
    """[start, end) line ranges of this benchmark's sections: from its heading to the next level-2 heading
    (its ### sub-sections go with it); lines inside ``` fences are not headings."""
    spans, start, in_fence = [], None, False
    for i, line in enumerate(lines):
        in_fence ^= line.startswith("```")
        if in_fence or not line.startswith("## "):
            continue
        if start is not None:
            spans.append((start, i))
            start = None
        if is_heading_of(line, title):
            start = i
    if start is not None:
        spans.append((start, len(lines)))
    return spans


def with_section(document: str, title: str, section: str) -> str:
    """The document with this benchmark's section replaced by the new one, in the place of the first old
    one (later repeats are dropped), or added at the end if it has none yet."""
    section = section.strip("\n") + "\n"
    heading = section.splitlines()[0]
    if not is_heading_of(heading, title):
        raise ValueError(f"the report's heading {heading!r} is not the section '## {title} — ...'")
    lines = document.splitlines(keepends=True)
    spans = sections_of(lines, title)
    if not spans:
        return document.rstrip("\n") + "\n\n" + section
    start, end = spans[0]
    later = {i for a, b in spans[1:] for i in range(a, b)}
    rest = "".join(line for i, line in enumerate(lines[end:], end) if i not in later)
    return "".join(lines[:start]) + section + ("\n" + rest if rest.strip() else "")


def write_section(title: str, text: str) -> None:
    """Puts a result section into docs/benchmarks.md in place of the same benchmark's previous one (created with
    its header if missing), so the file holds the latest run of each benchmark; git keeps the earlier ones."""
    document = RESULTS.read_text() if RESULTS.exists() else HEADER
    replaced = bool(sections_of(document.splitlines(keepends=True), title))
    RESULTS.write_text(with_section(document, title, text))
    print(f"bench: {'replaced' if replaced else 'added'} the section '{title}' in {RESULTS} (earlier runs: "
          "git log -p docs/benchmarks.md); its explanation and the targets table at the top are written by hand",
          file=sys.stderr)


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes, in seconds (processes that are gone count 0)."""
    return sum(cpu_times(pids))


def busy_seconds() -> float:
    """CPU time used by everything on the machine (all cores): /proc/stat's times minus idle and iowait
    (guest time is already counted in user)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + t.steal


# ---------------------------------------------------------------- servers for the benchmarks
#
# Shared set-up: every process is started pinned (taskset) into a ProcessGroup, so it is stopped by
# PID when the benchmark ends, fails or gets SIGTERM (see run_main).

# SPE_MULTIPLIER (as in the tests): another build, e.g. an older commit's, for a before/after run
MULTIPLIER = ROOT / os.environ.get("SPE_MULTIPLIER", "build/release/multiplier/spe-multiplier")
SQUID = "/usr/sbin/squid"
LOAD_CPU, SERVER_CPU = 0, 1  # the project's perf anchors: the load generator on CPU0, every server on CPU1



class BenchError(RuntimeError):
    """A clear, user-facing failure (port busy, a server died, a check failed)."""


class TerminatedError(Exception):
    """SIGTERM: unwind so that every started process is stopped."""


def on_sigterm(signum: int, frame: object) -> None:
    raise TerminatedError(f"interrupted by signal {signum}; stopping every process it started")


def run_main(prefix: str, tools: tuple[str, ...], run: Callable[[Path], int], keep: bool = False) -> int:
    """Checks the tools, makes a temporary directory (readable by Squid's user) and calls run(workdir);
    SIGTERM, Ctrl-C and failures end with a message and exit status 1. Processes are stopped by the
    ProcessGroup that run() opens."""
    for tool in tools:
        if shutil.which(tool) is None:
            print(f"bench: {tool} is not installed (./spe setup installs it)", file=sys.stderr)
            return 1
    if not MULTIPLIER.exists():
        print(f"bench: {MULTIPLIER} is missing: run ./spe setup (or ./spe build)", file=sys.stderr)
        return 1
    if (os.cpu_count() or 1) < 2:
        print(f"bench: needs 2 CPUs (load on CPU{LOAD_CPU}, servers on CPU{SERVER_CPU})", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, on_sigterm)
    workdir = Path(tempfile.mkdtemp(prefix=f"spe-bench-{prefix}-"))
    workdir.chmod(0o755)  # Squid runs as user proxy and must reach its directory
    try:
        return run(workdir)
    except (BenchError, ProcessError, TerminatedError, KeyboardInterrupt, OSError) as e:
        print(f"bench: error: {e or type(e).__name__}", file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"bench: temporary directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def publish(report: str, problems: list[str], *, title: str, write: bool) -> int:
    """Adds the problems to the report, prints it and, if write, puts it into docs/benchmarks.md in place of
    the section of the same title; the exit status."""
    if problems:
        report += "\nProblems seen:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(report)
    if write:
        write_section(title, report)
    return 1 if problems else 0


def command_line(name: str) -> str:
    """The command as the user typed it, for the results file."""
    args = " ".join(shlex.quote(a) for a in sys.argv[1:])
    if str(ROOT / ".venv") in sys.executable:
        return f"./spe bench {name} {args}".rstrip()
    return f"python3 -m bench.{name} {args}".rstrip()


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def allocate_ports(names: list[str], base: int | None = None) -> dict[str, int]:
    """One port per name: free ones, or consecutive ones from `base` (a busy one is an error naming it)."""
    if base is None:
        ports: dict[str, int] = {}
        while len(ports) < len(names):
            p = free_port()
            if p not in ports.values():
                ports[names[len(ports)]] = p
        return ports
    ports = {name: base + i for i, name in enumerate(names)}
    busy = [f"{p} ({n})" for n, p in ports.items() if not port_is_free(p)]
    if busy:
        raise BenchError(f"port(s) busy on 127.0.0.1: {', '.join(busy)}; choose another --base-port")
    return ports


def wait_port(port: int, deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if port_open("127.0.0.1", port):
            return True
        time.sleep(0.05)
    return False


def pin(pid: int, cpu: int) -> None:
    """Pins a running process, its threads and its children to one CPU."""
    for p in process_tree(pid):
        with contextlib.suppress(OSError, psutil.Error):
            for thread in psutil.Process(p).threads():
                os.sched_setaffinity(thread.id, {cpu})


def start_server(group: ProcessGroup, name: str, argv: list[str], port: int, cpu: int | None = SERVER_CPU,
                 deadline_s: float = 15, ports: tuple[int, ...] = ()) -> Child:
    """Start one server pinned to `cpu`; fail clearly if its port is taken, it dies, or one of its
    other `ports` does not open."""
    refuse_busy(name, (port, *ports))
    prefix = [] if cpu is None else ["taskset", "-c", str(cpu)]
    return settled(group.start(name, [*prefix, *argv], port=port, deadline_s=deadline_s), ports)


def refuse_busy(name: str, ports: tuple[int, ...]) -> None:
    for p in ports:
        if not port_is_free(p):
            raise BenchError(f"{name}: port 127.0.0.1:{p} is already in use by another process")


def settled(child: Child, ports: tuple[int, ...] = ()) -> Child:
    """The started server, once it is still alive a moment later and its other `ports` answer."""
    name = child.name
    time.sleep(0.2)  # a server that lost a bind race exits right after someone else answered the port
    if not child.alive():
        raise BenchError(f"{name} exited with {child.popen.returncode} right after start:\n{tail(child.log)}")
    for p in ports:
        if not wait_port(p, 10):
            raise BenchError(f"{name}: port 127.0.0.1:{p} did not open:\n{tail(child.log)}")
    return child


def check_alive(group: ProcessGroup) -> None:
    for child in group.children:
        if not child.alive():
            raise BenchError(f"{child.name} (pid {child.pid}) died with exit code {child.popen.returncode}:\n"
                             f"{tail(child.log)}")


NGINX_HEAD = """\
worker_processes 1;
daemon off;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log warn;
events { worker_connections 16384; }
http {
    access_log off;
    sendfile on; tcp_nodelay on;
    keepalive_timeout 120s; keepalive_requests 10000000;
    client_body_temp_path {{dir}}/tmp; proxy_temp_path {{dir}}/tmp; fastcgi_temp_path {{dir}}/tmp;
    uwsgi_temp_path {{dir}}/tmp; scgi_temp_path {{dir}}/tmp;
"""

FILES_SERVER = """\
    open_file_cache max=1024 inactive=600s; open_file_cache_valid 3600s;
    default_type application/octet-stream;
    expires 1h;
{{servers}}
"""

# A non-caching reverse-proxy hop (ROPE's Dummy): keepalive upstream, the reply streamed through
# memory buffers (never a temporary file, so 1 MB objects cost no disk I/O).
HOP_HTTP = """\
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_buffering on; proxy_buffer_size 16k; proxy_buffers 8 16k; proxy_max_temp_file_size 0;
"""

HOP_BLOCK = """\
    upstream up_{{name}} { server 127.0.0.1:{{upstream}}; keepalive 16; keepalive_requests 10000000;
                         keepalive_timeout 120s; }
    server { listen 127.0.0.1:{{port}}; location / { proxy_pass http://up_{{name}}; } }
"""


def start_nginx(group: ProcessGroup, name: str, http_body: str, ports: list[int],
                cpu: int | None = SERVER_CPU) -> Child:
    """nginx, one worker, in group.workdir/name; `http_body` goes into its http {} block."""
    directory = group.workdir / name
    (directory / "tmp").mkdir(parents=True, exist_ok=True)
    (directory / "nginx.conf").write_text(render_text(NGINX_HEAD, {"dir": directory}) + http_body + "}\n")
    return start_server(group, name, ["nginx", "-e", str(directory / "error.log"), "-p", str(directory),
                                      "-c", str(directory / "nginx.conf")], ports[0], cpu, ports=tuple(ports[1:]))


def start_file_server(group: ProcessGroup, name: str, www: Path, ports: list[int],
                      cpu: int | None = SERVER_CPU) -> Child:
    """nginx serving the files in `www` (Cache-Control: max-age=3600) on each of `ports`."""
    servers = "".join(f"    server {{ listen 127.0.0.1:{p}; root {www}; location / {{ }} }}\n" for p in ports)
    return start_nginx(group, name, render_text(FILES_SERVER, {"servers": servers}), ports, cpu)


def start_hops(group: ProcessGroup, name: str, hops: dict[str, tuple[int, int]], cpu: int | None = SERVER_CPU) -> Child:
    """One nginx with one non-caching reverse-proxy hop per entry: name -> (listen port, upstream port)."""
    blocks = "".join(render_text(HOP_BLOCK, {"name": n, "port": p, "upstream": u}) for n, (p, u) in hops.items())
    return start_nginx(group, name, HOP_HTTP + blocks, [p for p, _ in hops.values()], cpu)


def write_objects(www: Path, sizes: dict[str, int]) -> dict[str, bytes]:
    """Files name -> a body of that many bytes (a fixed pattern), readable by the servers."""
    www.mkdir(parents=True, exist_ok=True)
    bodies = {}
    pattern = bytes((i * 31 + 7) % 251 for i in range(251 * 64))
    for name, size in sizes.items():
        body = (pattern * (size // len(pattern) + 1))[:size]
        (www / name).parent.mkdir(parents=True, exist_ok=True)
        (www / name).write_bytes(body)
        bodies[name] = body
    for d in [www, *(p for p in www.rglob("*") if p.is_dir())]:
        d.chmod(0o755)
    return bodies


def start_multiplier(group: ProcessGroup, name: str, port: int, collector_port: int, proxies: dict[str, int],
                     log: Path | None, mode: str = "sequential", cpu: int | None = SERVER_CPU,
                     extra: tuple[str, ...] = ()) -> Child:
    """The release Multiplier with these proxies under test (name -> port on 127.0.0.1)."""
    flags = [a for n, p in proxies.items() for a in ("--proxy", f"{n}=127.0.0.1:{p}")] + list(extra)
    if log is not None:
        flags += ["--log", str(log)]
    return start_server(group, name, [str(MULTIPLIER), "--listen", f"127.0.0.1:{port}", "--mode", mode,
                                      "--collector", f"127.0.0.1:{collector_port}", *flags], port, cpu)


def start_dummy(group: ProcessGroup, name: str, port: int, parent_port: int, cpu: int | None = SERVER_CPU) -> Child:
    """ROPE's Dummy proxy: the Multiplier in --dummy mode, passing every request to its parent."""
    return start_server(group, name, [str(MULTIPLIER), "--dummy", "--parent", f"127.0.0.1:{parent_port}",
                                      "--listen", f"127.0.0.1:{port}"], port, cpu)


def start_squid_pinned(group: ProcessGroup, name: str, port: int, parent_port: int | None,
                       cpu: int | None = SERVER_CPU) -> Child:
    """A Debian Squid (spe_tools/squid.py's configuration: memory cache, child of `parent_port`), pinned."""
    return start_squid_conf(group, name, squid_config(name, port, group.workdir / name, parent_port), port, cpu=cpu)


def start_squid_conf(group: ProcessGroup, name: str, conf_text: str, port: int, ports: tuple[int, ...] = (),
                     cpu: int | None = SERVER_CPU) -> Child:
    """Debian's Squid with this configuration (spe_tools.squid.run_squid), checked like start_server, pinned."""
    refuse_busy(name, (port, *ports))
    child = settled(run_squid(group, name, SQUID, conf_text, port), ports)
    if cpu is not None:
        pin(child.pid, cpu)
    return child


def start_stock_collector(group: ProcessGroup, port: int, proxy_ports: dict[str, int],
                          cpu: int | None = SERVER_CPU) -> Child:
    """The project's Collector configuration (configs/collector) on Debian's stock Squid, pinned.
    A proxy name ending in '@accel' gets an accelerator port (for origin-form hops such as nginx)."""
    child = start_collector(group, "collector", "squid", port, proxy_ports)
    for p in proxy_ports.values():
        if not wait_port(p, 10):
            raise BenchError(f"Collector port {p} did not open:\n{tail(group.workdir / 'collector/cache.log')}")
    if cpu is not None:
        pin(child.pid, cpu)
    return child


def rss_and_peak_kb(pid: int) -> tuple[int, int]:
    """(RSS, peak RSS) of a process in KB. psutil has no peak (VmHWM): that one is read from /proc."""
    peak = next((int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                 if line.startswith("VmHWM:")), 0)
    return rss_kb(pid), peak


# ---------------------------------------------------------------- HTTP clients

def get(port: int, target: str, host: str) -> tuple[int, dict[str, str], bytes]:
    """One GET on a new connection: (status, lowercase headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", target, headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def timed_get(port: int, target: str) -> float:
    """Seconds one GET takes on a new connection, from connecting to the last body byte (as a proxy under
    test fetching a miss would: a client connection of its own per request)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", target)
        conn.getresponse().read()
        return time.monotonic() - start
    finally:
        conn.close()


async def read_reply(reader: asyncio.StreamReader, parser: h11.Connection) -> tuple[int, int]:
    """Reads one reply to the request sent on `parser` (h11 frames it): (status, body bytes)."""
    status = size = 0
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            parser.receive_data(await reader.read(1 << 16))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            size += len(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return status, size
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionError("closed before a reply")


def fixed_rate(port: int, urls: Callable[[int], str], rate: float, seconds: float, connections: int = 16,
               timeout_s: float = 10) -> dict:
    """Open-loop client: request i is due at start + i/rate (a fixed rate) and goes out on a free one of
    `connections` persistent connections (absolute-form GET of urls(i), as to a proxy). A request that
    finds every connection busy waits and counts as late. Returns the latencies (s, from sending to the
    last body byte), the lateness of each send (s), statuses, errors and the elapsed time."""
    n = max(1, int(rate * seconds))
    result: dict = {"latency": [], "late": [], "status": collections.Counter(), "errors": [], "bytes": 0}

    async def main() -> None:
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.05

        async def worker() -> None:
            reader = writer = None
            while True:
                item = await queue.get()
                if item is None:
                    break
                i, due = item
                url = urls(i)
                host = url.split("/")[2]
                sent = loop.time()
                result["late"].append(max(0.0, sent - due))
                try:
                    if writer is None:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout_s)
                        parser = h11.Connection(h11.CLIENT)
                    else:
                        parser.start_next_cycle()
                    writer.write(parser.send(h11.Request(method="GET", target=url, headers=[("Host", host)])))
                    parser.send(h11.EndOfMessage())
                    status, size = await asyncio.wait_for(read_reply(reader, parser), timeout_s)
                    result["latency"].append(loop.time() - sent)
                    result["status"][status] += 1
                    result["bytes"] += size
                    if parser.their_state is not h11.DONE:  # the server closes the connection
                        writer.close()
                        writer = None
                except (OSError, TimeoutError, h11.ProtocolError) as e:
                    result["errors"].append(f"{type(e).__name__}: {e}")
                    if writer is not None:
                        writer.close()
                    writer = None
            if writer is not None:
                writer.close()

        workers = [asyncio.create_task(worker()) for _ in range(connections)]
        for i in range(n):
            due = start + i / rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            queue.put_nowait((i, due))
        for _ in workers:
            queue.put_nowait(None)
        await asyncio.wait_for(asyncio.gather(*workers), timeout_s * 2 + 5)
        result["elapsed"] = loop.time() - start

    asyncio.run(main())
    return result


# ---------------------------------------------------------------- wrk

WRK_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}


def parse_wrk(text: str, latency: bool = False) -> dict:
    """Requests/s, completed requests and errors from wrk's output; p50/p99 in µs too with `latency`
    (`wrk --latency`)."""
    def percentile_us(pct: str) -> float:
        m = re.search(rf"^\s*{pct}(?:\.0+)?%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            raise BenchError(f"no {pct}% line in wrk output:\n{text}")
        return float(m.group(1)) * WRK_UNITS[m.group(2)]
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    total = re.search(r"(\d+) requests in", text)
    if not rps or not total:
        raise BenchError(f"cannot read wrk output:\n{text}")
    errors = []
    m = re.search(r"Socket errors: (.*)", text)
    if m:
        errors.append(f"socket errors: {m.group(1).strip()}")
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errors.append(f"non-2xx/3xx: {m.group(1)}")
    result = {"rps": float(rps.group(1)), "requests": int(total.group(1)), "errors": "; ".join(errors)}
    if latency:
        result |= {"p50": percentile_us("50"), "p99": percentile_us("99")}
    return result


def run_wrk(url: str, script: Path | None, seconds: float, connections: int, workdir: Path,
            latency: bool = False) -> dict:
    """wrk -t1 -c`connections` on LOAD_CPU, with a deadline; adds its own CPU time (rusage) to the result."""
    out_path = workdir / "wrk.out"
    argv = ["taskset", "-c", str(LOAD_CPU), "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "5s"]
    argv += ["--latency"] if latency else []
    argv += ["-s", str(script)] if script else []
    with open(out_path, "wb") as out:
        popen = subprocess.Popen([*argv, url], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 cwd=workdir)
    deadline = time.monotonic() + seconds + 30
    pid = 0
    try:
        while True:
            pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"wrk did not finish within {seconds + 30:g} s")
            time.sleep(0.05)
    finally:
        if not pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(popen.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(popen.pid, 0)
        popen.returncode = 0  # reaped here; keep subprocess from waiting again
    text = out_path.read_text(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise BenchError(f"wrk exited with {code}:\n{text}")
    result = parse_wrk(text, latency)
    result["wrk_cpu"] = usage.ru_utime + usage.ru_stime
    return result


# ---------------------------------------------------------------- logs and statistics

def read_multiplier_log(path: Path) -> dict:
    """Counters over a Multiplier JSON Lines log: records, statuses, proxy results, notes, errors."""
    records, bad_lines = 0, 0
    client_status: collections.Counter = collections.Counter()
    collector_status: collections.Counter = collections.Counter()
    results: collections.Counter = collections.Counter()
    notes: collections.Counter = collections.Counter()
    mismatched: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    with path.open(errors="replace") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad_lines += 1
                continue
            records += 1
            client_status[rec.get("client_status")] += 1
            collector_status[(rec.get("collector") or {}).get("status")] += 1
            if rec.get("note"):
                notes[rec["note"]] += 1
            for p in rec.get("proxies", []):
                results[p.get("result")] += 1
                for h in p.get("mismatched_headers") or []:
                    mismatched[h] += 1
                if p.get("error"):
                    errors[p["error"]] += 1
    return {"records": records, "bad_lines": bad_lines, "client_status": client_status,
            "collector_status": collector_status, "results": results, "notes": notes,
            "mismatched": mismatched, "errors": errors}


# Start-up warnings about a choice the benchmark made on purpose: the benchmarks send no unsafe request, so
# the Multiplier's note that they would reach only the Collector (no --replay-listen) says nothing about the run.
EXPECTED_WARNINGS = ("no --replay-listen:",)


def stderr_problems(path: Path) -> list[str]:
    """Warning, error and crash lines in a server's output, but the expected start-up warnings."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return [ln for ln in lines
            if re.search(r"\]\s*\[(warn|warning|error|critical)\]|fatal|abort|sanitizer", ln, re.I)
            and not any(w in ln for w in EXPECTED_WARNINGS)]


def fmt_counter(c: collections.Counter) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "none"
