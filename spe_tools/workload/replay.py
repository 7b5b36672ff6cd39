"""The trace replayer: a Squid native or Apache combined/common access log, or browsers' HAR recordings
(har_replay.py), sent through a proxy with their timing (scaled by --speed).

Run: ./spe replay LOG --via HOST:PORT [--speed X] [--filter-dynamic]
         [--origin HOST:PORT] [--format auto|squid|apache] [--spread-ms 10] [--conns-per-client 1]
         [--max-requests N] [--duration S] [--timeout S] [--report-every S] [--json FILE] [--allow-any-host]
     ./spe replay FILE.har [FILE.har ...] --via HOST:PORT [--speed X] [--origin HOST:PORT]
         [--format har] [--max-requests N] [--duration S] [--timeout S] [--report-every S] [--json FILE]
         [--allow-any-host]
An access log is replayed with one persistent connection per client address; --origin rewrites every URL's host
to the synthetic origin, so a public trace replays without touching the internet. HAR files (a .har suffix, or
--format har) are replayed as har_replay.py says: each file a client, each request as recorded; --origin is the
lab's HAR origin there. Without --origin, only loopback hosts are replayed unless --allow-any-host.
Malformed lines are counted and the first few printed as warnings. The summary reports how late each request
was sent versus its schedule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from urllib.parse import urlsplit

from spe_tools.duration import parse_duration
from spe_tools.hostport import add_via, parse_hostport
from spe_tools.workload.client.connections import Exchange, Pool, fetch
from spe_tools.workload.client.logparse import LogError, is_loopback_host, parse_lines, spread_identical, target_url
from spe_tools.workload.client.outcome import exit_code
from spe_tools.workload.client.schedule import Schedule, exchange_summary, print_exchanges, run_closing, within
from spe_tools.workload.har import replay as har_replay
from spe_tools.workload.har.archive import replay_format
from spe_tools.workload.http11 import request_bytes

SHOWN_WARNINGS = 10
SPREAD_MS, CONNS_PER_CLIENT = 10.0, 1  # the access-log defaults (a HAR takes neither)


def plan(entries, origin: str | None, speed: float, allow_any_host: bool) -> tuple[list, Counter]:
    """(offset seconds, client, method, url) per replayed request, and the entries refused by reason."""
    refused: Counter = Counter()
    out = []
    if not entries:
        return out, refused
    t0 = entries[0].time
    for e in entries:
        try:
            url = target_url(e.url, origin)
        except LogError:
            refused["path-only URL without --origin"] += 1
            continue
        host = urlsplit(url).hostname or ""
        if not allow_any_host and not is_loopback_host(host):
            refused["host outside the lab (use --origin)"] += 1
            continue
        out.append(((e.time - t0) / speed, e.client, e.method, url))
    return out, refused


class LogClients:
    """The log's clients: one pool of persistent connections to the proxy per client address."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.pools: dict[str, Pool] = {}

    def pool(self, client: str) -> Pool:
        if client not in self.pools:
            self.pools[client] = Pool(self.args.proxy[0], self.args.proxy[1], self.args.conns_per_client)
        return self.pools[client]

    async def send(self, request: tuple[str, str, str], at: float) -> Exchange:
        client, method, url = request
        authority = urlsplit(url).netloc
        data = request_bytes(method, url, authority, None, b"" if method == "POST" else None)
        ex = await fetch(self.pool(client), data, method, Exchange(at, info={"url": url}), self.args.timeout)
        ex.reply = None
        return ex


def summarize(args: argparse.Namespace, parsed, refused: Counter, schedule: Schedule, clients: LogClients,
              elapsed: float) -> dict:
    return {
        "tool": "replay", "format": "log", "log": args.files[0], "speed": args.speed,
        "filter_dynamic": args.filter_dynamic, "proxy": f"{args.proxy[0]}:{args.proxy[1]}", "origin": args.origin,
        "entries": len(parsed.entries), "warnings": len(parsed.warnings), "skipped": dict(parsed.skipped),
        "refused": dict(refused), "clients": len(clients.pools), **exchange_summary(schedule, elapsed),
    }


def print_summary(s: dict, warnings: list[str]) -> None:
    for w in warnings[:SHOWN_WARNINGS]:
        print(f"replay: warning: {w}", file=sys.stderr)
    if len(warnings) > SHOWN_WARNINGS:
        print(f"replay: ... and {len(warnings) - SHOWN_WARNINGS} more malformed lines", file=sys.stderr)
    print(f"replay: {s['sent']} of {s['entries']} log entries sent ({s['warnings']} malformed lines, skipped "
          f"{s['skipped']}, refused {s['refused']}) from {s['clients']} clients in {s['elapsed_s']:.1f} s "
          f"(trace span {s['trace_span_s']:.1f} s at speed {s['speed']})")
    print_exchanges(s)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe replay", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="an access log (Squid native, Apache combined or common), or HAR files")
    add_via(p, "the HTTP proxy to replay through, the Multiplier in a lab", required=True)
    p.add_argument("--speed", type=float, default=1.0, help="time scale: 2 replays twice as fast (default 1)")
    p.add_argument("--filter-dynamic", action="store_true", help="log: skip cgi-bin, '?', .cgi and POST (ROPE)")
    p.add_argument("--origin", help="HOST:PORT of the lab's origin: a log's URLs get its host (the synthetic "
                                    "origin); a HAR's URLs become its /_har/ URLs (the HAR origin)")
    p.add_argument("--format", choices=("auto", "squid", "apache", "har"), default="auto",
                   help="auto: HAR for .har files, else the log's first well-formed line decides")
    p.add_argument("--spread-ms", type=float, default=None,
                   help=f"log: spacing of identical timestamps (default {SPREAD_MS:g})")
    p.add_argument("--conns-per-client", type=int, default=None,
                   help=f"log: persistent connections per client address (default {CONNS_PER_CLIENT}; a busy one "
                        "makes the next wait)")
    p.add_argument("--max-requests", type=int, default=None, help="replay only the first N requests (of each HAR)")
    p.add_argument("--duration", type=parse_duration, default=None,
                   help="replay only what is scheduled in the first S seconds (after --speed)")
    p.add_argument("--timeout", type=parse_duration, default=30.0, help="per request, and the final drain (s)")
    p.add_argument("--report-every", type=parse_duration, default=10.0, help="progress line period (s)")
    p.add_argument("--allow-any-host", action="store_true", help="replay non-loopback hosts as they are")
    p.add_argument("--json", help="write the summary as JSON here")
    return p


def is_har(args: argparse.Namespace, parser: argparse.ArgumentParser) -> bool:
    """HAR files (--format har, or every file a .har) or one access log; anything else is the user's mistake."""
    try:
        har = args.format == "har" or (args.format == "auto" and replay_format(args.files) == "har")
        if not har:
            replay_format(args.files)  # a log format named: still one log, no HAR
    except ValueError as e:
        parser.error(str(e))
    log_only = [flag for flag, given in (("--filter-dynamic", args.filter_dynamic),
                                         ("--spread-ms", args.spread_ms is not None),
                                         ("--conns-per-client", args.conns_per_client is not None)) if given]
    if har and log_only:
        parser.error(f"{', '.join(log_only)}: for access logs only (a HAR keeps its own connections)")
    return har


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.speed <= 0:
        parser.error("--speed must be positive")
    if args.origin:
        try:
            parse_hostport(args.origin)
        except ValueError as e:
            parser.error(f"--origin: {e}")


def replay_log(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    args.spread_ms = SPREAD_MS if args.spread_ms is None else args.spread_ms
    args.conns_per_client = args.conns_per_client or CONNS_PER_CLIENT
    try:
        with open(args.files[0], errors="replace") as f:
            parsed = parse_lines(f, args.format, args.filter_dynamic)
    except OSError as e:
        parser.error(f"cannot read {args.files[0]}: {e}")
    entries = spread_identical(parsed.entries, args.spread_ms / 1000)[:args.max_requests]
    requests, refused = plan(entries, args.origin, args.speed, args.allow_any_host)
    timed = within([(offset, (client, method, url)) for offset, client, method, url in requests], args.duration)
    clients = LogClients(args)
    schedule = Schedule(timed, clients.send, args.timeout, args.report_every)
    elapsed = asyncio.run(run_closing(schedule, clients.pools))
    summary = summarize(args, parsed, refused, schedule, clients, elapsed)
    print_summary(summary, parsed.warnings)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(args, parser)
    summary = har_replay.replay(args, parser) if is_har(args, parser) else replay_log(args, parser)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return exit_code("replay", summary)


if __name__ == "__main__":
    sys.exit(main())
