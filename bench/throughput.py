"""Throughput: client requests/s and CPU per request of the Multiplier at 4- and 8-way fan-out,
against nginx `mirror` and an nginx Lua fan-out to the same upstreams, in interleaved rounds.

Set-up (127.0.0.1 only, free ports, every process stopped by PID; placement as in the perf anchors:
wrk -t1 on CPU0, every server on CPU1, one worker each):
  origin   nginx serving /1k (1024 B) from a file on 9 ports: the reference upstream (the
           Multiplier's Collector) and 8 cheap stand-in proxies under test, so that no proxy is
           the bottleneck
  mult4/8  the Multiplier (release build, sequential mode, JSON log) with 4 / 8 proxies
  mirror4/8  nginx: proxy_pass to the reference + `mirror` to 4 / 8 upstreams (headers only, a new
           upstream connection per mirror request: not the Multiplier's work, see the perf anchors)
  lua4/8   nginx + lua: ngx.location.capture_multi to the reference + 4 / 8 upstreams over
           keep-alive, every body read and hashed with ngx.md5 (the closest equivalent)
Each scenario runs `wrk -t1 -cC -dS` per round; rounds rotate the order. CPU µs/req is the
server's Δ(utime+stime) over wrk's completed requests. Targets at 4-way fan-out with
1 KB objects: >= 1.5x the Lua fan-out's req/s, >= 3x the mirror's, <= 80 µs CPU per request; at 4-
and 8-way: the Lua fan-out's CPU per request >= 1.5x the Multiplier's (each pair from one round, their median).

Run: ./spe bench throughput [--rounds 3] [--seconds 8] [--connections 10] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from bench import command
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, MULTIPLIER, SERVER_CPU, BenchError, run_main
from bench.lib.meters import busy_seconds, cpu_seconds
from bench.lib.nginx_fanout import (
    LUA_INIT,
    LUA_MODULES,
    UPSTREAMS,
    lua_server,
    mirror_server,
    nginx_conf,
    upstream_blocks,
)
from bench.lib.servers import BENCH_ORDER, check_alive, log_path
from bench.lib.wrk import run_wrk
from spe_tools.config_template import render_text
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port, process_tree
from spe_tools.summary_stats import median

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Throughput at 4- and 8-way fan-out, 1 KB"

FANOUTS = (4, 8)
KINDS = ("mult", "lua", "mirror")
TARGET_VS_LUA, TARGET_VS_MIRROR, TARGET_CPU_US = 1.5, 3.0, 80.0
# at 4- and 8-way the Multiplier spends at most 2/3 of the Lua fan-out's CPU per client request
TARGET_LUA_CPU_RATIO = 1.5

ORIGIN_BODY = """\
    sendfile on;
    open_file_cache max=64 inactive=600s; open_file_cache_valid 3600s;
    default_type application/octet-stream;
    server {
{{listens}}
        root {{www}};
        location / { }
    }
"""


# ---------------------------------------------------------------- measuring (pure parts)

def median_ratio(runs: list[dict], a: str, b: str, figure: str = "rps") -> float:
    """Median over rounds of figure(a) / figure(b) (req/s, or CPU µs per request), each pair from the same round."""
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["scenario"]] = r[figure]
    ratios = [v[a] / v[b] for v in by_round.values() if a in v and b in v and v[b] > 0]
    return median(ratios) if ratios else float("nan")


def summary_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for n in FANOUTS:
        for kind in KINDS:
            mine = [r for r in runs if r["scenario"] == f"{kind}{n}"]
            if not mine:
                continue
            rows.append({"fanout": n, "kind": kind, "runs": len(mine),
                         "rps": median(r["rps"] for r in mine),
                         "rps_min": min(r["rps"] for r in mine), "rps_max": max(r["rps"] for r in mine),
                         "cpu_us": median(r["cpu_us"] for r in mine),
                         "origin_us": median(r["origin_us"] for r in mine),
                         "foreign": median(r["foreign"] for r in mine),
                         "errors": "; ".join(sorted({r["errors"] for r in mine if r["errors"]}))})
    return rows


LABELS = {"mult": "Multiplier", "lua": "nginx Lua capture_multi + md5", "mirror": "nginx mirror"}


def table(runs: list[dict], seconds: float) -> str:
    lines = ["| fan-out | server | runs × s | req/s (min–max) | server CPU µs/req | origin CPU µs per client req "
             "| foreign CPU-s/run |", "|---|---|---|---|---|---|---|"]
    for row in summary_rows(runs):
        lines.append(f"| {row['fanout']} | {LABELS[row['kind']]} | {row['runs']} × {seconds:g} | {row['rps']:.0f} "
                     f"({row['rps_min']:.0f}–{row['rps_max']:.0f}) | {row['cpu_us']:.1f} | {row['origin_us']:.1f} "
                     f"| {row['foreign']:.2f} |")
    return "\n".join(lines)


def verdicts(runs: list[dict]) -> list[str]:
    out = []
    rows = {(r["fanout"], r["kind"]): r for r in summary_rows(runs)}
    for n in FANOUTS:
        if (n, "mult") not in rows:
            continue
        vs_lua = median_ratio(runs, f"mult{n}", f"lua{n}")
        vs_mirror = median_ratio(runs, f"mult{n}", f"mirror{n}")
        cpu = rows[(n, "mult")]["cpu_us"]
        lua_cpu = median_ratio(runs, f"lua{n}", f"mult{n}", "cpu_us")  # Lua's CPU per request / the Multiplier's
        line = (f"{n}-way: Multiplier / Lua fan-out **{vs_lua:.2f}×**, Multiplier / mirror **{vs_mirror:.2f}×** "
                f"(median of per-round ratios); Multiplier CPU **{cpu:.1f} µs** per client request; Lua's CPU per "
                f"request / the Multiplier's **{lua_cpu:.2f}×** (target ≥ {TARGET_LUA_CPU_RATIO}×: "
                f"{'met' if lua_cpu >= TARGET_LUA_CPU_RATIO else 'NOT met'})")
        if n == 4:
            line += (f" (targets: ≥ {TARGET_VS_LUA}× Lua: {'met' if vs_lua >= TARGET_VS_LUA else 'NOT met'}; "
                     f"≥ {TARGET_VS_MIRROR}× mirror: {'met' if vs_mirror >= TARGET_VS_MIRROR else 'NOT met'}; "
                     f"≤ {TARGET_CPU_US:g} µs: {'met' if cpu <= TARGET_CPU_US else 'NOT met'})")
        out.append(line)
    return out


# ---------------------------------------------------------------- processes

def start_nginx(group: ProcessGroup, name: str, body: str, port: int, lua: bool = False) -> int:
    directory = group.workdir / name
    (directory / "tmp").mkdir(parents=True, exist_ok=True)
    (directory / "nginx.conf").write_text(nginx_conf(directory, body, lua))
    child = group.start(name, ["taskset", "-c", str(SERVER_CPU), "nginx", "-e", str(directory / "error.log"),
                               "-p", str(directory), "-c", str(directory / "nginx.conf")], port=port, deadline_s=15)
    return child.pid


def check_multiplier_log(path: Path, proxies: int) -> tuple[int, int, int]:
    """(records, proxy results OK, proxy results) in a Multiplier JSON log."""
    records = ok = total = 0
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            records += 1
            total += len(rec["proxies"])
            ok += sum(p["result"] == "OK" for p in rec["proxies"])
    if total != records * proxies:
        raise BenchError(f"{path.name}: {total} proxy results for {records} records, expected {proxies} each")
    return records, ok, total


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=parse_duration, default=8)
    parser.add_argument("--connections", type=int, default=10, help="wrk -c (default 10, as the perf anchors)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if not all(Path(m).exists() for m in LUA_MODULES):
        print("bench: libnginx-mod-http-lua is not installed (./spe setup)", file=sys.stderr)
        return 1
    return run_main("throughput", ("wrk", "nginx", "taskset"), lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    (workdir / "www").mkdir()
    (workdir / "www/1k").write_bytes(bytes((i * 7) % 256 for i in range(1024)))
    origin_ports = [free_port() for _ in range(1 + max(FANOUTS))]
    ports = {f"{kind}{n}": free_port() for kind in KINDS for n in FANOUTS}
    script = workdir / "absolute.lua"  # the Multiplier is a forward proxy: absolute-form targets
    script.write_text(f'wrk.path = "http://127.0.0.1:{origin_ports[0]}/1k"\n')
    with ProcessGroup(workdir) as group:
        origin, servers = start_servers(group, origin_ports, ports)
        # Warm-up: upstream keep-alive pools, page cache, Lua code.
        for name in servers:
            run_wrk(f"http://127.0.0.1:{ports[name]}/1k", script if name.startswith("mult") else None, 1,
                    args.connections, workdir)
        runs = measure_rounds(args, servers, origin, ports, script, workdir)
        check_alive(group)
        group.stop_all()
        checks = [f"{name}: {r} records, proxy results OK: {ok} of {total}"
                  for name, (r, ok, total) in ((f"mult{n}", check_multiplier_log(log_path(workdir, f"mult{n}"), n))
                                               for n in FANOUTS)]
    return report(args, runs, checks)


def start_servers(group: ProcessGroup, origin_ports: list[int], ports: dict[str, int]) -> tuple[int, dict[str, int]]:
    """The origin, one nginx for both mirrors, one for both Lua fan-outs and a Multiplier per fan-out: the
    origin's pid and the pid each scenario runs against."""
    workdir = group.workdir
    listens = "\n".join(f"        listen 127.0.0.1:{p} backlog=4096;" for p in origin_ports)
    origin = start_nginx(group, "origin", render_text(ORIGIN_BODY, {"listens": listens, "www": workdir / "www"}),
                         origin_ports[0])
    ups = render_text(UPSTREAMS, {"upstreams": upstream_blocks(origin_ports)})
    mirror = start_nginx(group, "mirror", ups + "\n".join(mirror_server(ports[f"mirror{n}"], n) for n in FANOUTS),
                         ports["mirror4"])
    lua = start_nginx(group, "lua", ups + LUA_INIT + "\n".join(lua_server(ports[f"lua{n}"], n) for n in FANOUTS),
                      ports["lua4"], lua=True)
    mults = {}
    for n in FANOUTS:
        argv = ["taskset", "-c", str(SERVER_CPU), str(MULTIPLIER), "--listen", f"127.0.0.1:{ports[f'mult{n}']}",
                "--collector", f"127.0.0.1:{origin_ports[0]}", "--log", str(log_path(workdir, f"mult{n}")),
                "--via-name", f"spe-bench-{n}", *BENCH_ORDER]
        for i in range(1, n + 1):
            argv += ["--proxy", f"p{i}=127.0.0.1:{origin_ports[i]}"]
        mults[n] = group.start(f"mult{n}", argv, port=ports[f"mult{n}"], deadline_s=15).pid
    return origin, {**{f"mult{n}": mults[n] for n in FANOUTS}, **{f"mirror{n}": mirror for n in FANOUTS},
                    **{f"lua{n}": lua for n in FANOUTS}}


def measure_rounds(args: argparse.Namespace, servers: dict[str, int], origin: int, ports: dict[str, int],
                   script: Path, workdir: Path) -> list[dict]:
    """Every scenario once a round, the order rotating: wrk's figures and the CPU per request of the server and
    of the origin, and what anything else on the machine used."""
    order = list(servers)
    runs = []
    for rnd in range(args.rounds):
        for name in order[rnd % len(order):] + order[:rnd % len(order)]:
            sut = process_tree(servers[name])
            origin_pids = process_tree(origin)
            c0, o0, b0 = cpu_seconds(sut), cpu_seconds(origin_pids), busy_seconds()
            result = run_wrk(f"http://127.0.0.1:{ports[name]}/1k", script if name.startswith("mult") else None,
                             args.seconds, args.connections, workdir)
            c1, o1, b1 = cpu_seconds(sut), cpu_seconds(origin_pids), busy_seconds()
            n = max(result["requests"], 1)
            ours = (c1 - c0) + (o1 - o0) + result["wrk_cpu"]
            runs.append({**result, "round": rnd, "scenario": name, "cpu_us": (c1 - c0) / n * 1e6,
                         "origin_us": (o1 - o0) / n * 1e6, "foreign": (b1 - b0) - ours})
            print(f"round {rnd + 1}/{args.rounds} {name:8s} {result['rps']:9.0f} req/s  "
                  f"{(c1 - c0) / n * 1e6:7.1f} µs/req  {result['errors']}", flush=True)
    return runs


def report(args: argparse.Namespace, runs: list[dict], checks: list[str]) -> int:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    text = (f"\n## {TITLE} (Multiplier, nginx Lua fan-out, nginx mirror) — {now}\n\n"
            f"Machine: {machine()}. Command: `{command_line('throughput')}`.\n\n"
            f"wrk -t1 -c{args.connections} (Debian's wrk) pinned to CPU{LOAD_CPU}; every server pinned to "
            f"CPU{SERVER_CPU}, "
            "one worker/thread each: the origin (nginx serving /1k from a file on 9 ports: the reference upstream "
            "— the Multiplier's Collector stand-in — and 8 stand-in proxies under test), the Multiplier (release "
            "build, sequential mode, JSON log), nginx `mirror` (proxy_pass to the reference + N mirrors; reads "
            "headers only and opens a new upstream connection per mirror request) and nginx + Lua "
            "(`ngx.location.capture_multi` to the reference + N upstreams over keep-alive, every body read and "
            "hashed with `ngx.md5`). Rounds interleaved, order rotating. CPU µs/req = Δ(utime+stime) of the server "
            "over wrk's completed requests; the origin's CPU per client request is shown apart. Foreign CPU-s/run: "
            "CPU used by anything else on the machine during the run (from /proc/stat; approximate): where it is "
            "clearly above 0, other work shared the machine and req/s varies between runs; the ratios are taken "
            "within a round.\n\n" + table(runs, args.seconds) + "\n\n"
            + "".join(f"- {v}\n" for v in verdicts(runs)) + "\nChecks:\n\n" + "".join(f"- {c}\n" for c in checks))
    errors = sorted({f"{r['scenario']}: {r['errors']}" for r in runs if r["errors"]})
    if errors:
        text += "\nwrk reported: " + "; ".join(errors) + "\n"
    return publish(text, [], title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
