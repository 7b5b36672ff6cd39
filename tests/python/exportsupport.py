"""A hand-made run directory for the `./spe export` tests: records of every kind the export meets (a fresh origin
fetch, a Collector hit, a proxy's violation with the judge's evidence, a mismatch with its capture, a binary
captured body, a CONNECT tunnel, an unsafe request withheld from the proxies, a Collector that failed), written in
completion order, not time order, with the Multiplier's captures beside them."""

from __future__ import annotations

from pathlib import Path

from reprosupport import ORIGIN_1, T0, URL, leg, make_run, record

from spe_tools.rundir.layout import RunDir

OTHER = "http://localhost:40001/other"
DIGEST = "hmac:3cab3f9361aeab93"
SECRET = "session=the-users-own-cookie"  # as a --capture-secrets capture holds it: the export must not copy it
BINARY = bytes(range(256))  # no UTF-8: base64 in the HAR
AGE = {"rule": "age", "section": "4", "reason": "Age 0 s, but the copy was 2.0 s old"}
SERVED = {"age (as served)": "(none)", "date (as served)": "Tue, 24 Nov 2026 02:31:39 GMT",
          "cache-control": "max-age=600", "date": ORIGIN_1["date"]}


def timed(measure: dict, connect_us: int | None, ttfb_us: int | None, total_us: int | None, md5: str,
          header_bytes: int = 300) -> dict:
    measure.update(connect_us=connect_us, ttfb_us=ttfb_us, total_us=total_us, md5=md5, header_bytes=header_bytes,
                   http_version="HTTP/1.1")
    return measure


def _records() -> list[dict]:
    fresh = record(2, T0 + 1.0, headers={"authorization": "(present)", "accept": "text/html"}, origin=ORIGIN_1,
                   nbytes=7, origin_fields="date cache-control etag set-cookie content-type",
                   legs=[timed(leg("nginx"), 0, 900, 1000, "m1"),
                         {**timed(leg("sq"), 0, 500, 700, "m1"), "result": "HEADER_MISMATCH",
                          "mismatched_headers": ["etag"]}])
    timed(fresh["collector"], 1500, 4000, 5000, "m1")
    fresh["client"], fresh["version"], fresh["client_status"] = "127.0.0.1:5000", "HTTP/1.1", 200
    nginx_age = timed(leg("nginx", [AGE]), 0, 300, 400, "m1")
    nginx_age["cache"]["evidence"] = {"served": SERVED, "reference": {}, "request": {}}
    hit = record(3, T0 + 2.0, legs=[nginx_age, timed(leg("sq"), 0, 200, 250, "m1")])
    timed(hit["collector"], 0, 800, None, "m1")
    binary = record(4, T0 + 3.0, url=OTHER, origin={"cache-control": "no-store"}, nbytes=256,
                    legs=[{**timed(leg("nginx"), 0, 100, 200, "m2"), "result": "BODY_MISMATCH"},
                          timed(leg("sq"), 0, 100, 150, "m0")])
    post = record(5, T0 + 4.0, method="POST", origin={"cache-control": "no-store"}, status=201, nbytes=0,
                  legs=[{"name": "nginx", "result": "NOT_SENT", "status": None, "error": "not sent"},
                        {"name": "sq", "result": "NOT_SENT", "status": None, "error": "not sent"}])
    failed = {"id": 6, "ts": T0 + 5.0, "method": "GET", "url": OTHER, "client_status": 502, "note": "Collector failed",
              "collector": {"status": None, "bytes": 0, "error": "timeout", "error_detail": "no reply in 30 s"},
              "proxies": []}
    connect = {"id": 1, "ts": T0, "method": "CONNECT", "url": "localhost:443", "client_status": 200,
               "note": "CONNECT tunnel", "collector": {"status": None}, "proxies": []}
    return [fresh, connect, hit, binary, post, failed]  # completion order: id 1 ended after id 2


def capture_text(rid: int, proxy: str, url: str, collector: tuple[str, bytes, int],
                 reply: tuple[str, bytes, int]) -> bytes:
    """A capture as the Multiplier writes it (multiplier/src/log/mismatch_capture.cpp): each reply's header
    as received, then the first bytes of its body, stated as 'first N of M bytes'."""
    def part(who: str, header: str, head: bytes, total: int) -> bytes:
        return (f"\n## {who} reply header\n{header}\r\n\r\n\n## {who} body: first {len(head)} of {total} bytes, "
                f"md5 m\n").encode() + head + b"\n"
    return (f"# SPE mismatch capture\nrequest: {rid} GET {url} HTTP/1.1\nproxy: {proxy}\nresult: X\n"
            "mismatched headers: \nerror: none \n").encode() + part("Collector", *collector) + part("Proxy", *reply)


COLLECTOR_HEADER = ("HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nETag: \"v1\"\r\nContent-Type: text/plain\r\n"
                    f"Set-Cookie: {DIGEST}\r\nContent-Length: 7")
SQ_HEADER = f"HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nETag: \"v0\"\r\nSet-Cookie: {SECRET}\r\nAge: 1"


def write_captures(run: Path) -> None:
    captures = RunDir(run).captures
    captures.mkdir()
    RunDir(run).capture(2, "sq").write_bytes(capture_text(
        2, "sq", URL, (COLLECTOR_HEADER, b"abcdefg", 7), (SQ_HEADER, b"abcd", 7)))
    RunDir(run).capture(4, "nginx").write_bytes(capture_text(
        4, "nginx", OTHER, ("HTTP/1.1 200 OK\r\nCache-Control: no-store", BINARY, 256),
        ("HTTP/1.1 200 OK\r\nCache-Control: no-store", b"## Proxy reply header\n" + BINARY[:10], 256)))


def make_export_run(path: Path) -> Path:
    run = make_run(path, _records())
    write_captures(run)
    return run
