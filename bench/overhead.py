"""Latency the Multiplier adds over going straight to the Collector, on loopback.

Set-up (all on 127.0.0.1, in a temporary directory, every process stopped by PID):
  origin      nginx, one worker, serving /1k and /13k from files
  Collector   Debian squid 5.7, memory cache, objects warmed (every request is a HIT)
  proxies     4 stand-in proxies under test: one nginx, one worker, 4 ports serving the
              same files (cheap on purpose: the benchmark measures the Multiplier's work)
  Multiplier  sequential mode, JSON log on

Scenarios, interleaved round by round (A/B/C, A/B/C, ...):
  direct   wrk -> Collector
  mult0    wrk -> Multiplier (0 proxies) -> Collector        (the proxying cost alone)
  mult4    wrk -> Multiplier (4 proxies) -> Collector + fan-out to 4 proxies

wrk runs with -t1 -c1 --latency (one persistent connection, sequential requests) pinned to
CPU0; every server is pinned to CPU1, as in the project's perf anchors. Reported: median over
rounds of wrk's p50 / p99, requests/s, the added p50 / p99 versus direct, and the Multiplier's
CPU time per client request (utime+stime from /proc/PID/stat).

Run: ./spe bench overhead [--rounds N] [--seconds S] [--quick] [--no-append]
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import append_result, machine  # noqa: E402

from spe_tools.process import ProcessGroup, free_port  # noqa: E402
from spe_tools.squid import start_squid  # noqa: E402

MULTIPLIER = ROOT / "build/release/multiplier/spe-multiplier"
SIZES = {"1k": 1024, "13k": 13312}
CLK_TCK = os.sysconf("SC_CLK_TCK")

NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on; tcp_nodelay on;
    keepalive_timeout 120s; keepalive_requests 10000000;
    open_file_cache max=64 inactive=600s;
    client_body_temp_path {dir}/tmp; proxy_temp_path {dir}/tmp; fastcgi_temp_path {dir}/tmp;
    uwsgi_temp_path {dir}/tmp; scgi_temp_path {dir}/tmp;
    server {{
        {listens}
        root {www};
        location / {{ add_header Cache-Control "public, max-age=3600"; }}
    }}
}}
"""


def start_nginx(group: ProcessGroup, name: str, ports: list[int], www: Path) -> None:
    directory = group.workdir / name
    (directory / "tmp").mkdir(parents=True)
    listens = " ".join(f"listen 127.0.0.1:{p};" for p in ports)
    (directory / "nginx.conf").write_text(NGINX_CONF.format(dir=directory, listens=listens, www=www))
    group.start(name, ["taskset", "-c", "1", "nginx", "-c", str(directory / "nginx.conf"), "-p", str(directory)],
                port=ports[0])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def pin(pid: int, cpu: int) -> None:
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)], check=True, capture_output=True)


UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}


def parse_wrk(text: str) -> dict:
    """p50/p99 in µs, requests/s and completed requests from `wrk --latency` output."""
    def latency(pct: str) -> float:
        m = re.search(rf"^\s*{pct}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            raise RuntimeError(f"no {pct}% line in wrk output:\n{text}")
        return float(m.group(1)) * UNITS[m.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    total = int(re.search(r"(\d+) requests in", text).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", text)
    return {"p50": latency("50"), "p99": latency("99"), "rps": rps, "requests": total,
            "errors": errors.group(0) if errors else ""}


def run_wrk(proxy_port: int, url: str, seconds: float, workdir: Path) -> dict:
    script = workdir / "absolute.lua"
    # The client talks to a proxy: the request line carries the absolute URL.
    script.write_text(f'local req = wrk.format("GET", "{url}")\nrequest = function() return req end\n')
    out = subprocess.run(["taskset", "-c", "0", "wrk", "-t1", "-c1", f"-d{seconds:g}s", "--latency", "-s", str(script),
                          f"http://127.0.0.1:{proxy_port}/"], capture_output=True, text=True, timeout=seconds + 30)
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed: {out.stderr}{out.stdout}")
    return parse_wrk(out.stdout)


def table(results: dict, rounds: int, seconds: float) -> str:
    lines = ["| size | scenario | rounds × s | p50 µs | p99 µs | added p50 µs | added p99 µs | req/s | "
             "Multiplier CPU µs/req |", "|---|---|---|---|---|---|---|---|---|"]
    for size in SIZES:
        base = results[(size, "direct")]
        for scenario in ("direct", "mult0", "mult4"):
            runs = results[(size, scenario)]
            p50 = statistics.median(r["p50"] for r in runs)
            p99 = statistics.median(r["p99"] for r in runs)
            added50 = p50 - statistics.median(r["p50"] for r in base)
            added99 = p99 - statistics.median(r["p99"] for r in base)
            rps = statistics.median(r["rps"] for r in runs)
            cpu = [r["cpu_us_per_req"] for r in runs if r.get("cpu_us_per_req") is not None]
            cpu_text = f"{statistics.median(cpu):.1f}" if cpu else "–"
            added = ("–", "–") if scenario == "direct" else (f"{added50:+.1f}", f"{added99:+.1f}")
            lines.append(f"| {size} | {scenario} | {rounds} × {seconds:g} | {p50:.1f} | {p99:.1f} | {added[0]} | "
                         f"{added[1]} | {rps:.0f} | {cpu_text} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s (a smoke run)")
    parser.add_argument("--no-append", action="store_true", help="do not append to docs/benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds = 1, 2
    for tool in ("wrk", "nginx", "taskset"):
        if shutil.which(tool) is None:
            print(f"bench: {tool} is not installed (./spe setup installs it)", file=sys.stderr)
            return 1
    if not MULTIPLIER.exists():
        print(f"bench: {MULTIPLIER} missing: run ./spe setup", file=sys.stderr)
        return 1

    workdir = Path(tempfile.mkdtemp(prefix="spe-bench-"))
    workdir.chmod(0o755)
    www = workdir / "www"
    www.mkdir()
    for name, size in SIZES.items():
        (www / name).write_bytes(bytes((i * 31 + 7) % 251 for i in range(size)))
    results: dict = {}
    records: dict = {}
    try:
        with ProcessGroup(workdir) as group:
            origin = free_port()
            start_nginx(group, "origin", [origin], www)
            collector = start_squid(group, "collector", free_port())
            pin(collector.pid, 1)
            proxy_ports = [free_port() for _ in range(4)]
            start_nginx(group, "proxies", proxy_ports, www)
            multipliers = {}
            for scenario, ports in (("mult0", []), ("mult4", proxy_ports)):
                port = free_port()
                proxies = [a for i, p in enumerate(ports) for a in ("--proxy", f"p{i}=127.0.0.1:{p}")]
                child = group.start(scenario, ["taskset", "-c", "1", str(MULTIPLIER), "--listen", f"127.0.0.1:{port}",
                                               "--collector", f"127.0.0.1:{collector.port}", *proxies,
                                               "--log", str(workdir / f"{scenario}.jsonl")], port=port)
                multipliers[scenario] = child
            targets = {"direct": collector.port, **{s: c.port for s, c in multipliers.items()}}
            for size in SIZES:  # warm the Collector's cache: every measured request is a HIT
                run_wrk(collector.port, f"http://127.0.0.1:{origin}/{size}", 1, workdir)
            for rnd in range(args.rounds):
                for size in SIZES:
                    for scenario, port in targets.items():
                        child = multipliers.get(scenario)
                        before = cpu_seconds(child.pid) if child else None
                        r = run_wrk(port, f"http://127.0.0.1:{origin}/{size}", args.seconds, workdir)
                        if child:
                            r["cpu_us_per_req"] = (cpu_seconds(child.pid) - before) * 1e6 / max(1, r["requests"])
                        results.setdefault((size, scenario), []).append(r)
                        print(f"round {rnd + 1} {size:>3} {scenario:6} p50 {r['p50']:8.1f} µs  p99 {r['p99']:8.1f} µs  "
                              f"{r['rps']:8.0f} req/s {r['errors']}", file=sys.stderr)
            for scenario, child in multipliers.items():
                child.stop()
                lines = (workdir / f"{scenario}.jsonl").read_text().splitlines()
                results_ok = sum(1 for line in lines for p in json.loads(line)["proxies"] if p["result"] == "OK")
                results_all = sum(len(json.loads(line)["proxies"]) for line in lines)
                records[scenario] = (len(lines), results_ok, results_all)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    wrk_total = {s: sum(r["requests"] for k, runs in results.items() if k[1] == s for r in runs) for s in records}
    text = table(results, args.rounds, args.seconds)
    checks = "\n".join(f"- {s}: {n} records for {wrk_total[s]} requests counted by wrk (wrk does not count the "
                       f"requests still in flight when it stops, warm-up excluded); proxy results OK: {ok} of {total}"
                       for s, (n, ok, total) in records.items())
    command = "./spe bench overhead" + ("" if (args.rounds, args.seconds) == (5, 5) else
                                        f" --rounds {args.rounds} --seconds {args.seconds:g}")
    report = (f"\n## Multiplier overhead on loopback — {datetime.date.today()}\n\n"
              f"Machine: {machine()}. Command: `{command}`. wrk -t1 -c1 on CPU0; nginx origin, Squid Collector "
              f"(HIT), 4 nginx stand-in proxies and the Multiplier on CPU1. Medians over rounds.\n\n"
              f"{text}\n\n{checks}\n")
    print(report)
    if not args.no_append:
        append_result(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
