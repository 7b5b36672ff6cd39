"""Where the proxies disagreed with the Collector, and examples to tell a caching bug from noise."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import polars as pl

from analysis.records import COLLECTOR

MISMATCH_CLASSES = ["STATUS_CODE_MISMATCH", "HEADER_MISMATCH", "BODY_MISMATCH", "NO_RESPONSE", "PROTOCOL_ERROR"]


UNCACHEABLE = re.compile(r"^cache-control:.*\b(no-store|private|no-cache)\b", re.I | re.M)


def _collector_header(capture: str) -> str:
    return capture.split("## Collector reply header", 1)[-1].split("## Collector body", 1)[0]


def likely_cause(cls: str, example: dict) -> str | None:
    """A first guess that helps tell a caching bug from noise (from the capture when there is one)."""
    capture = example.get("capture", "")
    if cls == "BODY_MISMATCH" and capture and UNCACHEABLE.search(_collector_header(capture)):
        return ("the Collector's reply was uncacheable: a proxy that served it from its cache has a caching bug "
                "(with a stock Squid Collector, which refetches uncacheable replies, this is expected noise)")
    if cls == "PROTOCOL_ERROR" and example.get("error") == "extra data" and example["method"] == "HEAD":
        return "the proxy answered HEAD with a body"
    if cls == "HEADER_MISMATCH" and set(example["mismatched_headers"]) <= {"expires", "last-modified", "etag"}:
        return "validators or expiry differ: the proxy may be serving a stale copy"
    if cls == "NO_RESPONSE":
        return f"the proxy did not answer ({example.get('error')}): down, overloaded or hanging"
    return None


def mismatch_summary(results: pl.DataFrame, capture_dir: Path | None, examples_per_class: int = 3) -> dict:
    """Counts by class and proxy, the headers and URLs that differ most, and examples per class."""
    bad = results.filter((pl.col("name") != COLLECTOR) & (pl.col("result") != "OK"))
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
                       "mismatched_headers": row["mismatched_headers"] or []}
            capture = capture_dir / f"{row['id']:08d}-{row['name']}.txt" if capture_dir else None
            if capture is not None and capture.exists():
                example["capture"] = capture.read_bytes()[:6000].decode("utf-8", "replace")
            example["hint"] = likely_cause(cls, example)
            examples.setdefault(cls, []).append(example)
    return {"by_proxy": by_proxy, "headers": headers.most_common(10), "urls": urls.most_common(10),
            "examples": examples, "total": bad.height}
