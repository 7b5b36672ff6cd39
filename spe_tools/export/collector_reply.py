"""The Collector's reply to a record's request as a HAR response (what the client got): from its mismatch capture
where one exists, else from the fields the record keeps.

The record keeps, of a reply the Collector fetched fresh from the origin, the values of the judged fields
(`collector.cache.origin`: cache-control, expires, date, last-modified, etag, vary, age) and the names of all its
fields (`collector.cache.origin_fields`), and of any reply its status, body size and MD5; never its body. A name
without a kept value is written with an empty value, and the response's comment says which."""

from __future__ import annotations

from spe_tools.export.captured import captured_response
from spe_tools.export.exchange import BODY_NOT_KEPT
from spe_tools.rundir.captures import Capture
from spe_tools.workload.har.archive import HarResponse


def _fields(cache: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """The reply's fields in the order the record names them, and the names whose values it does not keep."""
    judged = cache.get("origin") or {}
    names = list(dict.fromkeys([*(cache.get("origin_fields") or "").split(), *judged]))
    return [(name, judged.get(name, "")) for name in names], [n for n in names if n not in judged]


def _interim(collector: dict) -> str:
    interim = collector.get("interim") or []
    return ("interim responses before it: " + ", ".join(f"{i.get('status')} at {i.get('at_us', 0) / 1000:g} ms"
                                                        for i in interim)) if interim else ""


def _recorded(record: dict) -> HarResponse:
    collector = record.get("collector") or {}
    cache = collector.get("cache") or {}
    fields, unkept = _fields(cache)
    if collector.get("status") is None:
        why = collector.get("error_detail") or collector.get("error") or record.get("note") or "not recorded"
        said = [f"no reply from the Collector ({why}); the client got {record.get('client_status')}"]
    elif not fields:
        said = ["the record keeps the fields of a reply fetched fresh from the origin only: none of this one's"]
    else:
        said = ["the judged fields' values from the record (collector.cache.origin)"]
    if unkept:
        said.append(f"values not kept (written empty): {', '.join(unkept)}")
    said += filter(None, [_interim(collector)])
    status = collector.get("status")
    return HarResponse(status or 0, "", collector.get("http_version") or "", fields,
                       body_size=collector.get("bytes", -1) if status is not None else 0,  # no reply, no content
                       headers_size=collector.get("header_bytes") or -1, comment="; ".join(said),
                       content_comment=BODY_NOT_KEPT if status is not None else "no body: no reply")


def collector_response(record: dict, capture: Capture | None, capture_name: str,
                       keep_secrets: bool = False) -> HarResponse:
    collector = record.get("collector") or {}
    if capture is not None and capture.collector is not None:
        return captured_response(capture.collector, "the Collector's", capture_name, collector.get("header_bytes"),
                                 keep_secrets)
    return _recorded(record)
