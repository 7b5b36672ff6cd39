"""The trace replayer: a Squid native or Apache combined/common access log, sent through a proxy
with its inter-arrival times (scaled by --speed), one persistent connection per client address.

Run: python -m spe_tools.workload.replay LOG --proxy HOST:PORT [--speed X] [--filter-dynamic]
         [--origin HOST:PORT] [--format auto|squid|apache] [--spread-ms 10] [--conns-per-client 1]
         [--max-requests N] [--timeout S] [--report-every S] [--json FILE] [--allow-any-host]
--origin rewrites every URL's host to the synthetic origin, so a public trace replays without
touching the internet. Without it, only loopback hosts are replayed unless --allow-any-host.
Malformed lines are counted and the first few printed as warnings. The summary reports how late
each request was sent versus its schedule.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from urllib.parse import urlsplit

from spe_tools.duration import parse_duration
from spe_tools.hostport import parse_hostport
from spe_tools.workload.client import Exchange, Pool, fetch
from spe_tools.workload.http11 import request_bytes
from spe_tools.workload.logparse import LogError, is_loopback_host, parse_lines, spread_identical, target_url
from spe_tools.workload.stats import distribution, fmt_ms

SHOWN_WARNINGS = 10


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


class Replay:
    def __init__(self, args: argparse.Namespace, requests: list):
        self.args, self.requests = args, requests
        self.pools: dict[str, Pool] = {}
        self.results: list[Exchange] = []
        self.in_flight: set[asyncio.Task] = set()
        self.lost = 0

    def pool(self, client: str) -> Pool:
        if client not in self.pools:
            self.pools[client] = Pool(self.args.proxy[0], self.args.proxy[1], self.args.conns_per_client)
        return self.pools[client]

    async def one(self, client: str, method: str, url: str, scheduled: float) -> None:
        authority = urlsplit(url).netloc
        data = request_bytes(method, url, authority, None, b"" if method == "POST" else None)
        ex = await fetch(self.pool(client), data, method, Exchange(scheduled, info={"url": url}), self.args.timeout)
        ex.reply = None
        self.results.append(ex)

    async def run(self) -> float:
        loop = asyncio.get_running_loop()
        self.start = loop.time() + 0.05  # a moment to get going: the first request is not late by set-up
        reporter = asyncio.create_task(self.report_progress())
        for offset, client, method, url in self.requests:
            at = self.start + offset
            delay = at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self.one(client, method, url, at))
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)
        if self.in_flight:
            await asyncio.wait(list(self.in_flight), timeout=self.args.timeout)
        self.lost = len(self.in_flight)
        for task in list(self.in_flight):
            task.cancel()
        reporter.cancel()
        for pool in self.pools.values():
            pool.close()
        return loop.time() - self.start

    async def report_progress(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.args.report_every)
            late = distribution([ex.late_ms for ex in self.results])
            print(f"replay: t={loop.time() - self.start:.0f}s sent={len(self.results) + len(self.in_flight)}/"
                  f"{len(self.requests)} errors={sum(1 for ex in self.results if ex.error)} late {fmt_ms(late)}",
                  file=sys.stderr, flush=True)


def summarize(args: argparse.Namespace, parsed, refused: Counter, replay: Replay, elapsed: float) -> dict:
    ok = [ex for ex in replay.results if not ex.error]
    late = [ex.late_ms for ex in replay.results]
    return {
        "tool": "replay", "log": args.log, "speed": args.speed, "filter_dynamic": args.filter_dynamic,
        "proxy": f"{args.proxy[0]}:{args.proxy[1]}", "origin": args.origin,
        "entries": len(parsed.entries), "warnings": len(parsed.warnings), "skipped": dict(parsed.skipped),
        "refused": dict(refused), "scheduled": len(replay.requests), "sent": len(replay.results),
        "completed": len(ok), "errors": len(replay.results) - len(ok), "lost": replay.lost,
        "error_kinds": dict(Counter(ex.error.split(":")[0] for ex in replay.results if ex.error)),
        "clients": len(replay.pools), "elapsed_s": round(elapsed, 3),
        "trace_span_s": round(replay.requests[-1][0], 3) if replay.requests else 0.0,
        "statuses": {str(k): v for k, v in sorted(Counter(ex.status for ex in ok).items())},
        "late_ms": distribution(late), "late_over_20ms": sum(1 for v in late if v > 20),
        "response_ms": distribution([ex.response_ms for ex in ok]),
        "bytes": sum(ex.length for ex in ok),
    }


def print_summary(s: dict, warnings: list[str]) -> None:
    for w in warnings[:SHOWN_WARNINGS]:
        print(f"replay: warning: {w}", file=sys.stderr)
    if len(warnings) > SHOWN_WARNINGS:
        print(f"replay: ... and {len(warnings) - SHOWN_WARNINGS} more malformed lines", file=sys.stderr)
    print(f"replay: {s['sent']} of {s['entries']} log entries sent ({s['warnings']} malformed lines, skipped "
          f"{s['skipped']}, refused {s['refused']}) from {s['clients']} clients in {s['elapsed_s']:.1f} s "
          f"(trace span {s['trace_span_s']:.1f} s at speed {s['speed']})")
    print(f"replay: {s['completed']} completed, {s['errors']} errors, {s['lost']} still out; statuses {s['statuses']}")
    print(f"replay: sent late vs schedule: {fmt_ms(s['late_ms'])}; {s['late_over_20ms']} over 20 ms")
    print(f"replay: response {fmt_ms(s['response_ms'])}")


def hostport(text: str) -> tuple[str, int]:
    try:
        return parse_hostport(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", help="access log (Squid native, Apache combined or common)")
    p.add_argument("--proxy", type=hostport, required=True, help="HOST:PORT of the proxy to replay through")
    p.add_argument("--speed", type=float, default=1.0, help="time scale: 2 replays twice as fast (default 1)")
    p.add_argument("--filter-dynamic", action="store_true", help="skip cgi-bin, '?', .cgi and POST (ROPE)")
    p.add_argument("--origin", help="HOST:PORT replacing every URL's host (the synthetic origin)")
    p.add_argument("--format", choices=("auto", "squid", "apache"), default="auto")
    p.add_argument("--spread-ms", type=float, default=10.0, help="spacing of identical timestamps (default 10)")
    p.add_argument("--conns-per-client", type=int, default=1,
                   help="persistent connections per client address (default 1; a busy one makes the next wait)")
    p.add_argument("--max-requests", type=int, default=None, help="replay only the first N requests")
    p.add_argument("--timeout", type=parse_duration, default=30.0, help="per request, and the final drain (s)")
    p.add_argument("--report-every", type=parse_duration, default=10.0, help="progress line period (s)")
    p.add_argument("--allow-any-host", action="store_true", help="replay non-loopback hosts as they are")
    p.add_argument("--json", help="write the summary as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.speed <= 0:
        parser.error("--speed must be positive")
    if args.origin:
        try:
            parse_hostport(args.origin)
        except ValueError as e:
            parser.error(f"--origin: {e}")
    try:
        with open(args.log, errors="replace") as f:
            parsed = parse_lines(f, args.format, args.filter_dynamic)
    except OSError as e:
        parser.error(f"cannot read {args.log}: {e}")
    entries = spread_identical(parsed.entries, args.spread_ms / 1000)[:args.max_requests]
    requests, refused = plan(entries, args.origin, args.speed, args.allow_any_host)
    replay = Replay(args, requests)
    elapsed = asyncio.run(replay.run())
    summary = summarize(args, parsed, refused, replay, elapsed)
    print_summary(summary, parsed.warnings)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
