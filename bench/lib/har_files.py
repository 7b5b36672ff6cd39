"""Large made-up HAR files, written entry by entry (never whole in memory), for measuring the HAR origin and the HAR
replay on recordings of hundreds of MB: one loopback host, `entries` distinct GETs 1 ms apart, each answered 200
with a base64 body of `body_kb` (bytes that do not compress, as images are), every fourth one text. The headers are
a browser's; nothing else varies, so what is measured is the reading and the serving, not the content."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from spe_tools.workload.har.archive import format_time

STARTED = 1795867200.0  # 2026-11-28 12:00 UTC
HOST = "localhost:8080"
REQUEST_HEADERS = [("Host", HOST), ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0"),
                   ("Accept", "*/*"), ("Accept-Encoding", "gzip, deflate, br"), ("Accept-Language", "en-GB,en")]


def body(i: int, size: int) -> bytes:
    """`size` bytes of entry i: a SHA-256 chain, which no coding compresses."""
    seed = hashlib.sha256(str(i).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size] if i % 4 else (f"text {i} " * (size // 8 + 1)).encode()[:size]


def entry(i: int, body_kb: int) -> dict:
    data = body(i, body_kb * 1024)
    text, encoding = (data.decode(), {}) if i % 4 == 0 else (base64.b64encode(data).decode(), {"encoding": "base64"})
    return {"startedDateTime": format_time(STARTED + i / 1000), "time": 3,
            "request": {"method": "GET", "url": f"http://{HOST}/obj/{i}", "httpVersion": "HTTP/1.1",
                        "headers": [{"name": n, "value": v} for n, v in REQUEST_HEADERS], "queryString": [],
                        "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "Content-Type", "value": "text/plain" if i % 4 == 0 else "image/png"},
                                     {"name": "Cache-Control", "value": "max-age=3600"},
                                     {"name": "Content-Length", "value": str(len(data))}],
                         "cookies": [], "content": {"size": len(data), "mimeType": "image/png", "text": text,
                                                    **encoding},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(data)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 2}}


def entries_for(size_mb: float, body_kb: int) -> int:
    """About how many entries make a file of `size_mb` MiB: three bodies in four are base64 (4/3 of their bytes),
    the fourth text; some 1.1 KB of JSON around each."""
    return max(1, int(size_mb * 2**20 / (body_kb * 1024 * 1.25 + 1100)))


def write_har_entries(path: Path, count: int, body_kb: int) -> None:
    with open(path, "w") as f:
        f.write('{"log": {"version": "1.2", "creator": {"name": "SPE bench", "version": "1.2"}, "entries": [\n')
        for i in range(count):
            f.write(("," if i else "") + json.dumps(entry(i, body_kb)) + "\n")
        f.write("]}}\n")


def write_big_har(path: Path, size_mb: float, body_kb: int = 64) -> int:
    """A HAR of about `size_mb` at `path`; its number of entries."""
    count = entries_for(size_mb, body_kb)
    write_har_entries(path, count, body_kb)
    return count


def write_access_log(path: Path, count: int, body_kb: int) -> None:
    """The same requests as write_har_entries' as a Squid access.log (native format), for `./spe replay`."""
    with open(path, "w") as f:
        for i in range(count):
            f.write(f"{STARTED + i / 1000:.3f}      0 127.0.0.1 TCP_MISS/200 {body_kb * 1024} GET "
                    f"http://{HOST}/obj/{i} - HIER_DIRECT/127.0.0.1 image/png\n")
