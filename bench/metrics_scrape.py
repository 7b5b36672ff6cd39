"""What /metrics costs: the Multiplier at 4-way fan-out under full load, with --metrics-listen and a scraper
asking GET /metrics every second, against the same binary without it (target: under 2 % fewer req/s).

Set-up (127.0.0.1 only, free ports, every process stopped by PID; placement as in `throughput`: wrk -t1 on
CPU0, every server on CPU1): one nginx serving /1k (1024 B) on 5 ports, the Collector stand-in and 4 proxies
under test; two Multipliers (release build, sequential mode, JSON log, the judge on), `plain` without
--metrics-listen and `scraped` with it, each in its own rounds. During each of `scraped`'s rounds a thread of
this process scrapes it every second (Prometheus's default interval is 60 s; 1 s is the worst case asked).
Rounds are interleaved, the order alternating. Per round: wrk's client req/s, and the fully measured
requests per second (records whose every proxy leg is OK, from the Multiplier's own log: at saturating load
a leg can be `busy`, and a Multiplier that measured less would look as fast to the client). The verdict is
the median over rounds of the per-round ratio scraped / plain, for both.

Then, since time on a shared machine is noisy, instructions: each Multiplier started again under valgrind's
callgrind (repeatable on a busy machine), --callgrind-seconds of load, instructions of every thread per
record written (the writer thread's counters and the listener's scrapes included). Under callgrind the
scraper still asks every second of wall time, while the Multiplier serves a small fraction of its usual
rate: far more scrapes per request than at full load (the count is reported), so the ratio is an upper bound.

Run: ./spe bench metrics_scrape [--rounds 6] [--seconds 8] [--connections 10] [--callgrind-seconds 10]
                                [--write-docs] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import sys
import threading
import time
from pathlib import Path

from bench import command
from bench.lib.callgrind import callgrind, inclusive_rows
from bench.lib.doc import add_write_docs, command_line, machine, publish
from bench.lib.harness import LOAD_CPU, SERVER_CPU, run_main
from bench.lib.meters import busy_seconds, cpu_seconds
from bench.lib.servers import check_alive, log_path, numbered, start_file_server, start_multiplier, write_objects
from bench.lib.wrk import run_wrk
from spe_tools.duration import parse_duration
from spe_tools.process import ProcessGroup, free_port, process_tree
from spe_tools.summary_stats import median

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "What /metrics costs, 4-way, scraped every second"

PROXIES = 4
TARGET = 0.98  # scraped / plain: under 2 % fewer requests per second
SCENARIOS = ("plain", "scraped")


# ---------------------------------------------------------------- measuring (pure parts)

def round_ratios(runs: list[dict], key: str) -> list[float]:
    """scraped / plain for `key`, one per round (each pair from the same round)."""
    by_round: dict[int, dict[str, float]] = {}
    for r in runs:
        by_round.setdefault(r["round"], {})[r["scenario"]] = r[key]
    return [v["scraped"] / v["plain"] for v in by_round.values() if v.get("plain") and "scraped" in v]


def median_ratio(runs: list[dict], key: str) -> float:
    """Median over rounds of scraped / plain for `key`."""
    ratios = round_ratios(runs, key)
    return median(ratios) if ratios else float("nan")


def spread(runs: list[dict], key: str) -> str:
    ratios = round_ratios(runs, key)
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "-"


def fully_measured(lines: list[str], proxies: int) -> int:
    """Records whose every proxy leg is OK (none busy, none failed)."""
    count = 0
    for line in lines:
        legs = json.loads(line)["proxies"]
        count += len(legs) == proxies and all(p["result"] == "OK" for p in legs)
    return count


class LogTail:
    """The complete lines a log gained since the last call."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def new_lines(self) -> list[str]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return data[:end].decode().splitlines()


class Scraper:
    """GET /metrics every `every_s` on a thread of its own, while running; times and sizes kept."""

    def __init__(self, port: int, every_s: float = 1.0):
        self.port, self.every_s = port, every_s
        self.times_ms: list[float] = []
        self.sizes: list[int] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def scrape(self) -> str:
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise OSError(f"status {response.status}")
        finally:
            conn.close()
        self.times_ms.append((time.monotonic() - started) * 1e3)
        self.sizes.append(len(body))
        return body.decode()

    def _run(self) -> None:
        # The scraper is load: on the load's CPU, as wrk, never beside the Multiplier on the servers' CPU.
        os.sched_setaffinity(threading.get_native_id(), {LOAD_CPU})
        while not self._stop.wait(self.every_s):
            try:
                self.scrape()
            except OSError as e:
                self.failures.append(str(e))

    def __enter__(self) -> Scraper:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=15)


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=parse_duration, default=8)
    parser.add_argument("--connections", type=int, default=10, help="wrk -c (default 10, as `throughput`)")
    parser.add_argument("--callgrind-seconds", type=parse_duration, default=10,
                        help="load while callgrind counts each Multiplier (0: no callgrind part)")
    add_write_docs(parser)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    tools = ("wrk", "nginx", "taskset") + (("valgrind", "callgrind_annotate", "callgrind_control")
                                           if args.callgrind_seconds else ())
    return run_main("metrics_scrape", tools, lambda workdir: run(args, workdir), args.keep)


def run(args: argparse.Namespace, workdir: Path) -> int:
    write_objects(workdir / "www", {"1k": 1024})
    origin_ports = [free_port() for _ in range(1 + PROXIES)]
    ports = {name: free_port() for name in SCENARIOS}
    metrics_port = free_port()
    script = workdir / "absolute.lua"  # the Multiplier is a forward proxy: absolute-form targets
    script.write_text(f'wrk.path = "http://127.0.0.1:{origin_ports[0]}/1k"\n')
    with ProcessGroup(workdir) as group:
        start_file_server(group, "origin", workdir / "www", origin_ports)
        servers = {}
        for name in SCENARIOS:
            extra = ("--metrics-listen", f"127.0.0.1:{metrics_port}") if name == "scraped" else ()
            servers[name] = start_multiplier(group, name, ports[name], origin_ports[0], numbered(origin_ports[1:]),
                                             log_path(workdir, f"{name}"), extra=extra).pid
        scraper = Scraper(metrics_port)
        tails = {name: LogTail(log_path(workdir, f"{name}")) for name in SCENARIOS}
        for name in SCENARIOS:  # warm-up: upstream keep-alive pools, page cache
            run_wrk(f"http://127.0.0.1:{ports[name]}/1k", script, 1, args.connections, workdir)
        time.sleep(0.5)
        for tail in tails.values():
            tail.new_lines()
        runs = measure_rounds(args, servers, ports, script, workdir, scraper, tails)
        page = scraper.scrape()
        check_alive(group)
        counts = count_instructions(args, group, origin_ports, script) if args.callgrind_seconds else {}
    checks = [f"{len(scraper.times_ms)} scrapes, {len(scraper.failures)} failed"
              f"{': ' + '; '.join(sorted(set(scraper.failures))) if scraper.failures else ''}",
              f"the last page: {len(page)} bytes, {sum(1 for line in page.splitlines() if line[:1] != '#')} samples"]
    return report(args, runs, scraper, checks, counts)


def count_instructions(args: argparse.Namespace, group: ProcessGroup, origin_ports: list[int],
                       script: Path) -> dict[str, dict]:
    """Each Multiplier again under callgrind: instructions per record written, and the scrapes it got."""
    workdir, counts = group.workdir, {}
    for name in SCENARIOS:
        port, metrics_port, log = free_port(), free_port(), log_path(workdir, f"{name}-callgrind")
        extra = ("--metrics-listen", f"127.0.0.1:{metrics_port}") if name == "scraped" else ()
        tail = LogTail(log)

        def start(wrapper: list[str], name=name, port=port, log=log, extra=extra) -> int:
            return start_multiplier(group, f"{name}-callgrind", port, origin_ports[0], numbered(origin_ports[1:]),
                                    log, extra=extra, wrapper=tuple(wrapper), deadline_s=120).pid

        scraper = Scraper(metrics_port)
        records = {"seen": 0}
        scrapes: list[int] = []  # the scraper's count when callgrind starts counting, and when it stops

        def count(tail=tail, records=records, scrapes=scrapes, scraper=scraper) -> int:
            records["seen"] += len(tail.new_lines())
            scrapes.append(len(scraper.times_ms))
            return records["seen"]

        if name == "scraped":
            with scraper:
                counts[name] = callgrind(group, f"{name}-cg", start, f"http://127.0.0.1:{port}/1k", script,
                                         args.callgrind_seconds, workdir, count)
        else:
            counts[name] = callgrind(group, f"{name}-cg", start, f"http://127.0.0.1:{port}/1k", script,
                                     args.callgrind_seconds, workdir, count)
        counts[name]["scrapes"] = scrapes[-1] - scrapes[0]
        if name == "scraped":
            counts[name]["metrics"] = metrics_code(inclusive_rows(workdir, f"{name}-cg"))
        print(f"callgrind {name:8s} {counts[name]['total'] / counts[name]['requests']:,.0f} instructions per record "
              f"({counts[name]['requests']} records, {len(scraper.times_ms)} scrapes)", flush=True)
    return counts


# The metrics code's entry points in callgrind's inclusive table: the tally on the formatting thread, the
# counters' update on the writer thread, and the listener's thread (every scrape: reading, rendering, writing).
METRICS_CODE = {"tally": "spe::tally_of(", "counters": "spe::RunMetrics::add(",
                "scrapes": "MetricsServer::MetricsServer("}


def metrics_code(rows: list[tuple[int, str]]) -> dict[str, int]:
    """Inclusive instructions of each entry point of the metrics code (its largest row)."""
    return {key: max((cost for cost, where in rows if needle in where), default=0)
            for key, needle in METRICS_CODE.items()}


def measure_rounds(args: argparse.Namespace, servers: dict[str, int], ports: dict[str, int], script: Path,
                   workdir: Path, scraper: Scraper, tails: dict[str, LogTail]) -> list[dict]:
    runs = []
    for rnd in range(args.rounds):
        for name in SCENARIOS if rnd % 2 == 0 else SCENARIOS[::-1]:
            sut = process_tree(servers[name])
            c0, b0 = cpu_seconds(sut), busy_seconds()
            if name == "scraped":
                with scraper:
                    result = run_wrk(f"http://127.0.0.1:{ports[name]}/1k", script, args.seconds, args.connections,
                                     workdir)
            else:
                result = run_wrk(f"http://127.0.0.1:{ports[name]}/1k", script, args.seconds, args.connections,
                                 workdir)
            c1, b1 = cpu_seconds(sut), busy_seconds()
            time.sleep(0.5)  # the writer thread's last batch of the round
            measured = fully_measured(tails[name].new_lines(), PROXIES)
            n = max(result["requests"], 1)
            runs.append({**result, "round": rnd, "scenario": name, "cpu_us": (c1 - c0) / n * 1e6,
                         "measured": measured / args.seconds, "measured_share": measured / n,
                         "foreign": (b1 - b0) - (c1 - c0) - result["wrk_cpu"]})
            print(f"round {rnd + 1}/{args.rounds} {name:8s} {result['rps']:9.0f} req/s  "
                  f"{measured / args.seconds:9.0f} fully measured/s  {(c1 - c0) / n * 1e6:7.1f} µs/req  "
                  f"{result['errors']}", flush=True)
    return runs


def table(runs: list[dict], seconds: float) -> str:
    lines = ["| Multiplier | runs × s | req/s (min–max) | fully measured req/s (share) | CPU µs/req "
             "| foreign CPU-s/run |", "|---|---|---|---|---|---|"]
    for name in SCENARIOS:
        mine = [r for r in runs if r["scenario"] == name]
        lines.append(f"| {name} | {len(mine)} × {seconds:g} | {median(r['rps'] for r in mine):.0f} "
                     f"({min(r['rps'] for r in mine):.0f}–{max(r['rps'] for r in mine):.0f}) "
                     f"| {median(r['measured'] for r in mine):.0f} "
                     f"({median(r['measured_share'] for r in mine):.1%}) | {median(r['cpu_us'] for r in mine):.1f} "
                     f"| {median(r['foreign'] for r in mine):.2f} |")
    return "\n".join(lines)


def instructions_text(counts: dict[str, dict], full_load_rate: float) -> str:
    if not counts:
        return ""
    per = {name: c["total"] / c["requests"] for name, c in counts.items()}
    ratio = per["scraped"] / per["plain"]
    scraped = counts["scraped"]
    code, records, scrapes = scraped["metrics"], scraped["requests"], max(scraped["scrapes"], 1)
    per_record = (code["tally"] + code["counters"]) / records
    per_scrape = code["scrapes"] / scrapes
    at_full_load = per_record + per_scrape / max(full_load_rate, 1)
    return (f"- callgrind, every thread: **{per['plain']:,.0f}** instructions per record written without /metrics, "
            f"**{per['scraped']:,.0f}** with it ({ratio:.3f}×; two runs differ by about this much without any "
            f"change, so the metrics code's own count below is the figure)\n"
            f"- the metrics code (callgrind, inclusive): the tally {code['tally'] / records:,.0f} and the counters' "
            f"update {code['counters'] / records:,.0f} instructions per record; a scrape {per_scrape:,.0f} "
            f"({scrapes} scrapes during {records:,} records). At full load ({full_load_rate:,.0f} records/s, the "
            f"median above) with a scrape every second: **{at_full_load:,.0f} instructions per record, "
            f"{at_full_load / per['plain']:.2%}** of the Multiplier's {per['plain']:,.0f}\n")


def report(args: argparse.Namespace, runs: list[dict], scraper: Scraper, checks: list[str],
           counts: dict[str, dict]) -> int:
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    rps, measured = median_ratio(runs, "rps"), median_ratio(runs, "measured")
    full_load = median(r["rps"] for r in runs if r["scenario"] == "scraped")  # records written per second
    cpu = median_ratio(runs, "cpu_us")
    verdict = (f"scraped / plain: client req/s **{rps:.3f}×** (rounds {spread(runs, 'rps')}), fully measured req/s "
               f"**{measured:.3f}×** (rounds {spread(runs, 'measured')}), CPU µs per request {cpu:.3f}× "
               f"(rounds {spread(runs, 'cpu_us')}) (medians of per-round ratios; target ≥ {TARGET}: "
               f"{'met' if min(rps, measured) >= TARGET else 'NOT met'}); a scrape took "
               f"{median(scraper.times_ms):.1f} ms at the median, {max(scraper.times_ms):.1f} ms at most")
    text = (f"\n## {TITLE} — {now}\n\n"
            f"Machine: {machine()}. Command: `{command_line('metrics_scrape')}`.\n\n"
            f"wrk -t1 -c{args.connections} pinned to CPU{LOAD_CPU}; nginx (1 KB from a file on 5 ports: the "
            f"Collector stand-in and {PROXIES} proxies under test) and both Multipliers pinned to CPU{SERVER_CPU}. "
            "`plain`: the release build without --metrics-listen; `scraped`: the same binary with it, a scraper "
            "asking GET /metrics every second during its rounds (a thread of the benchmark, pinned to the load's "
            "CPU). Rounds interleaved, the order alternating. "
            "Fully measured: records whose every proxy leg is OK, per second of the round (at saturating load "
            "the fan-out falls behind the client and legs are `busy`: a Multiplier that measured less would "
            "look as fast to the client). Foreign CPU-s/run: CPU used by anything else on the machine during "
            "a run (/proc/stat, approximate): well above 0, the machine was shared and the per-round ratios "
            "spread accordingly.\n\n"
            + table(runs, args.seconds) + f"\n\n- {verdict}\n" + instructions_text(counts, full_load)
            + "\nChecks:\n\n" + "".join(f"- {c}\n" for c in checks))
    problems = [f"{len(scraper.failures)} scrape(s) failed"] if scraper.failures else []
    return publish(text, problems, title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
