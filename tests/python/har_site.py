"""A small recorded site, as a browser's DevTools would export it, for the HAR origin's tests.

Two hosts (https://shop.example and its CDN), recorded on 2024-06-01 from 12:00:00 UTC: a page with two cookies,
no-cache and an invalid Expires; a stylesheet with max-age and an ETag, fetched again later with If-None-Match
(a recorded 304); an image with Last-Modified and Expires; a script sent gzip-encoded over HTTP/2 whose body
DevTools kept decoded (lower-case names, a ":status" pseudo-field, the encoded Content-Length); a stock counter
asked twice with two answers; a POST; an image whose body the export left out; a request the browser blocked.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from spe_tools.workload.har.archive import HarEntry, HarRequest, HarResponse, write_har

STARTED = 1717243200.0  # 2024-06-01 12:00:00 UTC: the recording's first startedDateTime
SHOP, CDN = "https://shop.example", "https://cdn.shop.example"
PAGE = (b'<!doctype html><link rel="stylesheet" href="/static/site.css"><img src="https://cdn.shop.example/img/'
        b'logo.png"><script src="https://cdn.shop.example/js/app.js"></script><h1>Shop</h1>\n')
CSS = b"body { font-family: sans-serif; color: #223; }\n" * 20
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Er"
                       "kJggg==")  # one pixel
JS = b"(function () { document.querySelector('h1').textContent += ' is open'; })();\n" * 30
FILLER_SIZE = 1234  # the left-out body's content.size
CSS_ETAG = '"css-v1"'
LOGO_MODIFIED = "Wed, 22 May 2024 08:00:00 GMT"  # ten days before the recording
WAIT_MS = {"page": 40.0, "css": 12.0, "logo": 8.0, "js": 15.0, "stock": 60.0}


def _get(at: float, url: str, status: int, headers: list[tuple[str, str]], body: bytes | None, wait: float,
         request_headers: list[tuple[str, str]] | None = None, size: int = -1, reason: str = "OK",
         method: str = "GET", request_body: bytes | None = None) -> HarEntry:
    return HarEntry(STARTED + at, HarRequest(method, url, headers=request_headers or [], body=request_body),
                    HarResponse(status, reason, headers=headers, body=body,
                                body_size=len(body) if body is not None else size),
                    time_ms=wait + 5, wait_ms=wait)


def entries() -> list[HarEntry]:
    return [
        _get(0.0, f"{SHOP}/", 200, [
            ("Date", "Sat, 01 Jun 2024 12:00:00 GMT"), ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Length", str(len(PAGE))), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
            ("Keep-Alive", "timeout=5"), ("Cache-Control", "no-cache"), ("Expires", "0"),
            ("Set-Cookie", "session=s3cr3t; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark; Path=/")],
             PAGE, WAIT_MS["page"]),
        _get(0.2, f"{SHOP}/static/site.css", 200, [
            ("Date", "Sat, 01 Jun 2024 12:00:00 GMT"), ("Content-Type", "text/css"),
            ("Cache-Control", "public, max-age=3600"), ("ETag", CSS_ETAG), ("Transfer-Encoding", "chunked")],
             CSS, WAIT_MS["css"]),
        _get(0.3, f"{CDN}/img/logo.png", 200, [
            ("date", "Sat, 01 Jun 2024 12:00:01 GMT"), ("content-type", "image/png"),
            ("last-modified", LOGO_MODIFIED), ("expires", "Sat, 01 Jun 2024 13:00:01 GMT"), ("age", "17")],
             PNG, WAIT_MS["logo"]),
        _get(0.4, f"{CDN}/js/app.js", 200, [
            (":status", "200"), ("date", "Sat, 01 Jun 2024 12:00:01 GMT"),
            ("content-type", "application/javascript"), ("content-encoding", "gzip"), ("content-length", "123"),
            ("cache-control", "public, max-age=86400"), ("etag", 'W/"js-1"'), ("vary", "Accept-Encoding")],
             JS, WAIT_MS["js"], reason=""),
        _get(0.5, f"{CDN}/img/banner.jpg", 200, [
            ("date", "Sat, 01 Jun 2024 12:00:01 GMT"), ("content-type", "image/jpeg"),
            ("cache-control", "max-age=600")], None, 3.0, size=FILLER_SIZE),
        _get(0.6, "https://ads.example/track.gif", 0, [], None, 0.0, reason=""),  # blocked by the browser
        _get(1.0, f"{SHOP}/api/stock?item=7", 200, [
            ("Date", "Sat, 01 Jun 2024 12:00:01 GMT"), ("Content-Type", "application/json"),
            ("Cache-Control", "no-store")], b'{"item": 7, "left": 3}', WAIT_MS["stock"]),
        _get(2.0, f"{SHOP}/api/cart", 201, [
            ("Date", "Sat, 01 Jun 2024 12:00:02 GMT"), ("Content-Type", "application/json"),
            ("Cache-Control", "no-store")], b'{"cart": [7]}', 20.0, reason="Created", method="POST",
             request_headers=[("Content-Type", "application/x-www-form-urlencoded")], request_body=b"item=7"),
        _get(5.0, f"{SHOP}/api/stock?item=7", 200, [
            ("Date", "Sat, 01 Jun 2024 12:00:05 GMT"), ("Content-Type", "application/json"),
            ("Cache-Control", "no-store")], b'{"item": 7, "left": 2}', WAIT_MS["stock"]),
        _get(9.0, f"{SHOP}/static/site.css", 304, [
            ("Date", "Sat, 01 Jun 2024 12:00:09 GMT"), ("Cache-Control", "public, max-age=3600"),
            ("ETag", CSS_ETAG)], None, 4.0, request_headers=[("If-None-Match", CSS_ETAG)],
             reason="Not Modified"),
    ]


def write_site(path: Path) -> Path:
    write_har(path, entries(), creator="WebInspector")
    return path



def both_sides(runs: Path, name: str, har: str, kinds: list[str], duration_s: int, timeout: float,
               ) -> tuple[dict, list[dict]]:
    """`./spe lab run` of a lab that puts the recording runs/`har` on both sides (the HAR origin serves it, the
    HAR replay sends it) of the patched Collector, a proxy of each kind (16 MB of cache) and the dummy; the
    replay's summary and the Multiplier's records."""
    from labsupport import lab_cli

    proxies = "".join(f'[[proxy]]\nname = "{k}"\nkind = "{k}"\ncache_mb = 16\n' for k in kinds)
    (runs / "lab.toml").write_text(
        f'name = "{name}"\n[collector]\nkind = "spe"\n[origin]\nkind = "har"\nhar = ["{har}"]\n'
        f'[multiplier]\ntimeout_s = 20\n[workload]\nkind = "replay"\nfiles = ["{har}"]\n'
        f'duration_s = {duration_s}\n{proxies}[[proxy]]\nname = "dummy"\nkind = "dummy"\n')
    result = lab_cli("run", str(runs / "lab.toml"), "--runs-dir", str(runs), "--no-report", timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    (rundir,) = runs.glob(f"*-{name}")
    return (json.loads((rundir / "workload.json").read_text()),
            [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()])
