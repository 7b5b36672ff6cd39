"""A run directory as a HAR 1.2 document: one entry per record, in time order, with the reply the Collector gave
(the client's view) or, for a proxy, what that proxy answered; the whole run, or one request and the requests for
its URL before it (as a repro case has them). docs/report.md, "Export as a HAR".

Entries are made only of what the run kept: the record (docs/log-format.md) and, where the Multiplier captured a
mismatch of that request, the capture's reply header and first body bytes. What neither keeps is left out and
each entry's comments say so; nothing is made up."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.export.collector_reply import collector_response
from spe_tools.export.exchange import measure_timings, record_request
from spe_tools.export.proxy_reply import proxy_response
from spe_tools.export.source import ExportError, Source, proxies, read_source
from spe_tools.rundir.captures import Capture, read_capture
from spe_tools.rundir.layout import CAPTURES
from spe_tools.rundir.records import request_sequence
from spe_tools.workload.har.archive import HarEntry, HarPage, HarResponse, write_har

PAGE_ID = "run"
NO_URL = "no http(s) URL (a CONNECT tunnel, an unreadable request)"
TIMINGS = ("timings from the record: connect = connect_us (-1 for a kept-alive connection), wait = ttfb_us less "
           "connect_us (sending included: send 0), receive = total_us less ttfb_us, time = total_us; -1 where not "
           "measured")


@dataclass
class Export:
    entries: list[HarEntry]
    page: HarPage
    comment: str
    left_out: Counter = field(default_factory=Counter)  # why -> records without an entry
    captured: int = 0  # entries whose reply came from a capture


def _leg(record: dict, proxy: str) -> dict | None:
    return next((leg for leg in record.get("proxies") or () if leg.get("name") == proxy), None)


def _selected(source: Source, proxy: str | None, request: int | None) -> list[dict]:
    """The records to export, in time order; an ExportError for a proxy or request the run does not have."""
    if proxy is not None and proxy not in (names := proxies(source)):
        raise ExportError(f"no proxy {proxy!r} in {source.run} (proxies: {', '.join(names) or 'none'})")
    if request is None:
        return sorted(source.records, key=lambda r: (r.get("ts") or 0, r.get("id") or 0))
    target = next((r for r in source.records if r.get("id") == request), None)
    if target is None:
        raise ExportError(f"no record {request} in {source.log} ({len(source.records)} records)")
    if not _has_url(target):
        raise ExportError(f"record {request} has {NO_URL}: no HAR entry to make")
    if proxy is not None and _leg(target, proxy) is None:
        legs = ", ".join(str(leg.get("name")) for leg in target.get("proxies") or ()) or "none: no fan-out"
        raise ExportError(f"proxy {proxy!r} has no leg in request {request} (legs: {legs})")
    return request_sequence(source.records, target)


def _has_url(record: dict) -> bool:
    return str(record.get("url", "")).startswith(("http://", "https://"))


def _extension(record: dict, measure: dict, **more: object) -> dict:
    cache = measure.get("cache") or {}
    spe = {"id": record.get("id"), **more, "md5": measure.get("md5"), "status": measure.get("status"),
           "interim": [i.get("status") for i in measure.get("interim") or ()], "fetch": measure.get("fetch"),
           "provenance": cache.get("provenance"), "reused": cache.get("reused"),
           "violations": cache.get("violations"), "advisories": cache.get("advisories")}
    return {"_spe": {k: v for k, v in spe.items() if v not in (None, [], {})}}


@dataclass
class View:
    """One record's reply as an entry shows it: the measure its times come from, the response, the _spe members
    of the view, and whether the reply came from a capture."""
    measure: dict
    response: HarResponse
    more: dict
    captured: bool


def _capture(source: Source, record: dict, proxy: str | None) -> tuple[Capture | None, str]:
    """The record's capture (for a proxy, that proxy's; else any, all hold the Collector's reply) and its name."""
    files = source.captures.get(record.get("id", -1), {})
    file = files.get(proxy) if proxy is not None else next(iter(files.values()), None)
    return (read_capture(file), f"{CAPTURES}/{file.name}") if file else (None, "")


def _collector_view(source: Source, record: dict) -> View:
    capture, name = _capture(source, record, None)
    results = {str(leg.get("name")): leg.get("result") for leg in record.get("proxies") or ()}
    return View(record.get("collector") or {}, collector_response(record, capture, name, source.keep_secrets),
                {"client_status": record.get("client_status"), "note": record.get("note"), "results": results},
                capture is not None and capture.collector is not None)


def _proxy_view(source: Source, record: dict, proxy: str) -> View:
    capture, name = _capture(source, record, proxy)
    leg, collector = _leg(record, proxy) or {}, record.get("collector") or {}
    more = {"proxy": proxy, "result": leg.get("result"), "mismatched_headers": leg.get("mismatched_headers"),
            "error": leg.get("error_detail") or leg.get("error"), "queued_us": leg.get("queued_us"),
            "reference": {"status": collector.get("status"), "md5": collector.get("md5")}}
    return View(leg, proxy_response(record, leg, capture, name, source.comparison, source.keep_secrets), more,
                capture is not None and capture.proxy is not None)


def _entry(record: dict, view: View) -> HarEntry:
    timings, total = measure_timings(view.measure)
    return HarEntry(float(record.get("ts") or 0), record_request(record), view.response, total, timings["wait"],
                    str(record["client"]) if record.get("client") else None, PAGE_ID, timings=timings,
                    extensions=_extension(record, view.measure, **view.more))


def _page(source: Source, proxy: str | None, request: int | None, started: float) -> HarPage:
    whose = f"proxy {proxy}'s replies" if proxy else "the Collector's replies (the client's view)"
    which = f"request {request} and the requests for its URL before it" if request is not None else "every request"
    return HarPage(PAGE_ID, f"SPE run {source.run.name}: {which}, {whose}", started)


def _comment(source: Source, proxy: str | None, left_out: Counter) -> str:
    whose = (f"what proxy {proxy} answered (its leg of each record)" if proxy else
             "the Collector's reply to each request, which the client got")
    said = [f"SPE export of {source.run}: one entry per record of multiplier.jsonl in time order, {whose}; "
            "each entry's comments say what the record does not keep (bodies: their size and MD5 only, but a "
            "mismatch capture's first bytes), _spe has the record's id, result, MD5 and cache verdict", TIMINGS]
    said += [f"{count} record(s) left out: {why}" for why, count in sorted(left_out.items())]
    return "; ".join(said) + " (docs/report.md, Export as a HAR)"


def export_run(path: Path, proxy: str | None = None, request: int | None = None,
               keep_secrets: bool = False) -> Export:
    source = read_source(path, keep_secrets)
    entries: list[HarEntry] = []
    left_out: Counter = Counter()
    captured = 0
    for record in _selected(source, proxy, request):
        if not _has_url(record):
            left_out[NO_URL] += 1
        elif proxy is not None and _leg(record, proxy) is None:
            left_out[f"no leg of {proxy} (no fan-out)"] += 1
        else:
            view = _collector_view(source, record) if proxy is None else _proxy_view(source, record, proxy)
            entries.append(_entry(record, view))
            captured += view.captured
    started = entries[0].started if entries else 0.0
    return Export(entries, _page(source, proxy, request, started), _comment(source, proxy, left_out), left_out,
                  captured)


def write_export(export: Export, out: Path) -> None:
    write_har(out, export.entries, creator="SPE export", comment=export.comment, pages=[export.page])
