"""Hand-made run directories for the repro tests: the records of requests for one URL (with the origin's reply
the Collector fetched, and each proxy's leg), and a run directory with its lab.json and lab.toml."""

from __future__ import annotations

import json
from pathlib import Path

from spe_tools.rundir.layout import RunDir

URL = "http://localhost:40001/obj?cc=max-age%3D600"
T0 = 1795000000.25


def leg(name: str, violations: list | None = None, advisories: list | None = None) -> dict:
    return {"name": name, "result": "OK", "status": 200, "bytes": 5,
            "cache": {"violations": violations or [], "advisories": advisories or [], "reused": bool(violations)}}


def record(rid: int, ts: float, url: str = URL, method: str = "GET", headers: dict | None = None,
           origin: dict | None = None, status: int = 200, nbytes: int = 5, legs: list | None = None,
           origin_fields: str | None = None, interim: tuple[int, ...] = (), origin_connection: str = "",
           revalidated: bool = False, validated_length: int | None = None) -> dict:
    """`revalidated`: the Collector served its stored copy after the origin's 304 during this request (`origin`:
    its fields as that 304 updated them; `validated_length`: the Content-Length that 304 carried)."""
    collector = {"status": status, "bytes": nbytes,
                 "cache": {"violations": [], "reused": origin is None or revalidated}}
    if origin is not None:
        collector["cache"]["origin"] = origin
    if origin_fields is not None:
        collector["cache"]["origin_fields"] = origin_fields
    if origin_connection:
        collector["cache"]["origin_connection"] = origin_connection
    if validated_length is not None:
        collector["cache"]["validated_length"] = validated_length
    if interim:
        collector["interim"] = [{"at_us": 1000 * i, "status": s} for i, s in enumerate(interim)]
    return {"id": rid, "ts": ts, "method": method, "url": url, "request_headers": headers or {},
            "collector": collector, "proxies": legs or [leg("nginx"), leg("sq")]}


ORIGIN_1 = {"cache-control": "max-age=600", "date": "Tue, 24 Nov 2026 02:31:37 GMT", "etag": '"v1"'}
ORIGIN_2 = {"cache-control": "max-age=60", "date": "Tue, 24 Nov 2026 02:31:40 GMT", "etag": '"v2"',
            "last-modified": "Tue, 24 Nov 2026 01:00:00 GMT"}


def make_run(path: Path, records: list[dict], lab_toml: bool = True) -> Path:
    path.mkdir()
    RunDir(path).multiplier_log.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"partial')
    lab = {"collector": {"kind": "spe", "uncacheable_ttl_s": 60, "replay_timing": True, "cache_mb": 32},
           "multiplier": {"mode": "sequential", "legs": "parallel"},
           "proxies": {"nginx": {"kind": "nginx", "port": 1234}, "sq": {"kind": "squid", "port": 1235},
                       "ats": {"kind": "trafficserver", "port": 1236, "prefetch": True, "caches": True}}}
    RunDir(path).lab_json.write_text(json.dumps(lab))
    if lab_toml:
        RunDir(path).lab_toml.write_text('name = "x"\n[origin]\nkind = "none"\n'
                                       '[[proxy]]\nname = "nginx"\nkind = "nginx"\ncache_mb = 16\n'
                                       '[[proxy]]\nname = "sq"\nkind = "squid"\n')
    return path
