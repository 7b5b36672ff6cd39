"""A run's report: the per-proxy table, figures and mismatches, as text, CSV, JSON and HTML."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from analysis import plots
from analysis.bypass import bypass_lines, find_bypasses, withhold_cache_figures
from analysis.cache_behaviour import cache_columns, collector_usage
from analysis.cache_records import load_judged_run
from analysis.cache_rules import cache_rule_sections, cache_rules_text, evidence_rows, judge_noise
from analysis.collector_log import strips_query_terms
from analysis.mismatches import mismatch_summary
from analysis.noise import beside_floor, floor_line, floor_text, load_lab_json, mismatch_pct, noise_floor, pair_pct
from analysis.paired import pairs, pairs_text, ranking, ranking_line
from analysis.prefetch import PREFETCH_COLUMNS, prefetch_columns, prefetch_text
from analysis.records import COLLECTOR, find_log
from analysis.run_collector import run_collector
from analysis.stats import RESULT_CLASSES, proxy_table

# summary.csv / summary.json columns, in order (documented in docs/report.md).
COLUMNS = ["name", "requests", "responses", "ok_pct", *[f"{c.lower()}_pct" for c in RESULT_CLASSES[1:]],
           "latency_mean_ms", "latency_mean_ci_low_ms", "latency_mean_ci_high_ms", "latency_median_ms",
           "latency_median_ci_low_ms", "latency_median_ci_high_ms", "latency_p90_ms", "latency_p99_ms",
           "connect_mean_ms", "ttfb_mean_ms", "ttfb_median_ms", "queued_median_ms", "queued_p99_ms", "body_bytes",
           "collector_requests", "hit_ratio",
           "byte_hit_ratio", "rel_bandwidth_received", "rel_bandwidth_sent",
           # how far to trust the row (analysis/noise.py, analysis/bypass.py)
           "mismatch_pct", "noise_floor_pct", "noise_floor", "noise_pair_disagreement_pct", "bypassed_replies",
           # what the cache-rule judge found (analysis/cache_rules.py); empty for a log without its verdicts
           "cache_reused", "cache_violations", "cache_violation_rules", "cache_advisories",
           # prefetching seen from the proxy's Collector port (analysis/prefetch.py)
           *PREFETCH_COLUMNS]


@dataclass
class Report:
    run: Path
    rows: list[dict]
    requests: int
    bad_lines: int
    bad_collector_lines: int
    mismatches: dict
    figures: dict
    collector_ports: dict  # port name -> PortUsage (empty without lab.json / access.log)
    skipped: dict = field(default_factory=dict)  # requests with no fan-out, by reason (the records' note)
    held: dict = field(default_factory=dict)  # the client held back for the slowest proxy (records.client_holds)
    https: dict = field(default_factory=dict)  # what went through CONNECT (analysis/records.py https_counts)
    noise: dict = field(default_factory=dict)  # the noise floor SPE measured (analysis/noise.py)
    bypass: dict = field(default_factory=dict)  # proxy -> evidence it bypassed its Collector port
    # what the cache-rule judge found, per source (analysis/cache_rules.py); empty for a log without it
    cache_rules: list[dict] = field(default_factory=list)
    bad_cache_lines: int = 0  # lines naming a `cache` object that could not be read
    pairs: list[dict] = field(default_factory=list)  # paired differences per pair of proxies (analysis/paired.py)
    ranking: list[list[str]] = field(default_factory=list)  # tiers, fastest first; a tier is a tie


class Progress:
    """Phase lines with elapsed time on stderr, for runs big enough to make a user wait."""

    def __init__(self, enabled: bool):
        self.enabled, self.start = enabled, time.perf_counter()

    def __call__(self, what: str) -> None:
        if self.enabled:
            print(f"spe report: {time.perf_counter() - self.start:6.1f} s  {what}", file=sys.stderr, flush=True)


def _log_size(run: Path) -> int:
    files = [run] if run.is_file() else [*run.glob("*.jsonl"), *run.glob("*.rope.log")]
    return sum(f.stat().st_size for f in files)


def build_report(run: Path, progress: Progress | None = None) -> Report:
    run = Path(run)
    progress = progress or Progress(False)
    progress(f"reading {_log_size(run) / 1e6:,.0f} MB of Multiplier log")
    records, verdicts, bad_cache_lines = load_judged_run(find_log(run))
    progress(f"{records.requests:,} records ({records.bad_lines} unreadable lines); computing tables")
    usage = collector_usage(run, records.results) if run.is_dir() else None
    rows = proxy_table(records.results, records.proxies)
    prefetch = prefetch_columns(run, records.proxies) if run.is_dir() else {}
    for row in rows:
        own = prefetch.get(row["name"], {})
        row.update(cache_columns(records.results, row["name"], usage[0] if usage else None,
                                 own.get("prefetch_requests") or 0, own.get("prefetch_bytes") or 0))
    noise, bypass = trust_columns(run, records, usage[0] if usage else None, rows)
    capture_dir = run / "captures" if run.is_dir() and (run / "captures").is_dir() else None
    progress("tallying the cache-rule verdicts")
    cache_rules = cache_rule_sections(verdicts, records.proxies, find_log(run), capture_dir)
    add_cache_rule_columns(rows, cache_rules)
    for row in rows[1:]:
        row.update(prefetch.get(row["name"], {}))
    pair_list = pairs(records.results, records.proxies)
    tiers = ranking(rows, pair_list)
    progress("drawing figures")
    figures = {
        "latency_cdf.png": plots.latency_cdf(records.results, records.proxies),
        "latency_over_time.png": plots.latency_over_time(records.results, records.proxies),
        "hit_ratio_vs_latency.png": plots.hit_ratio_vs_latency(rows[1:]),
        "bandwidth_vs_latency.png": plots.bandwidth_vs_latency(rows[1:]),
    }
    return Report(run, rows, records.requests, records.bad_lines, usage[1] if usage else 0,
                  mismatch_summary(records.results, capture_dir, run_collector(run)), figures,
                  usage[0] if usage else {}, skipped=records.skipped, held=records.held, https=records.https,
                  noise=noise, bypass=bypass, cache_rules=cache_rules, bad_cache_lines=bad_cache_lines,
                  pairs=pair_list, ranking=tiers)


def skipped_text(rep: Report) -> str:
    """Why client requests outnumber each proxy's: the fan-outs that did not happen, by reason."""
    if not rep.skipped:
        return ""
    reasons = "; ".join(f"{n} {reason}" for reason, n in rep.skipped.items())
    return f"{sum(rep.skipped.values())} fan-outs skipped, so no proxy saw them ({reasons})"


def queueing_text(rep: Report) -> str:
    """SPE's own queueing, so the proxies' times are not mistaken for it: each proxy's legs' wait inside SPE
    before they were sent (median / p99), and how often the client was held back for the slowest proxy (only
    in logs of issue 27's first Multiplier, 2026-11-26: today's never holds the client)."""
    waits = [r for r in rep.rows[1:] if r.get("queued_median_ms") is not None]
    held = rep.held.get("requests", 0)
    if not held and not waits:  # a log written before the Multiplier recorded either
        return ""
    parts = []
    if held:
        parts.append(f"client held back before {held} request(s) ({rep.held.get('total_s', 0):.2f} s in all)")
    if waits:
        parts.append("legs' wait to be sent, median/p99 ms: " + ", ".join(
            f"{r['name']} {_fmt(r['queued_median_ms'])}/{_fmt(r['queued_p99_ms'])}" for r in waits))
    return "SPE's queueing (in no proxy's times): " + "; ".join(parts)


def https_text(rep: Report) -> str:
    """HTTPS in the run, when it had CONNECTs: how much was read inside intercepted tunnels and multiplied."""
    h = rep.https
    if not h:
        return ""
    text = (f"HTTPS: {h['requests']:,} requests read inside {h['intercepted_tunnels']:,} intercepted TLS tunnels, "
            f"multiplied like HTTP; {h['opaque_tunnels']:,} CONNECT tunnels passed unread")
    return text + (f"; {h['failed_handshakes']:,} TLS handshakes failed" if h["failed_handshakes"] else "")


def trust_columns(run: Path, records, usage: dict | None, rows: list[dict]) -> tuple[dict, dict]:
    """The noise floor beside every proxy's mismatch rate, and no cache figures for a proxy that
    bypassed its Collector port (they would come from a port it did not use)."""
    lab_json = load_lab_json(run) if run.is_dir() else None
    noise = noise_floor(records.results, lab_json)
    bypass = find_bypasses(records.results, records.proxies, usage, strips_query_terms(lab_json))
    withhold_cache_figures(rows, bypass)
    for row in rows[1:]:
        found = bypass.get(row["name"], {})
        row.update(mismatch_pct=mismatch_pct(row), noise_floor_pct=noise["floor_pct"],
                   noise_floor=beside_floor(row, noise), noise_pair_disagreement_pct=pair_pct(noise, row["name"]),
                   bypassed_replies=max(found.get("unstamped", 0), found.get("silent_port_replies", 0)))
    return noise, bypass


def trust_text(rep: Report) -> list[str]:
    """What the text report and `./spe demo` print under the per-proxy table."""
    return [*bypass_lines(rep.bypass), *(floor_text(rep.rows, rep.noise) if rep.noise else [])]


def port_rows(rep: Report) -> list[dict]:
    """Calamaris-like summary of the Collector's access.log, one row per Collector port."""
    return [{"port": name, "requests": u.requests, "hits": u.hits, "misses": u.misses,
             "hit_pct": 100 * u.hits / u.requests if u.requests else None, "bytes_out": u.bytes_to_client,
             "bytes_in": u.bytes_from_client, "codes": dict(sorted(u.codes.items()))}
            for name, u in rep.collector_ports.items()]


def port_text(rep: Report) -> str:
    rows = port_rows(rep)
    if not rows:
        return ""
    unreadable = f", {rep.bad_collector_lines} unreadable lines" if rep.bad_collector_lines else ""
    out = [f"Collector per port (its access.log{unreadable}):",
           f"  {'port':20}{'requests':>10}{'hits':>8}{'misses':>8}{'hit %':>8}{'bytes out':>12}{'bytes in':>10}  codes"]
    for r in rows:
        out.append(f"  {r['port']:20}{r['requests']:>10}{r['hits']:>8}{r['misses']:>8}{_fmt(r['hit_pct'], 1):>8}"
                   f"{r['bytes_out']:>12}{r['bytes_in']:>10}  " + ", ".join(f"{k} {v}" for k, v in r["codes"].items()))
    return "\n".join(out)


def _fmt(v: object, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


TEXT_COLUMNS = [("responses", "responses"), ("ok_pct", "match %"), ("latency_mean_ms", "mean ms"),
                ("latency_median_ms", "median ms"), ("latency_p90_ms", "p90 ms"), ("latency_p99_ms", "p99 ms"),
                ("hit_ratio", "hit ratio"), ("byte_hit_ratio", "byte hit"), ("rel_bandwidth_received", "rel. bw in"),
                ("rel_bandwidth_sent", "rel. bw out")]


def text_table(rows: list[dict]) -> str:
    width = max(len(r["name"]) for r in rows) + 2
    head = f"{'':{width}}" + "".join(f"{label:>12}" for _, label in TEXT_COLUMNS)
    lines = [head]
    for r in rows:
        lines.append(f"{r['name']:{width}}" + "".join(f"{_fmt(r.get(k)):>12}" for k, _ in TEXT_COLUMNS))
    return "\n".join(lines)


def text_report(rep: Report) -> str:
    out = [f"SPE report: {rep.run}", f"{rep.requests} client requests"
           + (f", {rep.bad_lines} unreadable log line(s) skipped" if rep.bad_lines else "")
           + (f"; {skipped_text(rep)}" if rep.skipped else ""), *([https_text(rep)] if rep.https else []), "",
           text_table(rep.rows), *([queueing_text(rep)] if queueing_text(rep) else []),
           *trust_text(rep), "", f"Mismatches: {rep.mismatches['total']}"]
    for name, counts in rep.mismatches["by_proxy"].items():
        out.append(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if rep.mismatches["headers"]:
        out.append("  headers differing most: " + ", ".join(f"{h} ({n})" for h, n in rep.mismatches["headers"]))
    for cls, items in rep.mismatches["examples"].items():
        for e in items:
            if e.get("hint"):
                out.append(f"  {cls} request {e['id']} ({e['proxy']}): {e['hint']}")
    if rep.pairs:
        out += ["", *pairs_text(rep.pairs, rep.ranking)]
    if prefetch_text(rep.rows):
        out += ["", *prefetch_text(rep.rows)]
    if rep.cache_rules:
        out += ["", *cache_rules_text(rep.cache_rules), *judge_noise(rep.cache_rules, rep.noise)]
    if port_text(rep):
        out += ["", port_text(rep)]
    return "\n".join(out) + "\n"


def _png_b64(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode()


def _escape(value: object) -> Markup:
    """Every value the page shows, escaped as html.escape does (the page's text has always been)."""
    return value if isinstance(value, Markup) else Markup(html.escape(str(value)))


HTML = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True,
                   undefined=StrictUndefined, finalize=_escape)


def _capture_link(out: Path | None):
    """A capture file as the page links it: relative to where the page is written, when known."""
    return lambda capture: Path(os.path.relpath(capture, out)).as_posix() if out else capture.resolve().as_uri()


def html_report(rep: Report, out: Path | None = None) -> str:
    return HTML.get_template("report.html.j2").render(
        rep=rep, columns=TEXT_COLUMNS, fmt=_fmt, skipped=skipped_text(rep), https=https_text(rep),
        queueing=queueing_text(rep), ranking=ranking_line(rep.ranking) if rep.ranking else "",
        prefetchers=[r for r in rep.rows[1:] if r.get("prefetch_requests")],
        evidence_rows=evidence_rows,
        judge_noise=judge_noise(rep.cache_rules, rep.noise), capture_link=_capture_link(out),
        warnings=bypass_lines(rep.bypass), floor=floor_line(rep.noise) if rep.noise else "", ports=port_rows(rep),
        figures={name: _png_b64(fig) for name, fig in rep.figures.items()})


def add_cache_rule_columns(rows: list[dict], sections: list[dict]) -> None:
    """The flat columns of summary.csv / summary.json from each source's cache-rule tally."""
    tallies = {s["name"]: s["summary"] for s in sections}
    for row in rows:
        if t := tallies.get(row["name"]):
            row.update(cache_reused=t["reused"], cache_violations=sum(t["violations"].values()),
                       cache_violation_rules=" ".join(f"{rule}:{n}" for rule, n in t["violations"].items()),
                       cache_advisories=sum(t["advisories"].values()))


def cache_rules_summary(rep: Report, rows: list[dict]) -> dict:
    """Each proxy row gains its `cache_rules`; the Collector's go top-level. Nothing for a log without them."""
    if not rep.cache_rules:
        return {}
    tallies = {s["name"]: s["summary"] for s in rep.cache_rules}
    for row in rows:
        if row["name"] != COLLECTOR and row["name"] in tallies:
            row["cache_rules"] = tallies[row["name"]]
    return {"collector_cache_rules": tallies.get(COLLECTOR), "bad_cache_lines": rep.bad_cache_lines}


def write_report(rep: Report, out: Path, formats: set[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in rep.figures.items():
        fig.savefig(out / name, dpi=100)
        written.append(out / name)
    if "csv" in formats:
        with (out / "summary.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rep.rows)
        written.append(out / "summary.csv")
    if "json" in formats:
        summary_rows = [{c: r.get(c) for c in COLUMNS} for r in rep.rows]
        summary = {"run": str(rep.run), "requests": rep.requests, "bad_lines": rep.bad_lines,
                   "proxies": summary_rows, "mismatches": rep.mismatches,
                   "collector_ports": port_rows(rep), "bad_collector_lines": rep.bad_collector_lines,
                   "skipped_fanouts": rep.skipped, "client_held": rep.held, "https": rep.https, "pairs": rep.pairs,
                   "ranking": rep.ranking,
                   "noise_floor": rep.noise, "bypass": rep.bypass,
                   **cache_rules_summary(rep, summary_rows)}
        (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        written.append(out / "summary.json")
    if "text" in formats:
        (out / "report.txt").write_text(text_report(rep))
        written.append(out / "report.txt")
    if "html" in formats:
        (out / "report.html").write_text(html_report(rep, out))
        written.append(out / "report.html")
    for fig in rep.figures.values():
        plt.close(fig)
    return written
