"""A [[proxy]] table of the lab file: its keys (each with its default and range) and the parsed ProxySpec.

Each kind (spe_tools/lab/definition/kinds.py) lists the keys it takes; the model
(spe_tools/lab/definition/model.py) reads a table into a ProxySpec with them. Both import this module, which
imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from spe_tools.lab.definition.options import Address, Option, PortList

# The keys of a [[proxy]] table (docs/lab-file.md); each kind lists those it takes.
PORT = Option("port", 0, 0, 65535)  # where the proxy listens (0 = a free port)
COLLECTOR_PORT = Option("collector_port", 0, 0, 65535)  # every kind: its Collector port (0 = a free port)
# every kind: the Collector sends on its port at most this many KiB/s (0: no limit), a bound on a prefetcher
COLLECTOR_LIMIT_KBPS = Option("collector_limit_kbps", 0, 0, 10 * 1024 * 1024)
# every kind: the proxy it is a twin of (same engine, no prefetching): its prefetching gain is paired against it
TWIN_OF = Option("twin_of", "")
CACHE_MB = Option("cache_mb", 64, 1, 65536)
# Traffic Server 9.2 (Debian 12) crashed (SIGSEGV) at its first request with a 4 or an 8 MB
# disk cache; 16 MB runs
TS_CACHE_MB = Option("cache_mb", 64, 16, 65536)
HAPROXY_CACHE_MB = Option("cache_mb", 64, 1, 4095)  # HAProxy's total-max-size is at most 4095 MB
# haproxy: the longest it keeps a copy, whatever the copy's own lifetime (its cache's max-age; HAProxy's own
# default, 60 s, would cut the hour the synthetic origin's objects are fresh for)
MAX_AGE_S = Option("max_age_s", 3600, 1, 365 * 86400)
PREFETCH = Option("prefetch", False)
PREFETCH_COUNT = Option("prefetch_count", 2, 1, 100)
# The synthetic origin's numbered sequences: seq/<s>/<n>.jpg -> seq/<s>/<n+1>.jpg, matched against the
# path without its leading slash. '.' stands where the path has a '/' (no '/' inside the pattern, whose
# own delimiter it is), and \D keeps the number whole (else a greedy [^.]* would leave only its last digit).
PREFETCH_PATTERN = Option("prefetch_pattern", r"/(seq.[^.]*\D)(\d+)(\.jpg)/$1{$2+1}$3/")
# squid-prefetch: its agent's limits (spe_tools/squid_prefetch/agent.py)
PREFETCH_DEPTH = Option("prefetch_depth", 1, 0, 5)  # clicks ahead of the client's page
PREFETCH_RATE = Option("prefetch_rate", 20.0, 0.1, 10000)  # fetches per second at most
PREFETCH_BUDGET_KB = Option("prefetch_budget_kb", 2048, 1, 1024 * 1024)  # KiB fetched per client page at most
CACHE_PORTS = PortList("cache_ports", ())  # apache: extra origin ports to cache (CacheEnable needs each one)
ADDRESS = Address("address", None)  # external: HOST:PORT of the user's proxy



@dataclass(frozen=True)
class ProxySpec:
    name: str
    kind: str
    port: int = PORT.default  # external: taken from address
    cache_mb: int = CACHE_MB.default
    prefetch: bool = PREFETCH.default
    prefetch_count: int = PREFETCH_COUNT.default
    prefetch_pattern: str = PREFETCH_PATTERN.default
    cache_ports: tuple[int, ...] = CACHE_PORTS.default
    prefetch_depth: int = PREFETCH_DEPTH.default
    prefetch_rate: float = PREFETCH_RATE.default
    prefetch_budget_kb: int = PREFETCH_BUDGET_KB.default
    max_age_s: int = MAX_AGE_S.default
    host: str = "127.0.0.1"
    collector_port: int = COLLECTOR_PORT.default  # fix it for an external proxy
    twin_of: str = TWIN_OF.default  # a prefetching proxy's non-prefetching twin (analysis/sections/prefetch.py)
    collector_limit_kbps: int = COLLECTOR_LIMIT_KBPS.default  # its Collector port's pace (0: none)
