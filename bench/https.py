"""HTTPS interception: the Multiplier at 4-way fan-out over kept-alive HTTPS client connections beside
the same run over plain HTTP, new TLS connections per second, the cost of a first connection to a new
host (a leaf certificate made), and Debian's mitmproxy 8.1.1 (mitmdump, regular proxy mode, no addons,
no fan-out) on the same machine and origin, in interleaved rounds.

Set-up (127.0.0.1 only, free ports, every process stopped by PID; servers on CPU1, the client on CPU0):
  nginx    serves /1k (1024 B) on 5 plain ports (the Multiplier's Collector and its 4 proxies under
           test: the stand-ins of `throughput`, so the figure is the Multiplier's own) and on one TLS
           port with a certificate from a test CA (mitmproxy's upstream, verified)
  mult     the release Multiplier, --intercept-tls with a CA made for the run, 4 proxies, JSON log
  mitm     mitmdump --mode regular, trusting the test CA for its upstream, its own CA for clients
  client   bench/tls_load (spe-tls-load): closed-loop connections, CONNECT + TLS (SNI, verified),
           GET /1k back to back; --plain for the HTTP figure; --new-connection for a CONNECT and a
           full handshake (no resumption) per request

Scenarios per round (order rotates): mult-https and mult-http (--connections C), mitm-https (C),
mult-new and mitm-new (--new-connection, C), mult-one and mitm-one (one kept-alive connection: the
median per request). Then once: mult-new-1 (one connection, a new connection per request, the same
host: its leaf is cached) beside mult-newhost-1 (each connection names a new host: a leaf is made).
Targets: HTTPS ≥ 80 % of plain HTTP req/s at 4-way; ≥ 5× mitmproxy's kept-alive req/s and
≥ 5× its new connections/s; a lower median than mitmproxy's on one kept-alive connection.

Run: ./spe bench https [--rounds 3] [--seconds 8] [--connections 10] [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, BenchError, run_main
from bench.lib.meters import cpu_seconds
from bench.lib.servers import check_alive, numbered, start_multiplier, start_nginx, start_server, wait_port
from spe_tools import ca as spe_ca
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port, process_tree
from spe_tools.summary_stats import median

TITLE = "HTTPS interception at 4-way fan-out, 1 KB"
CLIENT = ROOT / "build/release/bench/tls_load/spe-tls-load"
PROXIES = 4
TARGET_VS_HTTP, TARGET_VS_MITM = 0.80, 5.0
ROUND_SCENARIOS = ("mult-https", "mult-http", "mitm-https", "mult-new", "mitm-new", "mult-one", "mitm-one")

ORIGIN = """\
    default_type application/octet-stream;
{{servers}}
"""


def origin_servers(www: Path, plain: list[int], tls_port: int, cert: Path, key: Path) -> str:
    lines = [f"    server {{ listen 127.0.0.1:{p} backlog=4096; root {www}; location / {{ }} }}" for p in plain]
    lines.append(f"    server {{ listen 127.0.0.1:{tls_port} ssl backlog=4096; ssl_certificate {cert}; "
                 f"ssl_certificate_key {key}; ssl_protocols TLSv1.2 TLSv1.3; root {www}; location / {{ }} }}")
    return "\n".join(lines) + "\n"


def client(args: argparse.Namespace, proxy: int, target: str, cafile: Path | None, *extra: str,
           seconds: float | None = None, connections: int | None = None) -> dict:
    argv = ["taskset", "-c", str(LOAD_CPU), str(CLIENT), "--proxy", f"127.0.0.1:{proxy}", "--target", target,
            "--path", "/1k", "--seconds", f"{seconds or args.seconds:g}",
            "--connections", str(connections or args.connections), *extra]
    if cafile is not None:
        argv += ["--cafile", str(cafile)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=(seconds or args.seconds) + 60)
    if out.returncode != 0 and not out.stdout:
        raise BenchError(f"spe-tls-load failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def scenario_argv(name: str, ports: dict, cas: dict) -> tuple[int, str, Path | None, tuple[str, ...], int | None]:
    """(proxy port, target, CA file, extra flags, connections override) of a round's scenario."""
    https_target = f"localhost:{ports['origin_tls']}"
    server = "mult" if name.startswith("mult") else "mitm"
    proxy, ca = ports[server], cas[server]
    if name == "mult-http":
        return proxy, f"localhost:{ports['origin'][0]}", None, ("--plain",), None
    if name.endswith("-new"):
        return proxy, https_target, ca, ("--new-connection",), None
    if name.endswith("-one"):
        return proxy, https_target, ca, (), 1
    return proxy, https_target, ca, (), None


def per_round_ratio(runs: list[dict], a: str, b: str) -> float:
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["scenario"]] = r["rps"]
    ratios = [v[a] / v[b] for v in by_round.values() if a in v and b in v and v[b] > 0]
    return median(ratios) if ratios else float("nan")


def rows(runs: list[dict]) -> dict[str, dict]:
    out = {}
    for name in dict.fromkeys(r["scenario"] for r in runs):
        mine = [r for r in runs if r["scenario"] == name]
        out[name] = {"runs": len(mine), "rps": median(r["rps"] for r in mine),
                     "rps_min": min(r["rps"] for r in mine), "rps_max": max(r["rps"] for r in mine),
                     "p50": median(r["p50_us"] for r in mine), "p99": median(r["p99_us"] for r in mine),
                     "cpu": median(r["cpu_us"] for r in mine), "errors": sum(r["errors"] for r in mine),
                     "requests": sum(r["requests"] for r in mine)}
    return out


LABELS = {
    "mult-https": "Multiplier, 4-way, kept-alive HTTPS (intercepted)",
    "mult-http": "Multiplier, 4-way, kept-alive plain HTTP",
    "mitm-https": "mitmdump 8.1.1, kept-alive HTTPS, no fan-out",
    "mult-new": "Multiplier, 4-way, new CONNECT + handshake per request",
    "mitm-new": "mitmdump, new CONNECT + handshake per request",
    "mult-one": "Multiplier, 4-way, one kept-alive HTTPS connection",
    "mitm-one": "mitmdump, one kept-alive HTTPS connection",
    "mult-new-1": "Multiplier, one client, new connection per request, cached leaf",
    "mult-newhost-1": "Multiplier, one client, new connection per request, a new host each (leaf made)",
}


def report(args: argparse.Namespace, runs: list[dict], checks: list[str]) -> tuple[str, list[str]]:
    table = rows(runs)
    lines = [f"## {TITLE} — {datetime.datetime.now():%Y-%m-%d %H:%M}", "",
             f"Command: `{command_line('https')}` on {machine()}. Client: `spe-tls-load` (bench/tls_load), "
             f"{args.connections} closed-loop connections unless the row says one, pinned to CPU{LOAD_CPU}; "
             f"every server on CPU{SERVER_CPU}. Objects: 1 KB from nginx; the Multiplier's Collector and its "
             "4 proxies are nginx stand-ins (as in `throughput`), mitmproxy fetches from nginx over TLS. "
             f"{args.rounds} interleaved rounds of {args.seconds:g} s; medians over rounds.", "",
             "| scenario | runs | req/s (min–max) | p50 µs | p99 µs | server CPU µs/req | errors |",
             "|---|---|---|---|---|---|---|"]
    for name, row in table.items():
        lines.append(f"| {LABELS[name]} | {row['runs']} | {row['rps']:.0f} ({row['rps_min']:.0f}–{row['rps_max']:.0f})"
                     f" | {row['p50']:.0f} | {row['p99']:.0f} | {row['cpu']:.1f} | {row['errors']} |")
    vs_http = per_round_ratio(runs, "mult-https", "mult-http")
    vs_mitm = per_round_ratio(runs, "mult-https", "mitm-https")
    new_vs_mitm = per_round_ratio(runs, "mult-new", "mitm-new")
    one = table["mult-one"]["p50"], table["mitm-one"]["p50"]
    leaf_cost = table["mult-newhost-1"]["p50"] - table["mult-new-1"]["p50"]
    problems = [f"{name}: {row['errors']} errors" for name, row in table.items() if row["errors"]]
    verdict = [
        f"- HTTPS / plain HTTP req/s at 4-way: **{vs_http:.2f}×** (target ≥ {TARGET_VS_HTTP:.2f}: "
        f"{'met' if vs_http >= TARGET_VS_HTTP else 'NOT met'}).",
        f"- Multiplier at 4-way / mitmproxy, kept-alive HTTPS req/s: **{vs_mitm:.1f}×** (target ≥ {TARGET_VS_MITM:g}: "
        f"{'met' if vs_mitm >= TARGET_VS_MITM else 'NOT met'}).",
        f"- New connections per second, Multiplier / mitmproxy: **{new_vs_mitm:.1f}×** (target ≥ {TARGET_VS_MITM:g}: "
        f"{'met' if new_vs_mitm >= TARGET_VS_MITM else 'NOT met'}).",
        f"- Median per request on one kept-alive connection: Multiplier (4-way) **{one[0]:.0f} µs**, mitmproxy "
        f"**{one[1]:.0f} µs** (target: lower: {'met' if one[0] < one[1] else 'NOT met'}).",
        f"- A first connection to a new host (a leaf certificate made and signed) costs **{leaf_cost:+.0f} µs** "
        f"at the median over one to a host whose leaf is cached "
        f"({table['mult-new-1']['p50']:.0f} → {table['mult-newhost-1']['p50']:.0f} µs per connection and request).",
    ]
    lines += ["", "What it says:", "", *verdict, "", "Checks:", "", *(f"- {c}" for c in checks), ""]
    return "\n".join(lines), problems


def records_check(log: Path) -> str:
    records = intercepted = ok = total = 0
    with open(log) as f:
        for line in f:
            rec = json.loads(line)
            if rec["method"] != "GET":
                continue
            records += 1
            intercepted += bool(rec.get("intercepted"))
            total += len(rec["proxies"])
            ok += sum(p["result"] == "OK" for p in rec["proxies"])
    return (f"Multiplier log: {records} GET records, {intercepted} intercepted (https), proxy results OK: "
            f"{ok} of {total}")


def run(args: argparse.Namespace, workdir: Path) -> int:
    www = workdir / "www"
    www.mkdir()
    www.chmod(0o755)
    (www / "1k").write_bytes(bytes((i * 7) % 256 for i in range(1024)))
    (www / "1k").chmod(0o644)
    ports = {"origin": [free_port() for _ in range(1 + PROXIES)], "origin_tls": free_port(), "mult": free_port(),
             "mitm": free_port()}
    with ProcessGroup(workdir) as group:
        cas, pids = start_servers(group, ports)
        for name in ROUND_SCENARIOS:  # warm-up: connection pools, mitmproxy's leaf for localhost
            proxy, target, ca, extra, conns = scenario_argv(name, ports, cas)
            client(args, proxy, target, ca, *extra, seconds=1, connections=conns)
        runs = measure_rounds(args, ports, cas, pids) + new_host_runs(args, ports, cas, pids)
        check_alive(group)
        if not wait_port(ports["mult"], 1):
            raise BenchError("the Multiplier stopped answering")
        group.stop_all()
    text, problems = report(args, runs, [records_check(workdir / "mult.jsonl")])
    return publish(text, problems, title=TITLE, write=args.write_docs)


def start_servers(group: ProcessGroup, ports: dict) -> tuple[dict[str, Path], dict[str, list[int]]]:
    """The origin (plain ports and a TLS one), the intercepting Multiplier and mitmdump: the CA file that
    each proxy's leaf certificates are checked against, and each proxy's processes."""
    workdir = group.workdir
    origin_ca, cert, key = spe_ca.test_origin_tls(workdir / "origin-tls", ["localhost", "127.0.0.1"])
    spe_files, _ = spe_ca.create_spe_ca(workdir / "spe-ca")
    start_nginx(group, "origin", ORIGIN.replace("{{servers}}", origin_servers(
        workdir / "www", ports["origin"], ports["origin_tls"], cert, key)), [*ports["origin"], ports["origin_tls"]])
    mult = start_multiplier(group, "mult", ports["mult"], ports["origin"][0],
                            numbered(ports["origin"][1:]), workdir / "mult.jsonl",
                            extra=("--intercept-tls", "--ca-dir", str(spe_files.directory),
                                   "--connect-port", str(ports["origin_tls"])))
    mitm_conf = workdir / "mitm"
    mitm = start_server(group, "mitm", ["mitmdump", "--mode", "regular", "--listen-host", "127.0.0.1",
                                        "--listen-port", str(ports["mitm"]), "--set", f"confdir={mitm_conf}",
                                        "--set", f"ssl_verify_upstream_trusted_ca={origin_ca}", "-q"],
                        ports["mitm"], deadline_s=30)
    for _ in range(100):  # mitmproxy writes its CA on start
        if (mitm_conf / "mitmproxy-ca-cert.pem").exists():
            break
        time.sleep(0.1)
    cas = {"mult": spe_files.cert, "mitm": mitm_conf / "mitmproxy-ca-cert.pem"}
    return cas, {"mult": process_tree(mult.pid), "mitm": process_tree(mitm.pid)}


def measure_rounds(args: argparse.Namespace, ports: dict, cas: dict[str, Path],
                   pids: dict[str, list[int]]) -> list[dict]:
    """The round scenarios in interleaved rounds, the order rotating: the client's figures and the proxy's CPU
    per request."""
    runs = []
    for rnd in range(args.rounds):
        order = ROUND_SCENARIOS[rnd % len(ROUND_SCENARIOS):] + ROUND_SCENARIOS[:rnd % len(ROUND_SCENARIOS)]
        for name in order:
            proxy, target, ca, extra, conns = scenario_argv(name, ports, cas)
            server = pids["mult" if name.startswith("mult") else "mitm"]
            c0 = cpu_seconds(server)
            result = client(args, proxy, target, ca, *extra, connections=conns)
            cpu = cpu_seconds(server) - c0
            runs.append({**result, "round": rnd, "scenario": name,
                         "cpu_us": cpu / max(result["requests"], 1) * 1e6})
            print(f"round {rnd + 1}/{args.rounds} {name:11s} {result['rps']:8.0f} req/s  "
                  f"p50 {result['p50_us']:6d} µs  {runs[-1]['cpu_us']:7.1f} µs CPU/req  "
                  f"errors {result['errors']}", flush=True)
    return runs


def new_host_runs(args: argparse.Namespace, ports: dict, cas: dict[str, Path],
                  pids: dict[str, list[int]]) -> list[dict]:
    """One client, a new connection per request, through the Multiplier: to one host (its leaf cached) and to a
    new host each time (a leaf made and signed per connection)."""
    runs = []
    https_target = f"localhost:{ports['origin_tls']}"
    for name, extra in (("mult-new-1", ()), ("mult-newhost-1", ("--unique-hosts",))):
        c0 = cpu_seconds(pids["mult"])
        result = client(args, ports["mult"], https_target, cas["mult"], "--new-connection", "--max-requests",
                        str(args.new_hosts), *extra, connections=1, seconds=60)
        runs.append({**result, "round": 0, "scenario": name,
                     "cpu_us": (cpu_seconds(pids["mult"]) - c0) / max(result["requests"], 1) * 1e6})
        print(f"{name:15s} {result['rps']:8.0f} req/s  p50 {result['p50_us']:6d} µs", flush=True)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=parse_duration, default=8)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--new-hosts", type=int, default=100,
                        help="connections in the new-host comparison (at most the leaf burst, 200)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if not CLIENT.exists():
        print(f"bench: {CLIENT} is missing: ./spe build", file=sys.stderr)
        return 1
    return run_main("https", ("nginx", "mitmdump", "taskset"), lambda workdir: run(args, workdir), args.keep)


if __name__ == "__main__":
    sys.exit(main())
