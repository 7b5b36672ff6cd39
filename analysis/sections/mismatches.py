"""Where the proxies disagreed with the Collector, and examples to tell a caching bug from noise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.readers.records import COLLECTOR
from analysis.readers.run_collector import RunCollector, collector_of_run
from analysis.section import BUGS, RunData, Section

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "mismatches"  # the section's name: its anchor, and the key of its data in Report.data


def of(report: Report) -> dict:
    """The mismatches' summary (this section's data)."""
    return report.data[NAME]


# The classes examples are kept for: every one but OK. OTHER_FETCH is listed for its examples, but counted in
# no total of mismatches (spe_tools/rundir/records.py NOT_MISMATCHES).

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


def _mismatched(tables: ReplyQueries) -> str:
    """The proxies' replies other than OK, each with the Collector's `fetch` stamp of the same request (ref_fetch)
    and its place in the log (o): a CTE `bad`. ("fetch" is quoted: FETCH is SQL.)"""
    return f"""WITH bad AS (
        SELECT r.*, c.ref_fetch, {tables.log_order} AS o FROM results r
        LEFT JOIN (SELECT run, id, "fetch" AS ref_fetch FROM results WHERE name = '{COLLECTOR}') c USING (run, id)
        WHERE r.name <> '{COLLECTOR}' AND r.result <> 'OK')"""


def _most_common(tables: ReplyQueries, value: str, source: str = "bad", n: int = 10) -> list[tuple]:
    """The `n` most frequent values of `value` over `source` (a FROM item of bad's rows, with their place `o`),
    ties in the order the log first names them (as Counter.most_common)."""
    return tables.rows(f"""{_mismatched(tables)}
        SELECT v, count(*) FROM (SELECT {value} AS v, o FROM {source}) GROUP BY v ORDER BY count(*) DESC, min(o)
        LIMIT {n}""")


def _examples(tables: ReplyQueries, per_class: int) -> list[dict]:
    """The first `per_class` replies of each class of MISMATCH_CLASSES, in the log's order."""
    columns = 'run, id, name, method, url, status, error, mismatched_headers, "fetch", ref_fetch, result'
    return tables.dicts(f"""{_mismatched(tables)}
        SELECT {columns} FROM (
            SELECT {columns}, o, row_number() OVER (PARTITION BY result ORDER BY o) AS nth FROM bad
            WHERE result IN ({", ".join(f"'{c}'" for c in MISMATCH_CLASSES)}))
        WHERE nth <= {per_class} ORDER BY o""")


def mismatch_summary(tables: ReplyQueries, capture_dirs: dict[str, Path | None], collector: RunCollector,
                     examples_per_class: int = 3) -> dict:
    """Counts by class and proxy, the headers and URLs that differ most, and examples per class
    (their hints depend on the run's `collector`)."""
    by_proxy: dict[str, dict[str, int]] = {}
    for name, result, n in tables.rows(f"{_mismatched(tables)} SELECT name, result, count(*) FROM bad "
                                       "GROUP BY ALL ORDER BY name, result"):
        by_proxy.setdefault(name, {})[result] = n
    headers = _most_common(tables, "h", "(SELECT u.h, struct_pack(r := o, k := u.k) AS o "
                                        "FROM bad, unnest(mismatched_headers) WITH ORDINALITY AS u(h, k))")
    examples: dict[str, list[dict]] = {}
    rows = _examples(tables, examples_per_class)
    for cls in MISMATCH_CLASSES:
        for row in (row for row in rows if row["result"] == cls):
            example = {"id": row["id"], "run": row["run"], "proxy": row["name"], "method": row["method"],
                       "url": row["url"], "status": row["status"], "error": row["error"],
                       "mismatched_headers": row["mismatched_headers"] or [],
                       "fetch": row["fetch"], "reference_fetch": row["ref_fetch"]}
            capture_dir = capture_dirs.get(row["run"])  # the example's own run's
            capture = capture_dir / f"{row['id']:08d}-{row['name']}.txt" if capture_dir else None
            if capture is not None and capture.exists():
                example["capture"] = capture.read_bytes()[:6000].decode("utf-8", "replace")
            example["hint"] = likely_cause(cls, example, collector)
            examples.setdefault(cls, []).append(example)
    total = tables.value(f"{_mismatched(tables)} SELECT count(*) FROM bad WHERE result <> 'OTHER_FETCH'")
    return {"by_proxy": by_proxy, "headers": headers, "urls": _most_common(tables, "url"),
            "examples": examples, "total": total, "collector_kind": collector.kind, "merged": len(capture_dirs) > 1}


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
                of = f" of {e['run']}" if summary.get("merged") else ""
                out.append(f"  {cls} request {e['id']}{of} ({e['proxy']}): {e['hint']}")
    return out


def _summarise(run: RunData) -> dict:
    return mismatch_summary(run.tables, {label: files.capture_dir for label, files in run.runs.items()},
                            collector_of_run(run.run))


SECTION = Section(NAME, "Mismatches", question=BUGS, compute=_summarise,
                  details_text=lambda rep: mismatch_text(of(rep)), template="sections/mismatches.html.j2",
                  summary=lambda rep, rows: {"mismatches": of(rep)})
