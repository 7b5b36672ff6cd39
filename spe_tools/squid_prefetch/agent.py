"""The prefetch agent: follows a Squid's access log and warms that Squid with what client pages embed and link to.

Run: python -m spe_tools.squid_prefetch --proxy HOST:PORT --access-log FILE [--source-address ADDR]
         [--depth N] [--rate R] [--budget-kb K] [--workers N] [--queue N] [--recent 5m] [--log FILE]

The access log is Squid's, in the format of squid_prefetch.logline (the kind's squid.conf sets it). A line is
a trigger when a client (any address but --source-address, the agent's own) got an HTML page with GET. The
agent then fetches the page through the Squid (usually a hit), parses it, and fetches through the Squid the
objects it embeds and, up to --depth clicks ahead, the pages it links to with their embedded objects. Limits:
--rate requests per second (a token bucket), --budget-kb bytes per trigger, a queue of --queue fetches from
which the oldest are dropped when triggers come faster than the rate, and no URL fetched twice (or fetched
after a client asked for it) within --recent. Every fetch is one line of --log (JSON): evidence of what it did,
which SPE's analysis does not rely on.
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from spe_tools.duration import parse_duration
from spe_tools.hostport import parse_hostport
from spe_tools.log_tail import LogTail
from spe_tools.squid_prefetch.links import page_references
from spe_tools.squid_prefetch.logline import AccessLine, parse_line, presented_url, upstream_form

USER_AGENT = "spe-squid-prefetch/1"
MAX_PAGE_BYTES = 2 * 1024 * 1024  # a page larger than this is fetched (warmed) but not parsed
READ_CHUNK = 64 * 1024


class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up; take() waits for one (or until `stop` is set)."""

    def __init__(self, rate: float, burst: float, stop: threading.Event):
        self.rate, self.burst, self.stop = rate, burst, stop
        self.tokens, self.at = burst, time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        while not self.stop.is_set():
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
                self.at = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return True
                wait = (1 - self.tokens) / self.rate
            self.stop.wait(wait)
        return False


@dataclass
class Trigger:
    """A client's page and the byte budget of everything fetched because of it."""

    url: str
    budget: int
    spent: int = 0


@dataclass
class Job:
    url: str  # as the client sees it (https://... for an intercepted page)
    depth: int  # clicks away from the client's page
    page: bool  # parse it (a page within the depth) or only warm it (an embedded object)
    trigger: Trigger


@dataclass
class Recent:
    """URLs fetched (by the agent or a client) within the last `seconds`, bounded in number."""

    seconds: float
    limit: int = 100_000
    seen: OrderedDict = field(default_factory=OrderedDict)

    def add(self, url: str, now: float) -> None:
        self.seen[url] = now
        self.seen.move_to_end(url)
        while len(self.seen) > self.limit:
            self.seen.popitem(last=False)

    def fresh(self, url: str, now: float) -> bool:
        at = self.seen.get(url)
        return at is not None and now - at < self.seconds


class Agent:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.stop = threading.Event()  # the workers' and the token bucket's: set by run(), never by a handler
        self.stop_requested = False  # what a signal handler sets: a plain store takes no lock
        self.bucket = TokenBucket(args.rate, max(1.0, args.rate), self.stop)
        self.queue: deque[Job] = deque()
        self.cond = threading.Condition()
        self.recent = Recent(args.recent)
        self.counts: Counter = Counter()
        self.log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115 (closed in run)
        self.log_lock = threading.Lock()

    # The log side: triggers and what clients already have.
    def on_line(self, line: AccessLine) -> None:
        if line.client == self.args.source_address:
            return  # its own fetch
        url = presented_url(line.url, line.scheme)
        now = time.monotonic()
        with self.cond:
            self.recent.add(url, now)  # the Squid has it (if it could keep it): no need to prefetch it
        if line.is_html_page():
            with self.cond:
                self.counts["triggers"] += 1
            self.enqueue([Job(url, 0, True, Trigger(url, self.args.budget_kb * 1024))])

    def enqueue(self, jobs: list[Job]) -> None:
        with self.cond:
            for job in jobs:
                if len(self.queue) >= self.args.queue:
                    self.queue.popleft()  # the oldest: its user has most likely moved on
                    self.counts["dropped"] += 1
                self.queue.append(job)
            self.cond.notify_all()

    def next_job(self) -> Job | None:
        with self.cond:
            while not self.queue and not self.stop.is_set():
                self.cond.wait(0.5)
            return self.queue.popleft() if self.queue else None

    # The fetch side.
    def worker(self) -> None:
        conn: http.client.HTTPConnection | None = None
        while not self.stop.is_set():
            job = self.next_job()
            if job is None:
                continue
            if not self.admit(job):
                continue
            if not self.bucket.take():
                break
            conn = conn or self.connect()
            conn = self.fetch(conn, job)
        if conn is not None:
            conn.close()

    def admit(self, job: Job) -> bool:
        """Skip what was fetched lately and what its trigger can no longer afford; the client's page is
        fetched even though the client just did (the agent needs its HTML)."""
        now = time.monotonic()
        with self.cond:
            if job.depth > 0 or not job.page:
                if self.recent.fresh(job.url, now):
                    self.counts["skipped_recent"] += 1
                    return False
                self.recent.add(job.url, now)
            if job.trigger.spent >= job.trigger.budget:
                self.counts["skipped_budget"] += 1
                return False
        return True

    def connect(self) -> http.client.HTTPConnection:
        host, port = self.args.proxy
        return http.client.HTTPConnection(host, port, timeout=self.args.timeout,
                                          source_address=(self.args.source_address, 0))

    def fetch(self, conn: http.client.HTTPConnection, job: Job) -> http.client.HTTPConnection | None:
        """GET the job's URL through the Squid, read the reply (a page: keep it to parse), log it; the
        connection to reuse, or None after an error."""
        target, scheme = upstream_form(job.url)
        headers = {"Host": urlsplit(target).netloc, "User-Agent": USER_AGENT, "Accept": "*/*"}
        if scheme == "https":
            headers["X-SPE-Scheme"] = "https"  # how the Multiplier presents an intercepted request
        started = time.time()
        body, status, error, ctype = b"", None, "", ""
        try:
            conn.request("GET", target, headers=headers)
            reply = conn.getresponse()
            status, ctype = reply.status, reply.getheader("Content-Type", "")
            body, size = self.read_body(reply, job)
            if reply.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            error, size = f"{type(e).__name__}: {e}", len(body)
            conn.close()
            conn = None
        with self.cond:  # the workers share the trigger's budget and the counts
            job.trigger.spent += size
            self.counts["fetches"] += 1
            self.counts["bytes"] += size
        self.record(job, started, status, size, error)
        if job.page and status == 200 and "html" in ctype.lower() and body:
            self.follow(job, body)
        return conn

    def read_body(self, reply: http.client.HTTPResponse, job: Job) -> tuple[bytes, int]:
        keep = job.page
        kept, size = [], 0
        while chunk := reply.read(READ_CHUNK):
            size += len(chunk)
            if keep and size <= MAX_PAGE_BYTES:
                kept.append(chunk)
            else:
                keep = False
        return (b"".join(kept) if keep else b""), size

    def follow(self, job: Job, body: bytes) -> None:
        embedded, linked = page_references(body.decode("utf-8", errors="replace"), job.url)
        jobs = [Job(url, job.depth, False, job.trigger) for url in embedded]
        if job.depth < self.args.depth:
            jobs += [Job(url, job.depth + 1, True, job.trigger) for url in linked]
        self.enqueue(jobs)

    def record(self, job: Job, started: float, status: int | None, size: int, error: str) -> None:
        if self.log is None:
            return
        entry = {"ts": round(started, 3), "ms": round((time.time() - started) * 1000, 1), "url": job.url,
                 "depth": job.depth, "page": job.page, "trigger": job.trigger.url, "status": status, "bytes": size}
        if error:
            entry["error"] = error
        with self.log_lock:
            self.log.write(json.dumps(entry) + "\n")

    # The whole.
    def run(self) -> None:
        workers = [threading.Thread(target=self.worker, daemon=True) for _ in range(self.args.workers)]
        for w in workers:
            w.start()
        tail = LogTail(Path(self.args.access_log))
        print(f"squid-prefetch: following {self.args.access_log}, fetching through "
              f"{self.args.proxy[0]}:{self.args.proxy[1]} from {self.args.source_address}", flush=True)
        last_report = time.monotonic()
        while not self.stop_requested:
            for raw in tail.new_lines():
                line = parse_line(raw.decode("utf-8", errors="replace"))
                if line is not None:
                    self.on_line(line)
            if time.monotonic() - last_report >= self.args.report_every:
                last_report = time.monotonic()
                self.report()
            time.sleep(0.05)
        self.stop.set()
        with self.cond:
            self.cond.notify_all()
        deadline = time.monotonic() + self.args.timeout  # one fetch's timeout for all of them, not one each
        for w in workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        self.report()
        if self.log is not None:
            self.log.close()

    def report(self) -> None:
        c = self.counts
        print(f"squid-prefetch: {c['triggers']} pages seen, {c['fetches']} fetches, {c['bytes']} bytes, "
              f"{c['skipped_recent']} skipped as recent, {c['skipped_budget']} over budget, {c['dropped']} dropped, "
              f"{len(self.queue)} queued", flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spe_tools.squid_prefetch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--proxy", type=parse_hostport, required=True, help="HOST:PORT of the Squid it warms")
    p.add_argument("--access-log", required=True, help="that Squid's access log (the kind's format)")
    p.add_argument("--source-address", default="127.0.0.2",
                   help="the address it fetches from, by which it knows its own lines (default 127.0.0.2)")
    p.add_argument("--depth", type=int, default=1, help="clicks ahead: 0 = the client page's embedded objects "
                   "only; 1 = also the pages it links to, with theirs (default 1)")
    p.add_argument("--rate", type=float, default=20.0, help="fetches per second at most (default 20)")
    p.add_argument("--budget-kb", type=int, default=2048, help="KiB fetched per client page at most (default 2048)")
    p.add_argument("--workers", type=int, default=4, help="fetches at once (default 4)")
    p.add_argument("--queue", type=int, default=1000, help="fetches waiting at most; the oldest go first (1000)")
    p.add_argument("--recent", type=parse_duration, default=300.0,
                   help="a URL fetched, or asked for by a client, this recently is not fetched (default 5m)")
    p.add_argument("--timeout", type=parse_duration, default=30.0, help="per fetch (default 30s)")
    p.add_argument("--report-every", type=parse_duration, default=10.0, help="a count line this often (10s)")
    p.add_argument("--log", help="one JSON line per fetch here")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.depth < 0 or args.rate <= 0 or args.budget_kb < 1 or args.workers < 1 or args.queue < 1:
        parser.error("--depth must be 0 or more; --rate, --budget-kb, --workers and --queue positive")
    agent = Agent(args)
    # Not agent.stop.set(): Event.set takes the lock that the main thread may hold inside Event.wait when
    # the handler runs, and the agent would never stop.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: setattr(agent, "stop_requested", True))
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
