"""Where the proxies disagreed with the Collector, and examples to tell a caching bug from noise."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import polars as pl

from analysis.records import COLLECTOR
from analysis.report_data import MISMATCHES
from analysis.run_collector import RunCollector, collector_of_run
from analysis.section import BUGS, RunData, Section

# The classes examples are kept for: every one but OK. OTHER_FETCH is listed for its examples, but counted in
# no total of mismatches (analysis/stats.py NOT_MISMATCHES).
MISMATCH_CLASSES = ["STATUS_CODE_MISMATCH", "HEADER_MISMATCH", "BODY_MISMATCH", "NO_RESPONSE", "PROTOCOL_ERROR",
                    "REPLAY_REFUSED", "OTHER_FETCH"]


UNCACHEABLE = re.compile(r"^cache-control:.*\b(no-store|private|no-cache)\b", re.I | re.M)


def _collector_header(capture: str) -> str:
    return capture.split("## Collector reply header", 1)[-1].split("## Collector body", 1)[0]


def uncacheable_body_cause(collector: RunCollector) -> str:
    """A body mismatch on an uncacheable reply: a caching bug only if the proxy got the same copy."""
    if collector.shares_uncacheable:
        return (f"the Collector's reply was uncacheable and this run used {collector.name}, which hands the same "
                "copy to every proxy: a proxy with another body served an older copy from its cache, a caching bug")
    if collector.kind == "spe":
        return (f"the Collector's reply was uncacheable and this run used {collector.name} with uncacheable_ttl_s = "
                "0, so it fetched the reply again for each proxy: a different body is expected here")
    if collector.kind:
        return (f"the Collector's reply was uncacheable and this run used {collector.name}, which fetches "
                "uncacheable replies again for each proxy: a different body is expected here")
    return ("the Collector's reply was uncacheable; the run directory does not record which Collector ran (no "
            "lab.json): with the patched one a proxy that served it from its cache has a caching bug, with a "
            "stock Squid Collector, which fetches such replies again, a different body is expected")


def own_fetch_cause(example: dict) -> str | None:
    """The Collector stamps every origin fetch (X-SPE-Fetch) on its reply and on every copy of it: a proxy
    reply with another stamp than the client's came from an origin fetch the proxy made on its own."""
    mine, reference = example.get("fetch"), example.get("reference_fetch")
    if not mine or not reference or mine == reference:
        return None
    how = (" (a HEAD it forwarded as a GET, as nginx and Varnish do, is such a fetch)"
           if example["method"] == "HEAD" else "")
    return (f"the proxy's reply came from another origin fetch than the client's ({mine.split(';')[0]} instead of "
            f"{reference.split(';')[0]}): the proxy fetched it on its own{how}; for an uncacheable reply a "
            "different fetch may well differ")


def likely_cause(cls: str, example: dict, collector: RunCollector) -> str | None:
    """A first guess that helps tell a caching bug from noise (from the capture when there is one)."""
    capture = example.get("capture", "")
    if cls in ("HEADER_MISMATCH", "BODY_MISMATCH") and (cause := own_fetch_cause(example)):
        return cause
    if cls == "BODY_MISMATCH" and capture and UNCACHEABLE.search(_collector_header(capture)):
        return uncacheable_body_cause(collector)
    if cls == "PROTOCOL_ERROR" and example.get("error") == "extra data" and example["method"] == "HEAD":
        return "the proxy answered HEAD with a body"
    if cls == "HEADER_MISMATCH" and set(example["mismatched_headers"]) <= {"expires", "last-modified", "etag"}:
        return "validators or expiry differ: the proxy may be serving a stale copy"
    if cls == "OTHER_FETCH":
        return ("a faithful copy of another origin fetch than the client's (the first reply a client got from "
                "it): the headers listed differ between the two fetches, not through the proxy; not a mismatch")
    if cls == "NO_RESPONSE":
        return f"the proxy did not answer ({example.get('error')}): down, overloaded or hanging"
    return None


def mismatch_summary(results: pl.DataFrame, capture_dir: Path | None, collector: RunCollector,
                     examples_per_class: int = 3) -> dict:
    """Counts by class and proxy, the headers and URLs that differ most, and examples per class
    (their hints depend on the run's `collector`)."""
    reference_fetch = results.filter(pl.col("name") == COLLECTOR).select("id", pl.col("fetch").alias("ref_fetch"))
    bad = results.filter((pl.col("name") != COLLECTOR) & (pl.col("result") != "OK")).join(
        reference_fetch, on="id", how="left")
    by_proxy: dict[str, dict[str, int]] = {}
    for name, result, n in bad.group_by("name", "result").len().sort("name", "result").iter_rows():
        by_proxy.setdefault(name, {})[result] = n
    headers = Counter(h for hs in bad["mismatched_headers"].drop_nulls().to_list() for h in hs)
    urls = Counter(bad["url"].to_list())
    examples: dict[str, list[dict]] = {}
    for cls in MISMATCH_CLASSES:
        rows = bad.filter(pl.col("result") == cls).head(examples_per_class)
        for row in rows.iter_rows(named=True):
            example = {"id": row["id"], "proxy": row["name"], "method": row["method"], "url": row["url"],
                       "status": row["status"], "error": row["error"],
                       "mismatched_headers": row["mismatched_headers"] or [],
                       "fetch": row["fetch"], "reference_fetch": row["ref_fetch"]}
            capture = capture_dir / f"{row['id']:08d}-{row['name']}.txt" if capture_dir else None
            if capture is not None and capture.exists():
                example["capture"] = capture.read_bytes()[:6000].decode("utf-8", "replace")
            example["hint"] = likely_cause(cls, example, collector)
            examples.setdefault(cls, []).append(example)
    return {"by_proxy": by_proxy, "headers": headers.most_common(10), "urls": urls.most_common(10),
            "examples": examples, "total": bad.filter(pl.col("result") != "OTHER_FETCH").height,
            "collector_kind": collector.kind}


def mismatch_text(summary: dict) -> list[str]:
    """report.txt's mismatches: counts per proxy and class, the headers differing most, the examples' hints."""
    out = [f"Mismatches: {summary['total']}"]
    for name, counts in summary["by_proxy"].items():
        out.append(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if summary["headers"]:
        out.append("  headers differing most: " + ", ".join(f"{h} ({n})" for h, n in summary["headers"]))
    for cls, items in summary["examples"].items():
        for e in items:
            if e.get("hint"):
                out.append(f"  {cls} request {e['id']} ({e['proxy']}): {e['hint']}")
    return out


def _summarise(run: RunData) -> dict:
    return mismatch_summary(run.records.results, run.capture_dir, collector_of_run(run.run))


SECTION = Section(MISMATCHES, "Mismatches", question=BUGS, compute=_summarise,
                  details_text=lambda rep: mismatch_text(rep.mismatches), template="sections/mismatches.html.j2",
                  summary=lambda rep, rows: {"mismatches": rep.mismatches})
