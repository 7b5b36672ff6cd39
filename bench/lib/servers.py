"""Starting the benchmarks' servers (origin, Collector, stand-in proxies, nginx hops, Multipliers, dummies,
Squids under test): each pinned to its CPU (taskset) in a ProcessGroup, so it is stopped by PID when the
benchmark ends, fails or gets SIGTERM (harness.run_main), and checked to be up and on its ports."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

import psutil

from bench.lib.harness import MULTIPLIER, SERVER_CPU, BenchError
from spe_tools.collector import start_collector
from spe_tools.config_template import render_text
from spe_tools.process import Child, ProcessGroup, free_port, port_open, process_tree, tail
from spe_tools.rundir import layout
from spe_tools.rundir.layout import RunDir
from spe_tools.squid import run_squid, squid_config

SQUID = "/usr/sbin/squid"


def log_path(workdir: Path, name: str) -> Path:
    """A Multiplier's log in a run directory of its own (workdir/NAME/NAME.jsonl): a Multiplier refuses a directory
    another one writes (its .multiplier.lock), and a benchmark runs several side by side."""
    directory = workdir / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{name}.jsonl"

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


# A benchmark's load generator (wrk, the load client) opens many connections from one address whose requests are
# independent users'; the order a browser causes across its connections (--order client, the default) would make
# each leg wait for other connections' legs, and the Multiplier's cost depend on the proxies' pace.
BENCH_ORDER = ["--order", "connection"]


def start_multiplier(group: ProcessGroup, name: str, port: int, collector_port: int, proxies: dict[str, int],
                     log: Path | None, mode: str = "sequential", cpu: int | None = SERVER_CPU,
                     extra: tuple[str, ...] = (), *, wrapper: tuple[str, ...] = (), binary: Path = MULTIPLIER,
                     deadline_s: float = 15) -> Child:
    """The Multiplier (the release build, or `binary`) with these proxies under test (name -> port on
    127.0.0.1), started through `wrapper` (e.g. valgrind) if given."""
    flags = [a for n, p in proxies.items() for a in ("--proxy", f"{n}=127.0.0.1:{p}")] + list(extra)
    if "--order" not in extra:
        flags += BENCH_ORDER
    if log is not None:
        flags += ["--log", str(log)]
    return start_server(group, name, [*wrapper, str(binary), "--listen", f"127.0.0.1:{port}", "--mode", mode,
                                      "--collector", f"127.0.0.1:{collector_port}", *flags], port, cpu,
                        deadline_s=deadline_s)


def numbered(ports: list[int]) -> dict[str, int]:
    """Proxies under test named p1, p2 ... after these ports."""
    return {f"p{i}": p for i, p in enumerate(ports, 1)}


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
    child = start_collector(group, layout.COLLECTOR, "squid", port, proxy_ports)
    for p in proxy_ports.values():
        if not wait_port(p, 10):
            raise BenchError(f"Collector port {p} did not open:\n{tail(RunDir(group.workdir).cache_log)}")
    if cpu is not None:
        pin(child.pid, cpu)
    return child
