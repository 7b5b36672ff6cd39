"""What every exported entry takes from a record whichever reply it shows: the request as the record keeps it, and
a measure's times as HAR timings."""

from __future__ import annotations

from spe_tools.workload.har.archive import HarRequest

PRESENT = "(present)"  # what the record keeps of an Authorization or a Cookie (docs/log-format.md)
NO_BODY_METHODS = ("GET", "HEAD")  # requests without a body: any other may have had one the log does not keep
BODY_NOT_KEPT = "the body is not kept: the record has its size (content.size) and MD5 (_spe.md5)"
REQUEST_KEPT = ("the record keeps the request fields caches decide by (request_headers), no others and no body")


def record_request(record: dict) -> HarRequest:
    """The record's request: its method, URL and version, the fields it keeps (Authorization and Cookie only as
    "(present)", never their values)."""
    headers = list((record.get("request_headers") or {}).items())
    said = [REQUEST_KEPT]
    if secret := [name for name, value in headers if value == PRESENT]:
        said.append(f"{', '.join(secret)}: only that the request had one ({PRESENT})")
    method = str(record.get("method", ""))
    return HarRequest(method, str(record.get("url", "")), str(record.get("version") or "HTTP/1.1"), headers,
                      body_size=0 if method in NO_BODY_METHODS else -1, comment="; ".join(said))


def _ms(us: float) -> float:
    return round(us / 1000, 3)


def measure_timings(measure: dict) -> tuple[dict[str, float], float]:
    """HAR timings of a measure (the Collector's or a leg's) and the entry's time, in ms. `connect` is
    connect_us (-1 for a kept-alive connection, which the record says with 0), `wait` the time to the first
    reply byte less it (sending the request included: `send` is 0), `receive` the rest to the last byte; -1
    where the record has no time."""
    connect_us, ttfb_us, total_us = (measure.get(k) for k in ("connect_us", "ttfb_us", "total_us"))
    timings = {"connect": _ms(connect_us) if connect_us else -1, "send": 0,
               "wait": _ms(ttfb_us - (connect_us or 0)) if ttfb_us is not None else -1,
               "receive": _ms(total_us - ttfb_us) if ttfb_us is not None and total_us is not None else -1}
    total = _ms(total_us) if total_us is not None else sum(v for v in timings.values() if v > 0)
    return timings, total
