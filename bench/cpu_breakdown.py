"""CPU per request, taken apart: where the Multiplier's CPU goes at 4-way fan-out, beside the nginx
Lua fan-out doing the same exchange (what limits throughput and CPU per request).

Set-up as in `throughput` (127.0.0.1 only, every process stopped by PID): nginx serving /1k on 5 ports
(the reference upstream and 4 stand-in proxies under test), the Multiplier (release build, sequential
mode, JSON log, 4 proxies) and nginx + Lua (`capture_multi` to the reference + 4 upstreams over
keep-alive, `ngx.md5` of every body). Load: wrk -t1 -c10 on CPU0; every server on CPU1.

1. user and kernel CPU per client request: Δ utime and Δ stime of each server over wrk's completed
   requests, interleaved rounds; the origin's CPU per client request beside them.
2. system calls per client request: `strace -c -f` attached to the Multiplier and to the Lua
   worker during --trace-seconds of the same load (strace slows the server; counts per request stay).
3. user-space instructions per client request: each server run again under valgrind's callgrind
   (instructions, not time: the same on a busy machine), warmed, counted over --callgrind-seconds of
   wrk; the Multiplier's instructions split by component (its own code, Beast, Asio, OpenSSL's MD5,
   the allocator, the C library ...). nginx's own symbols are stripped, so it gets a total only.
Parts 2 and 3 count the Multiplier's requests by its records and show the proxy legs it sent per
record: slowed by strace or callgrind, its fan-out thread falls so far behind the client that some
legs are not sent (`busy`), and a record then stands for less work (not so with --fanout-threads 0).

`--baseline BINARY` runs another spe-multiplier build (e.g. an older commit's) beside this one in all three parts.

`--multiplier-args FLAGS` and `--baseline-args FLAGS` give each build flags of its own (the same binary
with another setting, or both with `--fanout-threads 0`: with one thread the instructions per request do
not depend on how the threads' work interleaves, so two builds compare to a few hundred instructions).

Run: ./spe bench cpu_breakdown [--rounds 3] [--seconds 8] [--trace-seconds 4] [--callgrind-seconds 8]
                               [--multiplier-args FLAGS] [--baseline BINARY [--baseline-args FLAGS]]
                               [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench import command
from bench.lib.callgrind import callgrind, split_name
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, MULTIPLIER, SERVER_CPU, run_main
from bench.lib.logs import lines_in
from bench.lib.meters import busy_seconds
from bench.lib.nginx_fanout import LUA_INIT, LUA_MODULES, UPSTREAMS, lua_server, nginx_conf, upstream_blocks
from bench.lib.servers import (
    check_alive,
    log_path,
    numbered,
    start_file_server,
    start_multiplier,
    start_server,
    write_objects,
)
from bench.lib.wrk import run_wrk
from spe_tools.config_template import render_text
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, cpu_times, free_port, process_tree
from spe_tools.summary_stats import median

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "CPU per request taken apart: Multiplier and nginx Lua fan-out, 4-way, 1 KB"

FANOUT = 4
TARGET_CPU_US, TARGET_VS_LUA = 80.0, 1.5

# The Multiplier's user-space instructions by component, from callgrind's "file:function [object]"
# (for inlined code the file is the header it came from, so the function names the owner): the first
# rule that matches names the component. Each rule looks at the object, the function or the file.
COMPONENTS = (
    ("MD5 of every body (OpenSSL)", "object", re.compile(r"libcrypto")),
    ("heap allocation (malloc, free, new, delete)", "object", re.compile(r"libmimalloc")),
    ("heap allocation (malloc, free, new, delete)", "function", re.compile(r"^(operator (new|delete)|_?_?(int_)?"
                                                                           r"(malloc|free|calloc|realloc)\b)")),
    ("heap allocation (malloc, free, new, delete)", "file", re.compile(r"/malloc/")),
    ("JSON record and log writing (SPE, spdlog, fmt)", "function",
     re.compile(r"JsonWriter|to_json_line|to_rope_lines|ResultLog|measure_members|^spdlog::|^fmt::")),
    ("JSON record and log writing (SPE, spdlog, fmt)", "object", re.compile(r"libspdlog|libfmt")),
    ("HTTP parsing and header fields (Beast)", "function",
     re.compile(r"^boost::beast::(http::(basic_parser|detail::basic_parser_base|basic_fields|string_to_field|"
                r"detail::(opt_token_list|rfc7230|trim|basic_parsed_list)|token_list|validate_list|parser<)|iless|"
                r"iequals|detail::iequals)")),
    ("SPE's data path (sessions, legs, validation, header policy)", "function", re.compile(r"^spe::")),
    ("Asio and Beast I/O: reactor, scheduler, coroutines, composed reads and writes", "function",
     re.compile(r"^boost::(asio|beast)::")),
    ("C library: memcpy, string functions, system call wrappers", "object", re.compile(r"libc\.so|ld-linux")),
    ("C++ standard library (strings, containers)", "function", re.compile(r"^std::")),
)
OTHER = "other"


# ---------------------------------------------------------------- parsing (pure)

def parse_strace_summary(text: str) -> dict[str, int]:
    """syscall -> calls, from `strace -c` output (the table's total line excluded)."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or not re.fullmatch(r"[\d.]+", fields[0]) or fields[-1] == "total":
            continue
        # % time, seconds, usecs/call, calls, [errors,] syscall
        calls[fields[-1]] = calls.get(fields[-1], 0) + int(fields[3])
    return calls


def component(where: str) -> str:
    parts = split_name(where)
    return next((name for name, field, rule in COMPONENTS if rule.search(parts[field])), OTHER)


def by_component(rows: list[tuple[int, str]]) -> dict[str, int]:
    """Instructions per component, most first (OTHER last)."""
    out: dict[str, int] = {}
    for cost, where in rows:
        name = component(where)
        out[name] = out.get(name, 0) + cost
    return dict(sorted(out.items(), key=lambda kv: (kv[0] == OTHER, -kv[1])))


# ---------------------------------------------------------------- processes

def lua_conf(directory: Path, port: int, upstream_ports: list[int], single_process: bool) -> str:
    body = render_text(UPSTREAMS, {"upstreams": upstream_blocks(upstream_ports)}) + LUA_INIT + lua_server(port, FANOUT)
    conf = nginx_conf(directory, body, lua=True)
    # Under valgrind: one process, so that the profiled PID is the one serving.
    return conf.replace("worker_processes 1;", "worker_processes 1;\nmaster_process off;") if single_process else conf


def start_lua(group: ProcessGroup, name: str, port: int, upstream_ports: list[int], wrapper: list[str],
              deadline_s: float = 15) -> int:
    directory = group.workdir / name
    (directory / "tmp").mkdir(parents=True, exist_ok=True)
    (directory / "nginx.conf").write_text(lua_conf(directory, port, upstream_ports, single_process=bool(wrapper)))
    argv = [*wrapper, "nginx", "-e", str(directory / "error.log"), "-p", str(directory),
            "-c", str(directory / "nginx.conf")]
    return start_server(group, name, argv, port, SERVER_CPU, deadline_s=deadline_s).pid


def start_mult(group: ProcessGroup, name: str, port: int, origin_ports: list[int], log: Path, wrapper: list[str],
               binary: Path = MULTIPLIER, deadline_s: float = 15, flags: tuple[str, ...] = ()) -> int:
    return start_multiplier(group, name, port, origin_ports[0], numbered(origin_ports[1:]), log,
                            extra=("--via-name", f"spe-bench-{port}", *flags), wrapper=tuple(wrapper), binary=binary,
                            deadline_s=deadline_s).pid


def serving_pid(pid: int) -> int:
    """The process that serves: an nginx master's worker, else the process itself."""
    children = [p for p in process_tree(pid) if p != pid]
    return children[0] if children else pid


# ---------------------------------------------------------------- the three parts

def measure_times(args: argparse.Namespace, servers: dict[str, tuple[int, str, Path | None]], origin: int,
                  workdir: Path) -> list[dict]:
    runs = []
    names = list(servers)
    for rnd in range(args.rounds):
        for name in names[rnd % len(names):] + names[:rnd % len(names)]:
            pid, url, script = servers[name]
            sut, origin_pids = process_tree(pid), process_tree(origin)
            (u0, s0), (ou0, os0), b0 = cpu_times(sut), cpu_times(origin_pids), busy_seconds()
            result = run_wrk(url, script, args.seconds, 10, workdir)
            (u1, s1), (ou1, os1), b1 = cpu_times(sut), cpu_times(origin_pids), busy_seconds()
            n = max(result["requests"], 1)
            ours = (u1 - u0) + (s1 - s0) + (ou1 - ou0) + (os1 - os0) + result["wrk_cpu"]
            runs.append({"server": name, "round": rnd, "rps": result["rps"], "user_us": (u1 - u0) / n * 1e6,
                         "sys_us": (s1 - s0) / n * 1e6, "origin_us": ((ou1 - ou0) + (os1 - os0)) / n * 1e6,
                         "foreign": (b1 - b0) - ours, "errors": result["errors"]})
            print(f"round {rnd + 1}/{args.rounds} {name:10s} {result['rps']:8.0f} req/s  user "
                  f"{runs[-1]['user_us']:6.1f}  kernel {runs[-1]['sys_us']:6.1f} µs/req", flush=True)
    return runs


NOT_SENT = ("busy", "not_sent")  # leg errors of legs that never went out


def records_and_legs(log: Path, skip: int) -> tuple[int, int]:
    """(records, proxy legs sent) in a Multiplier log past its first `skip` lines."""
    records, legs = 0, 0
    with log.open() as f:
        for line in itertools.islice(f, skip, None):
            records += 1
            legs += sum(1 for p in json.loads(line)["proxies"] if p.get("error") not in NOT_SENT)
    return records, legs


def trace_syscalls(pid: int, url: str, script: Path | None, seconds: float, workdir: Path, name: str,
                   log: Path | None = None) -> dict:
    """System calls per request while strace is attached. For the Multiplier (its `log`) requests are its
    records: strace slows its fan-out behind the client, and the calls of the fan-outs it finishes after
    wrk stops belong to those records, not to wrk's. So far behind that some legs go unsent (`busy`):
    how many were sent per record is returned beside the calls."""
    out = workdir / f"strace-{name}.txt"
    tracer = subprocess.Popen(["strace", "-f", "-c", "-o", str(out), "-p", str(pid)], stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # attached before the load starts
        before = lines_in(log) if log else 0
        result = run_wrk(url, script, seconds, 10, workdir)
        time.sleep(0.5)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
    calls = parse_strace_summary(out.read_text())
    if not log:
        return {"requests": result["requests"], "calls": calls, "legs_sent": None}
    records, legs = records_and_legs(log, before)
    return {"requests": records, "calls": calls, "legs_sent": legs / max(records, 1)}


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=parse_duration, default=8, help="wrk run per round (part 1)")
    parser.add_argument("--trace-seconds", type=parse_duration, default=4, help="load while strace counts (part 2)")
    parser.add_argument("--callgrind-seconds", type=parse_duration, default=8,
                        help="load while callgrind counts (part 3)")
    parser.add_argument("--baseline", type=Path, metavar="BINARY",
                        help="another spe-multiplier build (e.g. an older commit's) measured beside this one")
    parser.add_argument("--multiplier-args", default="", metavar="FLAGS",
                        help="flags this build gets beside the usual ones, e.g. '--fanout-threads 0' (one thread: "
                             "the same instructions whatever the scheduling, to compare builds)")
    parser.add_argument("--baseline-args", default="", metavar="FLAGS",
                        help="flags the baseline gets beside the usual ones, e.g. '--fanout-threads 0' (with "
                             "--baseline the same binary: one build with two settings)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.baseline_args and not args.baseline:
        print("bench: --baseline-args needs --baseline", file=sys.stderr)
        return 1
    if args.baseline and not args.baseline.is_file():
        print(f"bench: --baseline {args.baseline}: no such file", file=sys.stderr)
        return 1
    if not all(Path(m).exists() for m in LUA_MODULES):
        print("bench: libnginx-mod-http-lua is not installed (./spe setup)", file=sys.stderr)
        return 1
    tools = ("wrk", "nginx", "taskset", "strace", "valgrind", "callgrind_annotate", "callgrind_control")
    return run_main("cpu", tools, lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    write_objects(workdir / "www", {"1k": 1024})
    origin_ports = [free_port() for _ in range(1 + FANOUT)]
    script = workdir / "absolute.lua"  # the Multiplier is a forward proxy: absolute-form targets
    script.write_text(f'wrk.path = "http://127.0.0.1:{origin_ports[0]}/1k"\n')
    builds = {"Multiplier": MULTIPLIER} | ({"Multiplier (baseline)": args.baseline.resolve()} if args.baseline else {})
    flags = {"Multiplier": tuple(shlex.split(args.multiplier_args)),
             "Multiplier (baseline)": tuple(shlex.split(args.baseline_args))}
    with ProcessGroup(workdir) as group:
        origin = start_file_server(group, "origin", workdir / "www", origin_ports).pid
        servers: dict[str, tuple[int, str, Path | None]] = {}
        for i, binary in enumerate(builds.values()):
            port = free_port()
            pid = start_mult(group, f"multiplier{i}", port, origin_ports, log_path(workdir, f"mult{i}"), [], binary,
                             flags=flags.get(list(builds)[i], ()))
            servers[list(builds)[i]] = (pid, f"http://127.0.0.1:{port}/1k", script)
        lua_port = free_port()
        servers["nginx Lua"] = (start_lua(group, "lua", lua_port, origin_ports, []), f"http://127.0.0.1:{lua_port}/1k",
                                None)
        for _pid, url, s in servers.values():  # warm-up: keep-alive pools, Lua code
            run_wrk(url, s, 1, 10, workdir)
        times = measure_times(args, servers, origin, workdir)
        traces = {name: trace_syscalls(serving_pid(pid), url, s, args.trace_seconds, workdir, f"s{i}",
                                       log_path(workdir, f"mult{i}") if s else None)
                  for i, (name, (pid, url, s)) in enumerate(servers.items())}
        check_alive(group)

        counts = {}
        for i, (name, binary) in enumerate(builds.items()):
            port, log, extra = free_port(), log_path(workdir, f"mult{i}-callgrind"), flags.get(name, ())
            counts[name] = callgrind(
                group, f"multiplier{i}",
                lambda w, tag=f"multiplier{i}-callgrind", port=port, log=log, binary=binary, extra=extra: start_mult(
                    group, tag, port, origin_ports, log, w, binary, deadline_s=120, flags=extra),
                f"http://127.0.0.1:{port}/1k", script, args.callgrind_seconds, workdir, lambda log=log: lines_in(log))
            # the records counted are the log's last ones (but for the few written after the dump)
            records, legs = records_and_legs(log, max(lines_in(log) - counts[name]["requests"], 0))
            counts[name]["legs_sent"] = legs / max(records, 1)
        port = free_port()
        counts["nginx Lua"] = callgrind(
            group, "lua", lambda w: start_lua(group, "lua-callgrind", port, origin_ports, w, 120),
            f"http://127.0.0.1:{port}/1k", None, args.callgrind_seconds, workdir)
        group.stop_all()
    return publish(report(args, times, traces, counts), problems(times), title=TITLE, write=args.write_docs)


def problems(times: list[dict]) -> list[str]:
    return sorted({f"{r['server']}: wrk reported {r['errors']}" for r in times if r["errors"]})


def report(args: argparse.Namespace, times: list[dict], traces: dict, counts: dict) -> str:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    med = {name: {k: median(r[k] for r in times if r["server"] == name)
                  for k in ("rps", "user_us", "sys_us", "origin_us", "foreign")} for name in traces}
    lines = [f"\n## {TITLE} — {now}\n",
             f"Machine: {machine()}. Command: `{command_line('cpu_breakdown')}`.\n",
             f"Set-up as in `throughput`: wrk -t1 -c10 on CPU{LOAD_CPU}; on CPU{SERVER_CPU} nginx serving /1k on 5 "
             "ports (the reference upstream and 4 stand-in proxies), the Multiplier (release build, sequential "
             "mode, JSON log) and nginx + Lua (`capture_multi` over keep-alive, `ngx.md5` of every body). "
             "Both do the same exchange per client request: read the request, send 5 requests upstream, read 5 "
             "replies, hash 5 bodies, answer the client; the Multiplier also compares headers and writes a "
             "JSON record.\n",
             f"### 1. User and kernel CPU per client request ({args.rounds} × {args.seconds:g} s, medians)\n",
             "| server | req/s | user µs/req | kernel µs/req | total µs/req | origin µs per client req "
             "| foreign CPU-s/run |", "|---|---|---|---|---|---|---|"]
    for name, m in med.items():
        lines.append(f"| {name} | {m['rps']:.0f} | {m['user_us']:.1f} | {m['sys_us']:.1f} | "
                     f"{m['user_us'] + m['sys_us']:.1f} | {m['origin_us']:.1f} | {m['foreign']:.2f} |")
    lines += [f"\n### 2. System calls per client request (strace -c, {args.trace_seconds:g} s of load)\n"]
    names = sorted({c for t in traces.values() for c in t["calls"]},
                   key=lambda c: -max(t["calls"].get(c, 0) / t["requests"] for t in traces.values()))
    lines += ["| system call | " + " | ".join(traces) + " |", "|---|" + "---|" * len(traces)]
    for c in names:
        per = [t["calls"].get(c, 0) / max(t["requests"], 1) for t in traces.values()]
        if max(per) >= 0.01:
            lines.append(f"| {c} | " + " | ".join(f"{p:.2f}" for p in per) + " |")
    totals = {name: sum(t["calls"].values()) / max(t["requests"], 1) for name, t in traces.items()}
    lines.append("| **all** | " + " | ".join(f"**{v:.1f}**" for v in totals.values()) + " |")
    sent = [f"{name} {t['legs_sent']:.2f}" for name, t in traces.items() if t["legs_sent"] is not None]
    lines.append(f"\nThe Multiplier's requests are its records. strace slows its fan-out thread so far behind the "
                 "client that some legs are not sent (`busy`, never without strace): proxy legs sent per record "
                 f"while traced: {', '.join(sent)} of {FANOUT}. Each sent leg is a `sendmsg` and one or two "
                 "`recvfrom`; the calls of a whole request are the client's share plus the legs' share times "
                 f"{FANOUT} / the legs sent.")
    lines += [f"\n### 3. User-space instructions per client request (callgrind, {args.callgrind_seconds:g} s "
              "of load after a 3 s warm-up)\n",
              "| server | requests counted | proxy legs sent per request | instructions per request |",
              "|---|---|---|---|"]
    for name, c in counts.items():
        legs = f"{c['legs_sent']:.2f}" if "legs_sent" in c else str(FANOUT)
        lines.append(f"| {name} | {c['requests']} | {legs} | {c['total'] / c['requests']:,.0f} |")
    builds = [name for name in counts if name.startswith("Multiplier")]
    parts = {name: by_component(counts[name]["rows"]) for name in builds}
    lines += ["\nThe Multiplier's instructions per request by component (share of its total):\n",
              "| component | " + " | ".join(builds) + " |", "|---|" + "---|" * len(builds)]
    for component_name in parts["Multiplier"] | {k: 0 for p in parts.values() for k in p}:
        cells = [f"{parts[b].get(component_name, 0) / counts[b]['requests']:,.0f} "
                 f"({parts[b].get(component_name, 0) / max(counts[b]['total'], 1):.0%})" for b in builds]
        lines.append(f"| {component_name} | " + " | ".join(cells) + " |")
    lines.append("\n" + budget(med))
    return "\n".join(lines) + "\n"


def budget(med: dict) -> str:
    """What the targets ask of the Multiplier's CPU, set against the kernel's share of it."""
    m, lua = med["Multiplier"], med["nginx Lua"]
    mult_total, lua_total = m["user_us"] + m["sys_us"], lua["user_us"] + lua["sys_us"]
    # On the shared core, throughput ~ 1 / (server + origin CPU per client request).
    needed = (lua_total + lua["origin_us"]) / TARGET_VS_LUA - m["origin_us"]
    return (f"What limits it: per client request the Multiplier used {mult_total:.1f} µs of CPU "
            f"({m['user_us']:.1f} user, {m['sys_us']:.1f} kernel), nginx Lua {lua_total:.1f} µs "
            f"({lua['user_us']:.1f} user, {lua['sys_us']:.1f} kernel). The target of {TARGET_CPU_US:g} µs "
            f"{'is met' if mult_total <= TARGET_CPU_US else 'is NOT met'}. For {TARGET_VS_LUA:g}× the Lua "
            f"fan-out's requests per second on the shared core, the Multiplier plus the origin could use at most "
            f"({lua_total:.1f} + {lua['origin_us']:.1f}) / {TARGET_VS_LUA:g} µs per client request, which leaves "
            f"the Multiplier {needed:.1f} µs; its kernel time alone is {m['sys_us']:.1f} µs.")


if __name__ == "__main__":
    sys.exit(main())
