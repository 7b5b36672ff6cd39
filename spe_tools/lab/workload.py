"""The lab's built-in workload: Poisson arrivals of a mixed request stream through a proxy.

Used by `[workload] kind = "builtin"` until the workloads' load client (spe_tools.workload.load)
is in place. It targets the synthetic origin's URL space (spe_tools/mini_origin.py): cacheable
objects with a skewed popularity, chunked replies, uncacheable objects, HEAD and POST.

Run: python -m spe_tools.lab.workload --proxy 127.0.0.1:PORT --origin http://localhost:PORT
"""

from __future__ import annotations

import argparse
import http.client
import random
import sys
import threading
import time
from collections import Counter


def next_request(rng: random.Random, origin: str) -> tuple[str, str, bytes]:
    """(method, absolute URL, body) of one request."""
    roll = rng.random()
    obj = int(rng.paretovariate(1.2)) % 40
    # Cacheable objects carry no query: Traffic Server's prefetcher fetches /c/N+1 without one.
    if roll < 0.60:
        return "GET", f"{origin}/c/{obj}", b""
    if roll < 0.75:
        return "GET", f"{origin}/chunked/{obj}?size={5000 + obj * 300}", b""
    if roll < 0.85:
        return "GET", f"{origin}/u/{obj}", b""
    if roll < 0.95:
        return "HEAD", f"{origin}/c/{obj}", b""
    return "POST", f"{origin}/post", f"form={obj}".encode()


class Client:
    """One keep-alive connection to the proxy; reconnects after an error."""

    def __init__(self, host: str, port: int, timeout_s: float = 30.0):
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.conn: http.client.HTTPConnection | None = None

    def send(self, method: str, url: str, body: bytes) -> int:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            # An absolute URL in the request line: http.client takes Host from it, as a proxy client must.
            self.conn.request(method, url, body=body or None)
            reply = self.conn.getresponse()
            reply.read()
            if reply.will_close:
                self.close()
            return reply.status
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def run(host: str, port: int, origin: str, rate: float, duration_s: float, clients: int, seed: int,
        max_requests: int | None = None) -> Counter:
    """Drive the proxy for duration_s (or max_requests); returns counts of statuses and errors."""
    outcome: Counter = Counter()
    lock = threading.Lock()
    end = time.monotonic() + duration_s
    budget = [max_requests if max_requests is not None else -1]

    def take() -> bool:
        with lock:
            if budget[0] == 0:
                return False
            budget[0] -= 1
            return True

    def worker(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        client = Client(host, port)
        next_at = time.monotonic()
        while True:
            next_at += rng.expovariate(rate / clients)
            if next_at > end or not take():
                break
            time.sleep(max(0.0, next_at - time.monotonic()))
            method, url, body = next_request(rng, origin)
            try:
                key = str(client.send(method, url, body))
            except (OSError, http.client.HTTPException) as e:
                key = type(e).__name__
            with lock:
                outcome[key] += 1
        client.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=duration_s + 120)
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proxy", required=True, help="HOST:PORT of the Multiplier")
    parser.add_argument("--origin", required=True, help="origin base URL, e.g. http://localhost:8000")
    parser.add_argument("--rate", type=float, default=20, help="requests per second, all clients (default 20)")
    parser.add_argument("--duration", type=float, default=60, help="seconds (default 60)")
    parser.add_argument("--clients", type=int, default=4, help="keep-alive connections (default 4)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, help="stop after this many requests")
    args = parser.parse_args()
    host, _, port = args.proxy.rpartition(":")
    started = time.monotonic()
    outcome = run(host, int(port), args.origin.rstrip("/"), args.rate, args.duration, args.clients, args.seed,
                  args.requests)
    total = sum(outcome.values())
    print(f"workload: {total} requests in {time.monotonic() - started:.1f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcome.items())), flush=True)
    return 0 if total and all(k.isdigit() for k in outcome) else 1


if __name__ == "__main__":
    sys.exit(main())
