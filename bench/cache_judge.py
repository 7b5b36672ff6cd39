"""What the cache-rule judge costs (judging must not slow the client; target: at most +10 % of
the Multiplier's CPU per request at 4-way fan-out): the same Multiplier binary with the judge and with
`--no-cache-judge`, side by side in interleaved rounds, with a second judging Multiplier of the same binary as a
control (judge / control: what one run's figures move with nothing changed).

Set-up as in `throughput` / `cpu_breakdown` (127.0.0.1 only, every process stopped by PID): one nginx
(one worker) serving /1k on 5 ports, the reference upstream (the Multiplier's Collector) and 4 stand-in
proxies under test; three Multipliers (release build, sequential mode, JSON log, 4 proxies), one judging,
one with --no-cache-judge, one judging as the control (not filled, not under callgrind). wrk -t1 -c10 on
CPU0; every server on CPU1.

The judge only works on replies that carry the Collector's stamps, so every reply carries them, made by
nginx from its own variables (`add_header ... always`):
  reference  X-SPE-Fetch "<id>.<serial>; t=<now>" (a fresh fetch for this request), X-SPE-Reply-To: the
             request's own X-SPE-Request tag, Cache-Control: public, max-age=600, Vary, and nginx's Date,
             ETag and Last-Modified
  proxies    the same headers, but a fetch stamped up to 99 s in the past with a matching Age, X-Cache
             "HIT from ...", and X-SPE-Reply-To: some-old-tag: every leg is judged as a reuse of a stored
             copy (the full rule evaluation)
The reference's every reply has a serial of its own (server, $connection, $connection_requests): a fresh
fetch; a proxy's copy of a URL is the same fetch for 100 s (a serial from the URL and the 100 s), as a
stored copy is in a real run. wrk asks for --urls different URLs (/1k?v=N; every fifth with Vary: Accept-Encoding,
Accept-Language): the judge's tables grow as in a real run, up to their bound of 16384 entries each.

1. CPU per client request (Δ utime+stime of the Multiplier over the client's completed requests), req/s and
   p50/p99, each round with every build, the order turned by one each round; ratios with judge / without, and
   judge / control for the CPU (the resolution of the first ratio). The client is paced
   (--rate, on CPU0) below what either build sustains: back-to-back (wrk, --rate 0) the judging build falls
   behind its proxies' turns, most of its legs are lost as `busy` and go unjudged, and its cost is undercounted.
2. Memory: each Multiplier's RSS after the rounds and after --fill-requests more requests, each for a URL
   not asked for before (/1k?v=fN; 70000 fills every table of the judge to its bound)
   and the difference.
3. Where it goes: both run under callgrind (instructions: repeatable on a busy machine) for
   --callgrind-seconds; instructions per request with and without, and the judge's own functions.

Run: ./spe bench cache_judge [--quick] [--rounds 4] [--seconds 8] [--rate 1500] [--urls 70000]
                             [--fill-requests 70000]
                             [--callgrind-seconds 6] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import sys
from collections import Counter
from pathlib import Path

from bench import command
from bench.lib.callgrind import callgrind, inclusive_rows, split_name
from bench.lib.clients import fixed_rate
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, on_load_cpu, run_main
from bench.lib.logs import lines_in
from bench.lib.meters import busy_seconds, rss_and_peak_kb
from bench.lib.servers import check_alive, log_path, numbered, start_multiplier, start_nginx, write_objects
from bench.lib.wrk import run_wrk
from spe_tools.config_template import render_text
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, cpu_times, free_port
from spe_tools.summary_stats import median, percentile

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Cost of the cache-rule judge"

FANOUT = 4
TARGET_RATIO = 1.10  # the judge may add at most 10 % to the Multiplier's CPU per request
TABLE_BOUND = 16384  # CacheJudge's default capacity per table
COLLECTOR_ID = "65f1a2b3-1c2"
BUILDS = ("judge", "no-judge")  # the first judges, the second runs with --no-cache-judge
# A second judging Multiplier of the same binary, measured in the same rounds: judge / control is what one run's
# figures move with nothing changed, the resolution of the judge / no-judge ratio beside it.
CONTROL = "judge again"
MEASURED = (*BUILDS, CONTROL)


def file_name(build: str) -> str:
    """A build's name in its log's and its process's names."""
    return build.replace(" ", "-")

# nginx's variables, padded so that server + connection + request number is a unique decimal serial.
PAD_MAPS = """\
    map $connection $spe_conn {
{{conn}}
        default "9999999";
    }
    map $connection_requests $spe_req {
{{req}}
        default "999999999";
    }
    # A stored copy: fetched at the start of the current 100 s, as old as Age says.
    map $msec $spe_fetched { "~^(?<spe_s>\\d+)\\d\\d\\.(?<spe_ms>\\d+)$" "${spe_s}00.${spe_ms}"; }
    map $msec $spe_age { "~0(?<spe_a>\\d)\\.\\d+$" "$spe_a"; "~(?<spe_b>\\d\\d)\\.\\d+$" "$spe_b"; }
    # A stored copy is the same fetch every time its URL is asked for within a 100 s (as in a real run, where
    # a proxy reuses a fetch it got once): a serial from the 100 s (eight digits) and the URL, 7<v> (8<v> for
    # the fill phase's /1k?v=f<v>). A new 100 s is a new fetch: the same serial with a new time would be, to
    # the judge, its first fetch served too young (age violations and their evidence, not the case measured).
    map $msec $spe_window { "~^(?<spe_w>\\d+)\\d\\d\\.\\d+$" "$spe_w"; }
    map $arg_v $spe_copy { "~^f(?<spe_f>\\d+)$" "8$spe_f"; "~^(?<spe_v>\\d+)$" "7$spe_v"; default "6"; }
    map $arg_v $spe_vary { "~[05]$" "Accept-Encoding, Accept-Language"; default "Accept-Encoding"; }
    open_file_cache max=64 inactive=600s; open_file_cache_valid 3600s;
    default_type application/octet-stream;
"""

COMMON_HEADERS = """\
            add_header Cache-Control "public, max-age=600" always;
            add_header Vary $spe_vary always;
"""

REFERENCE_HEADERS = """\
            add_header X-SPE-Fetch "{{id}}.{{server}}$spe_conn$spe_req; t=$msec" always;
            add_header X-SPE-Reply-To $http_x_spe_request always;
"""

PROXY_HEADERS = """\
            add_header X-SPE-Fetch "{{id}}.$spe_window$spe_copy; t=$spe_fetched" always;
            add_header X-SPE-Reply-To "some-old-tag" always;
            add_header Age $spe_age always;
            add_header X-Cache "HIT from standin-{{server}}" always;
"""


# ---------------------------------------------------------------- configuration (pure)

def pad_map(width: int) -> str:
    """map entries that left-pad a number of 1..width digits with zeros to `width` digits."""
    return "\n".join(f'        "~^(\\d{{{n}}})$" "{"0" * (width - n)}$1";' for n in range(1, width + 1))


def upstream_servers(ports: list[int], www: Path, legs: str = "reused") -> str:
    """nginx http{} body: ports[0] the reference (a fresh fetch per request), ports[1:] the stand-in
    proxies (legs "reused": every reply a reuse of a stored copy; "mixed": the first half of them reuse,
    the others forward, each with a fetch of its own, as a proxy missing in its cache does), all with
    caching headers and the Collector's stamps."""
    body = render_text(PAD_MAPS, {"conn": pad_map(7), "req": pad_map(9)})
    for server, port in enumerate(ports):
        forwards = server == 0 or (legs == "mixed" and server > (len(ports) - 1) // 2)
        stamps = render_text(REFERENCE_HEADERS if forwards else PROXY_HEADERS,
                             {"id": COLLECTOR_ID, "server": server + 1})
        body += (f"    server {{\n        listen 127.0.0.1:{port} backlog=4096;\n        root {www};\n"
                 f"        location / {{\n{COMMON_HEADERS}{stamps}        }}\n    }}\n")
    return body


# What every request carries, the fields the Vary replies vary on (wrk's and the paced client's alike).
URL_HEADERS = (("Accept-Encoding", "gzip, deflate"), ("Accept-Language", "en-GB, en;q=0.8"))


def wrk_script(reference_port: int, urls: int, prefix: str = "") -> str:
    """wrk Lua: absolute-form GETs (the Multiplier is a forward proxy) of /1k?v=<prefix>0 .. urls-1 in turn
    (one wrk thread: one sequence over all its connections)."""
    return ("local n = -1\n"
            + "".join(f'wrk.headers["{name}"] = "{value}"\n' for name, value in URL_HEADERS)
            + "request = function()\n"
            f"  n = (n + 1) % {urls}\n"
            f'  return wrk.format("GET", "http://127.0.0.1:{reference_port}/1k?v={prefix}" .. n)\n'
            f"end\n")


# ---------------------------------------------------------------- results (pure)

FIGURES = ("cpu_us", "rps", "p50", "p99")


def round_ratios(runs: list[dict], builds: tuple[str, str] = BUILDS) -> dict[str, list[float]]:
    """figure -> [builds[0] / builds[1]] per round (judge / no-judge by default), each pair from the same round."""
    by_round: dict[int, dict[str, dict]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["build"]] = r
    out: dict[str, list[float]] = {f: [] for f in FIGURES}
    for pair in (by_round[k] for k in sorted(by_round)):
        if set(builds) <= set(pair):
            for f in FIGURES:
                base = pair[builds[1]][f]
                out[f].append(pair[builds[0]][f] / base if base else float("nan"))
    return out


def round_order(rnd: int) -> tuple[str, ...]:
    """The builds in the order round `rnd` measures them: turned by one each round, so each takes each place."""
    shift = rnd % len(MEASURED)
    return MEASURED[shift:] + MEASURED[:shift]


# multiplier/src/judge/cache_rules.cpp, http/http_date.cpp (and the flat multiplier/src/ of older builds).
JUDGE_CODE = re.compile(r"multiplier/src/(?:[a-z]+/)?(cache_\w+|fetch_stamp|http_date)\.[ch]pp$")


def judge_functions(rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The rows of callgrind's table that are the judge's own code (multiplier/src/cache_*, fetch_stamp,
    http_date; for inlined code, the file named is where the code came from), most first."""
    return sorted(((cost, where) for cost, where in rows if JUDGE_CODE.search(split_name(where)["file"])),
                  key=lambda row: -row[0])


# The judge's entry points and the helpers that dominate it, for the inclusive table (callgrind counts a
# function with everything it calls).
JUDGE_ENTRY_POINTS = (
    ("CacheJudge::judge (at the end of each fan-out: every verdict)", re.compile(r"^spe::CacheJudge::judge\(")),
    ("↳ judge_reuse (a reused reply: barriers, Age, freshness)", re.compile(r"^spe::CacheJudge::judge_reuse\(")),
    ("↳ judge_candidate (a missed hit? the copy held before)", re.compile(r"^spe::CacheJudge::judge_candidate\(")),
    ("↳ freshness (RFC 9111 4.2, called for each question)", re.compile(r"^spe::freshness\(")),
    ("↳ parse_http_date (Date, Last-Modified, Expires; once per fetch)", re.compile(r"^spe::parse_http_date\(")),
    ("↳ parse_cache_control", re.compile(r"^spe::parse_cache_control\(")),
    ("take_cache_headers (copying the fields off each reply)", re.compile(r"^spe::take_cache_headers\(")),
    ("writing the `cache` objects into the record", re.compile(r"cache_object\(")),
)


def entry_point_costs(rows: list[tuple[int, str]]) -> dict[str, int]:
    """label -> inclusive instructions of the first function each rule matches (rows from
    `callgrind_annotate --inclusive=yes`; a function listed twice, e.g. a clone, counts once)."""
    out = {}
    for label, rule in JUDGE_ENTRY_POINTS:
        costs = [cost for cost, where in rows if rule.search(split_name(where)["function"])]
        out[label] = max(costs, default=0)
    return out


def short_function(where: str) -> str:
    """'file:function [object]' -> 'cache_judge.cpp: spe::CacheJudge::judge(...)' without argument lists."""
    parts = split_name(where)
    function = re.sub(r"\((?:[^()]|\([^()]*\))*\)", "()", parts["function"])
    return f"{Path(parts['file']).name}: {function}"


def log_facts(path: Path, limit: int) -> dict:
    """What the judge saw in the first `limit` records: the Collector's provenance, the proxies' reuse,
    violations by rule, proxy results; and the mean record size (bytes). The records after those are only
    looked through for a violation (`later`, `later_with_violations`): a run's later rounds can meet a case
    its first ones did not."""
    facts: dict = {"records": 0, "bytes": 0, "collector": Counter(), "proxy_reused": Counter(),
                   "violations": Counter(), "results": Counter(), "conservative": Counter(),
                   "later": 0, "later_with_violations": 0}
    with path.open(errors="replace") as f:
        for line in f:
            if facts["records"] >= limit:
                facts["later"] += 1
                facts["later_with_violations"] += '"violations":[{' in line  # as the Multiplier writes one
                continue
            rec = json.loads(line)
            facts["records"] += 1
            facts["bytes"] += len(line)
            judged = [rec.get("collector", {}).get("cache")] + [p.get("cache") for p in rec.get("proxies", [])]
            facts["results"].update(p.get("result") for p in rec.get("proxies", []))
            c = judged[0]
            facts["collector"][c["provenance"] if c else "not judged"] += 1
            for p in judged[1:]:
                facts["proxy_reused"]["not judged" if p is None else "reused" if p.get("reused") else "not reused"] += 1
            for v in judged:
                if v:
                    facts["violations"].update(x["rule"] for x in v.get("violations") or [])
                    if v.get("conservative"):
                        facts["conservative"][v["conservative"]] += 1
    return facts


# ---------------------------------------------------------------- processes

def start_build(group: ProcessGroup, name: str, port: int, upstream_ports: list[int], log: Path,
                judge: bool, wrapper: tuple[str, ...] = (), deadline_s: float = 15) -> int:
    """A Multiplier with upstream_ports[0] as its Collector and the rest as its proxies, judging or not."""
    extra = ("--via-name", f"spe-bench-{port}", *(() if judge else ("--no-cache-judge",)))
    return start_multiplier(group, name, port, upstream_ports[0], numbered(upstream_ports[1:]), log, extra=extra,
                            wrapper=wrapper, deadline_s=deadline_s).pid


def kernel_events(pid: int) -> dict[str, int]:
    """The process's minor page faults and context switches so far (/proc/PID/stat, /proc/PID/status):
    kernel time that is not the system calls' own."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    minflt = int(stat[stat.rindex(")") + 2:].split()[7])  # field 10, counted after "(comm)"
    status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":\t" in line)
    return {"minflt": minflt, "voluntary": int(status["voluntary_ctxt_switches"]),
            "involuntary": int(status["nonvoluntary_ctxt_switches"])}


def paced_load(url: str, reference_port: int, args: argparse.Namespace) -> dict:
    """args.rate requests a second for args.seconds from the fixed-rate client on LOAD_CPU (the URLs and
    headers of wrk_script), as wrk's figures: requests, rps, p50/p99 µs, errors, the client's own CPU-s."""
    port = int(url.split(":")[2].split("/")[0])
    with on_load_cpu():
        c0 = sum(os.times()[:2])
        r = fixed_rate(port, lambda i: f"http://127.0.0.1:{reference_port}/1k?v={i % args.urls}", args.rate,
                       args.seconds, connections=10, headers=URL_HEADERS)
        client_cpu = sum(os.times()[:2]) - c0
    latency = r["latency"]
    bad = sum(n for status, n in r["status"].items() if status != 200)
    late = sum(1 for x in r["late"] if x > 0.01)
    return {"requests": len(latency), "rps": len(latency) / r["elapsed"],
            "p50": (percentile(latency, 0.5) or 0.0) * 1e6, "p99": (percentile(latency, 0.99) or 0.0) * 1e6,
            "errors": (f"{len(r['errors'])} errors, {bad} not 200, {late} sent >10 ms late"
                       if r["errors"] or bad or late else ""), "wrk_cpu": client_cpu}


def measure_rounds(args: argparse.Namespace, mults: dict[str, tuple[int, str]], script: Path,
                   workdir: Path, reference_port: int) -> list[dict]:
    runs = []
    for rnd in range(args.rounds):
        for build in round_order(rnd):
            pid, url = mults[build]
            (u0, s0), b0, k0 = cpu_times([pid]), busy_seconds(), kernel_events(pid)
            result = (paced_load(url, reference_port, args) if args.rate
                      else run_wrk(url, script, args.seconds, 10, workdir, latency=True))
            (u1, s1), b1, k1 = cpu_times([pid]), busy_seconds(), kernel_events(pid)
            n = max(result["requests"], 1)
            cpu = (u1 - u0) + (s1 - s0)
            runs.append({"build": build, "round": rnd, "rps": result["rps"], "requests": result["requests"],
                         "cpu_us": cpu / n * 1e6, "user_us": (u1 - u0) / n * 1e6, "sys_us": (s1 - s0) / n * 1e6,
                         "p50": result["p50"], "p99": result["p99"], "errors": result["errors"],
                         "foreign": (b1 - b0) - cpu - result["wrk_cpu"],
                         **{name: (k1[name] - k0[name]) / n for name in k0}})
            r = runs[-1]
            print(f"round {rnd + 1}/{args.rounds} {build:11s} {r['rps']:7.0f} req/s  {r['cpu_us']:6.1f} µs/req  "
                  f"p50 {r['p50']:7.0f} µs  p99 {r['p99']:7.0f} µs  {r['errors']}  "
                  f"faults/req {r['minflt']:.3f}  switches/req {r['voluntary']:.2f} + {r['involuntary']:.2f}",
                  flush=True)
    return runs


def fill(mults: dict[str, tuple[int, str]], script: Path, requests: int, rps: dict[str, float],
         workdir: Path) -> int:
    """One wrk run on each Multiplier long enough for `requests` requests at the rate it reached in the
    rounds (each to a new URL: the script counts on from 0 within one run); the new URLs the judging one got."""
    sent = {}
    for build in BUILDS:
        seconds = math.ceil(requests / max(rps[build], 1.0) * 1.2) + 2  # wrk takes whole seconds
        done = run_wrk(mults[build][1], script, seconds, 10, workdir)
        sent[build] = min(done["requests"], requests)
        print(f"fill: {build} {done['requests']:,} requests in {seconds:.0f} s {done['errors']}", flush=True)
    return sent["judge"]


def memory(mults: dict[str, tuple[int, str]], logs: dict[str, Path]) -> dict[str, dict]:
    out = {}
    for build, (pid, _url) in mults.items():
        rss, peak = rss_and_peak_kb(pid)
        out[build] = {"rss_kb": rss, "peak_kb": peak, "records": lines_in(logs[build])}
    return out


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="1 round of 3 s, no fill, 3 s of callgrind (while developing)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=parse_duration, default=8, help="wrk run per build and round")
    parser.add_argument("--urls", type=int, default=70000, help="different URLs asked for in turn")
    parser.add_argument("--rate", type=float, default=1500,
                        help="requests/s of the paced client in the measured rounds (default 1500, below what "
                             "either build sustains, so no leg is lost as busy and every one is judged); 0: "
                             "wrk back-to-back (10 connections), as before")
    parser.add_argument("--legs", choices=("reused", "mixed"), default="reused",
                        help="reused (default): every proxy leg is a reuse, the judge's worst case; mixed: half "
                             "the proxies reuse, half forward (a hit ratio of one half)")
    parser.add_argument("--fill-requests", type=int, default=70000,
                        help="requests to new URLs sent to each Multiplier after the rounds, before the second "
                             "memory reading (0: none)")
    parser.add_argument("--callgrind-seconds", type=parse_duration, default=6,
                        help="load while callgrind counts each build (0: no callgrind part)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.fill_requests, args.callgrind_seconds = 1, 3, 0, 3
    tools = ("wrk", "nginx", "taskset") + (("valgrind", "callgrind_annotate", "callgrind_control")
                                           if args.callgrind_seconds else ())
    return run_main("judge", tools, lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    write_objects(workdir / "www", {"1k": 1024})
    upstream_ports = [free_port() for _ in range(1 + FANOUT)]
    script = workdir / "urls.lua"
    script.write_text(wrk_script(upstream_ports[0], args.urls))
    logs = {b: log_path(workdir, f"{file_name(b)}") for b in MEASURED}
    with ProcessGroup(workdir) as group:
        servers = upstream_servers(upstream_ports, workdir / "www", args.legs)
        start_nginx(group, "upstreams", servers, upstream_ports)
        mults = {}
        for build in MEASURED:
            port = free_port()
            pid = start_build(group, file_name(build), port, upstream_ports, logs[build], judge=build != "no-judge")
            mults[build] = (pid, f"http://127.0.0.1:{port}/1k")
        for build in MEASURED:  # warm-up: keep-alive pools, nginx's file cache
            run_wrk(mults[build][1], script, 2, 10, workdir)
        runs = measure_rounds(args, mults, script, workdir, upstream_ports[0])
        check_alive(group)
        mem = {"after the rounds": memory(mults, logs)}
        new_urls = 0
        if args.fill_requests:
            fill_script = workdir / "fill.lua"
            fill_script.write_text(wrk_script(upstream_ports[0], args.fill_requests, prefix="f"))
            rps = {b: median(r["rps"] for r in runs if r["build"] == b) for b in BUILDS}
            new_urls = fill(mults, fill_script, args.fill_requests, rps, workdir)
            filled = {b: mults[b] for b in BUILDS}  # the control is not filled
            mem[f"after {args.fill_requests:,} more requests, each to a new URL"] = memory(filled, logs)
        check_alive(group)
        facts = {b: log_facts(logs[b], 20000) for b in MEASURED}
        counts = {}
        if args.callgrind_seconds:
            # Warmed on other URLs than it is measured on: a stand-in proxy's copy of a URL asked for again
            # after its 100 s window turned carries a new fetch time under the same serial, and the judge,
            # holding the first, finds its Age too low (violations and their evidence, not the case measured).
            warm_script = workdir / "warm.lua"
            warm_script.write_text(wrk_script(upstream_ports[0], args.urls, prefix="f"))
            for build in BUILDS:
                port, log = free_port(), log_path(workdir, f"{build}-callgrind")
                counts[build] = callgrind(
                    group, f"{build}-cg",
                    lambda w, build=build, port=port, log=log: start_build(
                        group, f"{build}-callgrind", port, upstream_ports, log, build == "judge", tuple(w), 120),
                    f"http://127.0.0.1:{port}/1k", script, args.callgrind_seconds, workdir,
                    lambda log=log: lines_in(log), warm_script)
                facts[f"{build}, under callgrind"] = log_facts(log, 20000)
                counts[build]["inclusive"] = inclusive_rows(workdir, f"{build}-cg")
        group.stop_all()
    text = report(args, runs, mem, facts, counts, new_urls)
    return publish(text, problems(runs, facts), title=TITLE, write=args.write_docs)


def problems(runs: list[dict], facts: dict[str, dict]) -> list[str]:
    out = sorted({f"{r['build']}: wrk reported {r['errors']}" for r in runs if r["errors"]})
    judged = facts["judge"]
    if judged["collector"].get("origin", 0) < judged["records"] * 0.9:
        out.append(f"the judge did not take most references as fresh origin fetches: {dict(judged['collector'])}")
    if judged["proxy_reused"].get("reused", 0) < judged["records"] * FANOUT * 0.9:
        out.append(f"the judge did not take most legs as reuses: {dict(judged['proxy_reused'])}")
    for build in MEASURED:
        if facts[build]["violations"]:
            out.append(f"{build}: the judge found violations in the rounds ({dict(facts[build]['violations'])}): "
                       "their evidence is a costlier case than the one measured")
        if facts[build]["later_with_violations"]:
            out.append(f"{build}: {facts[build]['later_with_violations']:,} of the {facts[build]['later']:,} records "
                       "after those checked carry violations: a costlier case than the one measured")
    if facts.get("judge, under callgrind", {}).get("violations"):
        out.append(f"the judge found violations under callgrind, which the rounds had none of: its counts are of "
                   f"another case ({dict(facts['judge, under callgrind']['violations'])})")
    if set(facts["no-judge"]["collector"]) - {"not judged"}:
        out.append("--no-cache-judge still wrote cache verdicts")
    return out


# ---------------------------------------------------------------- report

def report(args: argparse.Namespace, runs: list[dict], mem: dict, facts: dict, counts: dict, new_urls: int) -> str:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"\n## {TITLE} — {now}\n",
             f"Machine: {machine()}. Command: `{command_line('cache_judge')}`.\n",
             f"The same Multiplier binary (release build, sequential mode, JSON log, {FANOUT} proxies) with its "
             "cache-rule judge and with `--no-cache-judge`, and a second judging one as a control "
             f"(`{CONTROL}`: what the figures move with nothing changed), all running, measured in turn in "
             f"interleaved rounds (the order turned by one each round). {load_text(args)} on CPU{LOAD_CPU}, "
             f"asking for {args.urls:,} different URLs "
             f"(`/1k?v=N`) in turn; on CPU{SERVER_CPU} one nginx serving 1 KB on 5 ports (the reference and 4 "
             "stand-in proxies) and the three Multipliers. Every reply carries the Collector's stamps and caching "
             "headers (`X-SPE-Fetch`: a new fetch for each reference reply, one fetch per URL and 100 s for the "
             "proxies' "
             "copies; `X-SPE-Reply-To`, Cache-Control "
             "`public, max-age=600`, Vary, ETag, Last-Modified, Date; the proxies also Age and X-Cache): the "
             "reference is a fresh origin fetch, every proxy's reply a reuse of a stored copy fetched up to 99 s "
             "before (`X-SPE-Reply-To: some-old-tag`), so every leg gets the full rule evaluation, and the "
             "judge's fetch table gains 1 or 2 entries per request. CPU µs/req = Δ(utime+stime) of the Multiplier over "
             "the client's completed requests; p50/p99 are the client's"
             + (" (10 connections back-to-back: mostly queueing).\n" if not args.rate else
                ": paced below what either build sustains, so that no leg is lost as `busy` and every leg is judged "
                "(back-to-back, the judging build fell behind its proxies' turns and most of its legs went "
                "unjudged: the judge's cost was undercounted). The table-filling requests (2.) and callgrind's "
                "load (3.) are wrk's, back-to-back.\n")]
    lines += rounds_section(args, runs) + memory_section(args, runs, mem, new_urls)
    lines += instructions_section(args, counts) if counts else []
    lines += checks_section(facts)
    return "\n".join(lines) + "\n"


def load_text(args: argparse.Namespace) -> str:
    if args.rate:
        return f"A paced client at {args.rate:,.0f} requests/s on 10 persistent connections (asyncio, in the bench)"
    return "wrk -t1 -c10"


def rounds_section(args: argparse.Namespace, runs: list[dict]) -> list[str]:
    """1: CPU per request, req/s and latency of each run and build, the ratios per round and the target."""
    ratios = round_ratios(runs)
    control = round_ratios(runs, ("judge", CONTROL))["cpu_us"]
    med = {b: {f: median(r[f] for r in runs if r["build"] == b) for f in (*FIGURES, "user_us", "sys_us", "foreign")}
           for b in MEASURED}
    cpu_ratio = median(ratios["cpu_us"])
    lines = [f"### 1. CPU per client request, throughput and latency ({args.rounds} × {args.seconds:g} s per build)\n",
             "| round | build | req/s | CPU µs/req (user + kernel) | p50 µs | p99 µs | foreign CPU-s/run "
             "| page faults/req | context switches/req (voluntary + involuntary) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['round'] + 1} | {r['build']} | {r['rps']:.0f} | {r['cpu_us']:.1f} ({r['user_us']:.1f} "
                     f"+ {r['sys_us']:.1f}) | {r['p50']:.0f} | {r['p99']:.0f} | {r['foreign']:.2f} "
                     f"| {r['minflt']:.3f} | {r['voluntary']:.2f} + {r['involuntary']:.2f} |")
    for b in MEASURED:
        m = med[b]
        lines.append(f"| **median** | **{b}** | **{m['rps']:.0f}** | **{m['cpu_us']:.1f}** ({m['user_us']:.1f} + "
                     f"{m['sys_us']:.1f}) | **{m['p50']:.0f}** | **{m['p99']:.0f}** | {m['foreign']:.2f} | | |")
    lines += ["", "With judge / without, per round (pairs from the same round) and their median:\n",
              "| figure | per round | median |", "|---|---|---|"]
    names = {"cpu_us": "CPU per request", "rps": "requests/s", "p50": "p50 latency", "p99": "p99 latency"}
    for f in FIGURES:
        lines.append(f"| {names[f]} | {', '.join(f'{x:.3f}' for x in ratios[f])} | **{median(ratios[f]):.3f}** |")
    lines.append(f"| CPU per request, judge / {CONTROL} (the same binary, judging: nothing changed) | "
                 f"{', '.join(f'{x:.3f}' for x in control)} | **{median(control):.3f}** |")
    spread = max(abs(x - 1) for x in control) if control else float("nan")
    lines.append(f"\nThe resolution of one run: the judging build against itself moved by up to {spread:.1%} in a "
                 f"round and by {median(control) - 1:+.1%} in the median (the row above); the judge's ratio is "
                 "read against that.")
    verdict = "met" if cpu_ratio <= TARGET_RATIO else "NOT met"
    lines.append(f"\nTarget: the judge adds at most {TARGET_RATIO - 1:.0%} to the Multiplier's CPU per "
                 f"request: **{cpu_ratio - 1:+.1%}** (median of the per-round ratios), **{verdict}**.\n")
    return lines


def memory_section(args: argparse.Namespace, runs: list[dict], mem: dict, new_urls: int) -> list[str]:
    """2: each build's RSS after the rounds (and after the fill), and what the judge's tables then hold."""
    lines = ["### 2. Memory\n", "| when | build | records logged | RSS MB | peak RSS MB |", "|---|---|---|---|---|"]
    for when, per_build in mem.items():
        for b, m in per_build.items():
            lines.append(f"| {when} | {b} | {m['records']:,} | {m['rss_kb'] / 1024:.1f} | {m['peak_kb'] / 1024:.1f} |")
    distinct_urls = min(args.urls, max(r["requests"] for r in runs)) + new_urls
    lines.append("\n" + memory_summary(mem, distinct_urls))
    return lines


def instructions_section(args: argparse.Namespace, counts: dict) -> list[str]:
    """3: instructions per request under callgrind, with and without the judge, and the judge's functions."""
    lines = [f"\n### 3. Instructions per client request (callgrind, {args.callgrind_seconds:g} s of load after "
              "a 3 s warm-up, a fresh Multiplier each; its tables are then not yet full, so evictions, and "
              "the cache misses of tables larger than the CPU's caches, are not in these counts)\n",
              "| build | requests counted | instructions per request | of which the judge's own code |",
              "|---|---|---|---|"]
    for b, c in counts.items():
        own = sum(cost for cost, _ in judge_functions(c["rows"]))
        lines.append(f"| {b} | {c['requests']} | {c['total'] / c['requests']:,.0f} | "
                     f"{own / c['requests']:,.0f} |")
    j, n = counts["judge"], counts["no-judge"]
    lines.append(f"\nWith judge / without: **{(j['total'] / j['requests']) / (n['total'] / n['requests']):.3f}** "
                 "in instructions. The judge's own functions (self cost, multiplier/src/cache_*, fetch_stamp, "
                 "http_date; the rest of the difference is in the allocator, the C++ library, formatting and "
                 "writing the bigger records):\n")
    lines += ["| function | instructions per request |", "|---|---|"]
    for cost, where in judge_functions(j["rows"])[:12]:
        lines.append(f"| `{short_function(where)}` | {cost / j['requests']:,.0f} |")
    lines += ["\nThe judge's entry points with everything they call (inclusive; ↳: called within "
              "CacheJudge::judge, part of its figure, and overlapping one another), per client request and as "
              "a share of the judging build's instructions:\n",
              "| function | instructions per request | share |", "|---|---|---|"]
    for label, cost in entry_point_costs(j["inclusive"]).items():
        lines.append(f"| {label} | {cost / j['requests']:,.0f} | {cost / max(j['total'], 1):.1%} |")
    return lines


def checks_section(facts: dict) -> list[str]:
    """What each build's first records show the judge saw."""
    lines = ["\n### Checks\n"]
    for b, f in facts.items():
        n = max(f["records"], 1)
        lines.append(f"- {b}: first {f['records']:,} records, mean {f['bytes'] / n:,.0f} bytes each; Collector "
                     f"verdicts {dict(f['collector'])}; proxy legs {dict(f['proxy_reused'])}; proxy results "
                     f"{dict(f['results'])}; violations {dict(f['violations']) or 'none'}; missed hits "
                     f"{dict(f['conservative']) or 'none'}; the {f['later']:,} records after them: "
                     f"{f['later_with_violations']:,} with violations")
    return lines


def memory_summary(mem: dict, distinct_urls: int) -> str:
    """The judge's memory: the difference between the builds, per fetch remembered."""
    last = list(mem.values())[-1]
    j, n = last["judge"], last["no-judge"]
    extra_mb = (j["rss_kb"] - n["rss_kb"]) / 1024
    entries = table_entries(j["records"], distinct_urls)
    return (f"The judge's RSS above the build without it: **{extra_mb:+.1f} MB** after {j['records']:,} records: "
            f"its tables then hold {entries['fetches']:,} fetches (a new one per request, one per URL for the "
            f"proxies' copies), "
            f"{entries['urls']:,} URLs for each of the {1 + FANOUT} caches (the Collector and each proxy) and "
            f"{entries['deliveries']:,} deliveries of the Collector's, each table bounded at {TABLE_BOUND:,} "
            f"({entries['fetches'] + entries['urls'] * (1 + FANOUT) + entries['deliveries']:,} entries in all).")


def table_entries(records: int, distinct_urls: int) -> dict[str, int]:
    """How full the judge's tables are after `records` requests of this benchmark to `distinct_urls` URLs
    (the Collector's every reply a new fetch, the proxies' copies one fetch per URL and 100 s): fetches, URLs per
    cache, the Collector's deliveries (a proxy delivers nothing: it never passes a fetch on here)."""
    return {"fetches": min(TABLE_BOUND, records + min(records, distinct_urls)),
            "urls": min(TABLE_BOUND, records, distinct_urls),
            "deliveries": min(TABLE_BOUND, records)}


if __name__ == "__main__":
    sys.exit(main())
