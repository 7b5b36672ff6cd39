"""The load client: Poisson arrivals at a constant mean rate, robots with persistent connections,
a target offered hit ratio, shares of IMS, reload, HEAD and POST requests, and a share of conformance
sequences (RFC 9111 rules, conformance_mix.py); beside the robots, --users browsing users in sessions
(sessions.py: a page and its embedded objects, think time, a link followed).

Run: ./spe load --via HOST:PORT --origin HOST:PORT --rate R --duration D
         [--robots N] [--hit-ratio H] [--popularity uniform|zipf:A] [--launch-win S] [--ims S] [--reload S]
         [--head S] [--post S] [--page S] [--seq S] [--conformance S] [--model FILE] [--world ID] [--seed N]
         [--users N] [--think-s S] [--session-pages N]
         [--max-requests N] [--timeout S] [--report-every S] [--json FILE]
Without --via it talks to the origin directly. Prints a progress line every --report-every
seconds (stderr) and a summary at the end (stdout); --json writes the summary as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import ssl
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

from spe_tools.duration import parse_duration
from spe_tools.hostport import add_via, hostport
from spe_tools.ports import port_open
from spe_tools.workload.client.arrivals import schedule
from spe_tools.workload.client.conformance_mix import ConformanceMix
from spe_tools.workload.client.connections import Exchange, Pool, TlsTarget, fetch
from spe_tools.workload.client.outcome import exit_code
from spe_tools.workload.client.plan import Planned
from spe_tools.workload.client.popularity import DEFAULT_POPULARITY, History, parse_popularity
from spe_tools.workload.client.sessions import PARALLEL, SessionModel, user
from spe_tools.workload.client.stats import Histogram, fmt_ms
from spe_tools.workload.content import model as cm
from spe_tools.workload.http11 import CLIENT_HEADER, format_date, request_bytes


@dataclass
class Mix:
    """Shares of all requests. hit_ratio: repeats of earlier cacheable objects (offered hits);
    reload: repeats with Cache-Control: no-cache (forced misses); post: new POSTs; the rest new
    objects. ims is taken from the repeats, head from every GET; page/seq from new objects.
    conformance: a share of all requests taken out first, the steps of conformance sequences; the other
    shares apply to the rest."""

    hit_ratio: float = 0.55
    ims: float = 0.05
    reload: float = 0.01
    head: float = 0.01
    post: float = 0.01
    page: float = 0.05
    seq: float = 0.05
    post_size: int = 1024
    conformance: float = 0.0

    def validate(self) -> None:
        if not 0 <= self.conformance <= 1:
            raise ValueError("the conformance share must be between 0 and 1")
        if self.hit_ratio + self.reload + self.post > 1 + 1e-9:
            raise ValueError("hit ratio + reload + post shares exceed 1")
        if self.ims > self.hit_ratio + 1e-9:
            raise ValueError("IMS requests are repeats: --ims must not exceed --hit-ratio")
        if self.page + self.seq > 1 + 1e-9:
            raise ValueError("page + seq shares exceed 1")


@dataclass
class RobotState:
    seq: str = ""
    seq_next: int = 0


class Planner:
    """Decides each request (pure given its random source and the history of completed replies)."""

    def __init__(self, model: cm.Model, mix: Mix, history: History, world: str, rng: random.Random,
                 conformance: ConformanceMix | None = None, conformance_rng: random.Random | None = None):
        self.model, self.mix, self.history, self.world, self.rng = model, mix, history, world, rng
        # The conformance share draws from its own source: with it at 0 the rest of the mix is as before.
        self.conformance, self.conformance_rng = conformance, conformance_rng or random.Random(0)
        # Picks draw a varying number of bits (randrange): their own source keeps the sequence of
        # request categories fixed by the seed whatever the timing of replies.
        self.pick_rng = random.Random(rng.random())
        self.serial = 0
        self.owed = 0  # repeats that could not be made yet (empty history): made up later

    def _new_path(self, robot: RobotState) -> tuple[str, str, str]:
        self.serial += 1
        u = self.rng.random()
        if u < self.mix.page:
            oid = f"{self.world}-{self.serial}"
            return f"/page/{oid}.html", "page", oid
        if u < self.mix.page + self.mix.seq:
            if not robot.seq or robot.seq_next >= self.model.seq_length:
                robot.seq, robot.seq_next = f"{self.world}-s{self.serial}", 0
            n = robot.seq_next
            robot.seq_next += 1
            return f"/seq/{robot.seq}/{n}.jpg", "seq", f"{robot.seq}/{n}"
        oid = f"{self.world}-{self.serial}"
        return f"/obj/{oid}", "obj", oid

    def next(self, robot: RobotState, at: float = 0.0) -> Planned:
        """The request for the arrival scheduled `at` seconds into the run."""
        if self.conformance and self.conformance_rng.random() < self.mix.conformance:
            return self.conformance.next(at)
        mix, u = self.mix, self.rng.random()
        if u < mix.post:
            self.serial += 1
            return Planned("POST", f"/post/{self.world}-{self.serial}", "post", body=self.rng.randbytes(mix.post_size))
        wants_repeat = u < mix.post + mix.reload + mix.hit_ratio
        reload = u < mix.post + mix.reload
        if not wants_repeat and self.owed and len(self.history):
            self.owed -= 1
            wants_repeat = True
        if wants_repeat and not len(self.history):
            self.owed += 1
            wants_repeat = reload = False
        method = "HEAD" if self.rng.random() < mix.head else "GET"
        if wants_repeat:
            path = self.history.pick(self.pick_rng)
            kind, oid = cm.parse_path(path)
            spec = cm.object_spec(self.model, kind, oid)
            if reload:
                return Planned(method, path, "reload", {"Cache-Control": "no-cache", "Pragma": "no-cache"},
                               spec=spec)
            if mix.hit_ratio > 0 and self.rng.random() < mix.ims / mix.hit_ratio:
                return Planned(method, path, "ims", {"If-Modified-Since": format_date(spec.last_modified)},
                               spec=spec)
            return Planned(method, path, "repeat", spec=spec)
        path, kind, oid = self._new_path(robot)
        return Planned(method, path, "new", spec=cm.object_spec(self.model, kind, oid))


@dataclass
class Checks:
    """What the client can tell about the replies without a reference: uncacheable serials seen
    twice (served from a cache), bodies of the wrong size, statuses, proxy-reported hits."""

    serials: set = field(default_factory=set)
    stale_uncacheable: int = 0
    size_mismatches: int = 0
    proxy_hits: int = 0

    def check(self, plan: Planned, ex: Exchange) -> None:
        reply = ex.reply
        if reply is None:
            return
        if reply.header("x-cache").upper().startswith("HIT"):
            self.proxy_hits += 1
        serial = reply.header("x-origin-serial")
        if serial and ex.status == 200:
            if serial in self.serials:
                self.stale_uncacheable += 1
            self.serials.add(serial)
        spec = plan.spec
        if (spec and ex.status == 200 and plan.method == "GET" and spec.kind != "page"
                and not spec.cache == "vary" and ex.length != spec.size):
            self.size_mismatches += 1


@dataclass
class Tally:
    """What the summary needs of the exchanges, as counts and bounded histograms: a long run at a
    high rate must not keep every exchange in memory."""

    completed: int = 0
    cut_on_purpose: int = 0  # replies the origin ended early by design (a conformance case): no failure
    error_kinds: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    bytes: int = 0
    response_ms: Histogram = field(default_factory=Histogram)
    first_byte_ms: Histogram = field(default_factory=Histogram)
    late_ms: Histogram = field(default_factory=Histogram)

    def add(self, ex: Exchange, cut_on_purpose: bool = False) -> None:
        self.late_ms.add(ex.late_ms)
        if ex.error and cut_on_purpose:
            self.cut_on_purpose += 1
            return
        if ex.error:
            self.error_kinds[ex.error.split(":")[0]] += 1
            return
        self.completed += 1
        self.statuses[ex.status] += 1
        self.bytes += ex.length
        self.response_ms.add(ex.response_ms)
        self.first_byte_ms.add((ex.first_byte - ex.sent) * 1000)

    @property
    def errors(self) -> int:
        return sum(self.error_kinds.values())

    @property
    def done(self) -> int:
        return self.completed + self.errors + self.cut_on_purpose


class LoadRun:
    def __init__(self, args: argparse.Namespace, model: cm.Model, mix: Mix):
        self.args, self.model, self.mix = args, model, mix
        self.rng = random.Random(args.seed)
        popularity, alpha = parse_popularity(args.popularity)
        self.history = History(popularity, alpha)
        self.conformance = (ConformanceMix(args.world, random.Random(f"conformance/{args.seed}"))
                            if mix.conformance > 0 else None)
        self.planner = Planner(model, mix, self.history, args.world, self.rng, self.conformance,
                               random.Random(f"conformance-share/{args.seed}"))
        target = args.proxy or args.origin
        # robots' pools, then the users' (a browser's few connections each)
        sizes = [args.max_conns] * args.robots + [PARALLEL] * args.users
        self.pools = [Pool(target[0], target[1], size) for size in sizes]
        self.tls_pools: list[Pool] = []
        if args.tls_origin:
            context = ssl.create_default_context(cafile=args.ca_cert)
            tls = TlsTarget(args.tls_origin[0], args.tls_origin[1], context, tunnel=bool(args.proxy))
            tls_target = args.proxy or args.tls_origin
            self.tls_pools = [Pool(tls_target[0], tls_target[1], size, tls) for size in sizes]
        self.sessions = SessionModel(args.think_s, args.session_pages, popularity, alpha)
        self.session_counts: dict = {}
        self.tls_authority = f"{args.tls_origin[0]}:{args.tls_origin[1]}" if args.tls_origin else ""
        self.robots = [RobotState() for _ in range(args.robots)]
        self.origin_authority = f"{args.origin[0]}:{args.origin[1]}"
        self.tally, self.window = Tally(), Tally()  # the whole run; since the last progress line
        self.checks = Checks()
        self.categories: Counter = Counter()
        self.schemes: Counter = Counter()
        self.in_flight: set[asyncio.Task] = set()

    def over_https(self, path: str) -> bool:
        """A path's scheme is fixed by its hash: every repeat of a URL uses the scheme it was first
        asked with, so the offered hit ratio holds with part of the traffic over HTTPS."""
        if not self.tls_pools:
            return False
        return int(hashlib.md5(path.encode()).hexdigest()[:8], 16) < self.args.https_share * 2**32

    def request_bytes(self, plan: Planned, https: bool = False, client: int | None = None) -> bytes:
        # Each robot and user is a client of its own, though all share one address: the Multiplier keeps
        # each one's order across its connections, not one order for all of them (--order client).
        headers = plan.headers if client is None else {**plan.headers, CLIENT_HEADER: f"load-{client}"}
        if https:  # inside the tunnel (or straight to the origin's TLS port): origin-form
            return request_bytes(plan.method, plan.path, self.tls_authority, headers, plan.body)
        target = f"http://{self.origin_authority}{plan.path}" if self.args.proxy else plan.path
        return request_bytes(plan.method, target, self.origin_authority, headers, plan.body)

    async def one(self, robot: int, plan: Planned, scheduled: float) -> None:
        ex = await self.send(robot, plan, self.over_https(plan.path), scheduled)
        if self.conformance and plan.category == "conformance":
            self.conformance.completed(plan)
        if (ex.status == 200 and plan.method == "GET" and plan.category == "new" and plan.spec
                and plan.spec.cacheable):
            self.history.add(plan.path)

    async def send(self, pool_index: int, plan: Planned, https: bool, scheduled: float) -> Exchange:
        self.schemes["https" if https else "http"] += 1
        pool = self.tls_pools[pool_index] if https else self.pools[pool_index]
        client = pool_index if self.args.proxy else None
        ex = await fetch(pool, self.request_bytes(plan, https, client), plan.method, Exchange(scheduled),
                         self.args.timeout)
        self.checks.check(plan, ex)
        cut = ConformanceMix.cut_on_purpose(plan)
        self.tally.add(ex, cut)
        self.window.add(ex, cut)
        return ex

    async def session_fetch(self, user_index: int, path: str, category: str, https: bool) -> bool:
        """One request of a browsing user (sessions.py), on that user's own connections."""
        kind, oid = cm.parse_path(path)
        plan = Planned("GET", path, category, spec=cm.object_spec(self.model, kind, oid))
        self.categories[category] += 1
        # The request is a task of its own among those the final drain waits for; the user, who may be thinking
        # when the run ends, is not.
        request = self.track(asyncio.create_task(
            self.send(self.args.robots + user_index, plan, https, asyncio.get_running_loop().time())))
        ex = await request
        return ex.status == 200

    def track(self, task: asyncio.Task) -> asyncio.Task:
        """A request out until its task ends: what the final drain waits for and counts as lost."""
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)
        return task

    def start_users(self) -> list[asyncio.Task]:
        loop = asyncio.get_running_loop()
        end = self.start + self.args.duration

        async def run_user(index: int) -> None:
            rng = random.Random(f"user/{self.args.seed}/{index}")
            await asyncio.sleep(rng.uniform(0, self.args.think_s))  # users arrive spread out, not in a burst
            await user(self.model, self.sessions, rng,
                       lambda path, category, https: self.session_fetch(index, path, category, https),
                       self.over_https, lambda: loop.time() >= end, self.session_counts)

        return [asyncio.create_task(run_user(i)) for i in range(self.args.users)]

    async def run(self) -> float:
        loop = asyncio.get_running_loop()
        times = schedule(self.args.rate, self.args.duration, self.rng, self.args.launch_win,
                         self.args.max_requests)
        self.start = loop.time()
        reporter = asyncio.create_task(self.report_progress())
        users = self.start_users()
        for i, offset in enumerate(times):
            at = self.start + offset
            delay = at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            robot = i % len(self.robots)
            plan = self.planner.next(self.robots[robot], offset)
            self.categories[plan.category] += 1
            self.track(asyncio.create_task(self.one(robot, plan, at)))
        remaining = self.args.duration - (loop.time() - self.start)
        if remaining > 0:
            await asyncio.sleep(remaining)
        if self.in_flight:  # bounded drain: a request still out after --timeout is counted lost
            await asyncio.wait(list(self.in_flight), timeout=self.args.timeout)
        lost = len(self.in_flight)
        for task in [*self.in_flight, *users]:
            task.cancel()
        reporter.cancel()
        for pool in self.pools:
            pool.close()
        self.lost = lost
        return loop.time() - self.start

    async def report_progress(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.args.report_every)
            now = loop.time() - self.start
            window, self.window = self.window, Tally()
            rate = window.done / self.args.report_every
            print(f"load: t={now:.0f}s completed={self.tally.done} window_rate={rate:.1f}/s"
                  f" errors={window.errors} response {fmt_ms(window.response_ms.summary())}",
                  file=sys.stderr, flush=True)

    def summary(self, elapsed: float) -> dict:
        tally = self.tally
        sent = sum(self.categories.values())
        hits_offered = self.categories["repeat"] + self.categories["ims"]
        robots_sent = sent - self.categories["session-page"] - self.categories["session-object"]
        return {
            "tool": "load", "config": config_dict(self.args, self.mix),
            "duration_s": round(self.args.duration, 3), "elapsed_s": round(elapsed, 3),
            "sent": sent, "completed": tally.completed, "errors": tally.errors, "lost": self.lost,
            "cut_on_purpose": tally.cut_on_purpose,
            "error_kinds": dict(tally.error_kinds),
            "rate_configured": self.args.rate, "rate_achieved": round(sent / self.args.duration, 3),
            "reply_rate": round(tally.completed / self.args.duration, 3),
            "offered_hit_ratio": round(hits_offered / robots_sent, 4) if robots_sent else None,  # the robots'
            "sessions": self.session_counts.get("sessions", 0), "page_views": self.session_counts.get("page_views", 0),
            "categories": dict(self.categories),
            "schemes": dict(self.schemes),
            "statuses": {str(k): v for k, v in sorted(tally.statuses.items())},
            "response_ms": tally.response_ms.summary(), "first_byte_ms": tally.first_byte_ms.summary(),
            "late_ms": tally.late_ms.summary(), "bytes": tally.bytes,
            "proxy_reported_hits": self.checks.proxy_hits, "stale_uncacheable": self.checks.stale_uncacheable,
            "size_mismatches": self.checks.size_mismatches,
            "conformance_sequences": self.conformance.started if self.conformance else 0,
        }


def config_dict(args: argparse.Namespace, mix: Mix) -> dict:
    out = {k: v for k, v in vars(args).items() if k not in ("json",)}
    out["proxy"] = f"{args.proxy[0]}:{args.proxy[1]}" if args.proxy else None
    out["origin"] = f"{args.origin[0]}:{args.origin[1]}"
    out["mix"] = asdict(mix)
    return out


def print_summary(s: dict) -> None:
    print(f"load: {s['sent']} requests in {s['duration_s']:.1f} s: rate {s['rate_achieved']:.1f}/s "
          f"(configured {s['rate_configured']}/s), {s['completed']} completed, {s['errors']} errors, "
          f"{s['lost']} still out at the end"
          + (f", {s['cut_on_purpose']} cut by the origin on purpose (cut-once)" if s["cut_on_purpose"] else ""))
    print(f"load: offered hit ratio {s['offered_hit_ratio']}, categories {s['categories']}, statuses {s['statuses']}")
    print(f"load: response {fmt_ms(s['response_ms'])}")
    print(f"load: first byte {fmt_ms(s['first_byte_ms'])}; sent late {fmt_ms(s['late_ms'])}")
    print(f"load: {s['bytes']} body bytes; proxy-reported hits {s['proxy_reported_hits']}; "
          f"uncacheable served twice {s['stale_uncacheable']}; wrong sizes {s['size_mismatches']}")
    if s["sessions"]:
        print(f"load: users: {s['sessions']} sessions, {s['page_views']} page views "
              f"({s['page_views'] / s['sessions']:.1f} per session)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe load", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_via(p, "the HTTP proxy to send through (absolute-form requests), the Multiplier in a lab; without it, "
               "straight to the origin")
    p.add_argument("--origin", type=hostport, required=True, help="HOST:PORT of the synthetic origin (./spe origin)")
    p.add_argument("--tls-origin", type=hostport,
                   help="HOST:PORT where the origin serves HTTPS (./spe origin --tls): part of the requests go "
                        "there, through a CONNECT tunnel when there is a --via")
    p.add_argument("--https-share", type=float, default=0.5,
                   help="with --tls-origin: share of URLs asked over HTTPS (by a hash of the path, so a URL "
                        "keeps its scheme; default 0.5)")
    p.add_argument("--ca-cert", help="CA file trusted for HTTPS: SPE's (./spe ca --path) through an intercepting "
                                     "Multiplier, the origin's test CA straight to it (default: the system store)")
    p.add_argument("--rate", type=float, required=True,
                   help="mean requests per second of the robots (Poisson arrivals); 0: users only")
    p.add_argument("--duration", type=parse_duration, required=True, help="e.g. 60s, 5m")
    p.add_argument("--robots", type=int, default=4, help="robots, each with its own persistent connections")
    p.add_argument("--max-conns", type=int, default=16, help="connections per robot at most (default 16)")
    p.add_argument("--hit-ratio", type=float, default=0.55, help="offered hit ratio (default 0.55, PolyMix-1)")
    p.add_argument("--popularity", default=DEFAULT_POPULARITY, help=f"uniform | zipf:A (default {DEFAULT_POPULARITY})")
    p.add_argument("--launch-win", type=parse_duration, default=0.0, help="ramp the rate up from 0 over S s")
    for name, default, text in (("ims", 0.05, "IMS requests (repeats with If-Modified-Since)"),
                                ("reload", 0.01, "reloads (repeats with Cache-Control: no-cache)"),
                                ("head", 0.01, "HEAD instead of GET"), ("post", 0.01, "POSTs (never cacheable)"),
                                ("page", 0.05, "new requests for HTML pages"),
                                ("seq", 0.05, "new requests that walk numbered sequences"),
                                ("conformance", 0.0, "requests in conformance sequences on /c/<case>/<id> URLs "
                                 "(RFC 9111 rules, docs/workloads.md)")):
        p.add_argument(f"--{name}", type=float, default=default, help=f"share of {text} (default {default})")
    p.add_argument("--users", type=int, default=0, help="browsing users beside the robots, each in sessions: a "
                   "page and its embedded objects, think time, a link followed (docs/workloads.md; default 0)")
    p.add_argument("--think-s", type=parse_duration, default=2.0,
                   help="users: mean think time between page views, exponential (default 2s)")
    p.add_argument("--session-pages", type=float, default=5.0,
                   help="users: mean page views per session, geometric (default 5)")
    p.add_argument("--model", help="the origin's content-model file (to know which objects are cacheable)")
    p.add_argument("--world", default=None, help="object id prefix (default: random, so each run has new objects)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    p.add_argument("--max-requests", type=int, default=1_000_000, help="bound on requests (default 1e6)")
    p.add_argument("--timeout", type=parse_duration, default=30.0,
                   help="per request, the final drain, and the wait for the first hop to listen (s)")
    p.add_argument("--report-every", type=parse_duration, default=5.0, help="progress line period (s)")
    p.add_argument("--json", help="write the summary as JSON here")
    return p


def wait_for_first_hop(address: tuple[str, int], within_s: float) -> bool:
    """Whether the first hop (the proxy, or without one the origin) accepts connections within `within_s`. A client
    started right after its origin (`./spe origin ... &` then `./spe load`, as a pasted script does) can be quicker
    than the origin's start, and would count its first requests as failed for no fault of the origin's."""
    deadline = time.monotonic() + within_s
    while not port_open(*address):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time() * 1000) % 1_000_000
    if args.world is None:
        args.world = f"w{random.Random(args.seed).getrandbits(32):08x}"
    mix = Mix(args.hit_ratio, args.ims, args.reload, args.head, args.post, args.page, args.seq,
              conformance=args.conformance)
    try:
        mix.validate()
        parse_popularity(args.popularity)
        model = cm.Model.load(args.model)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    if not 0 <= args.https_share <= 1:
        parser.error("--https-share must be between 0 and 1")
    if args.ca_cert and not os.path.isfile(args.ca_cert):
        parser.error(f"--ca-cert {args.ca_cert}: no such file")
    if args.rate < 0 or args.robots < 1 or args.users < 0 or (args.rate == 0 and not args.users):
        parser.error("--rate must be positive (or 0 with --users), --robots at least 1, --users 0 or more")
    if args.session_pages < 1 or args.think_s < 0:
        parser.error("--session-pages must be at least 1 and --think-s not negative")
    first_hop = args.proxy or args.origin
    if not wait_for_first_hop(first_hop, args.timeout):
        print(f"load: warning: {first_hop[0]}:{first_hop[1]} did not accept a connection within --timeout "
              f"({args.timeout:g} s); sending anyway", file=sys.stderr)
    run = LoadRun(args, model, mix)
    elapsed = asyncio.run(run.run())
    summary = run.summary(elapsed)
    print_summary(summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return exit_code("load", summary)


if __name__ == "__main__":
    sys.exit(main())
