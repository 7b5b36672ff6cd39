"""Figures of a run. Each function returns a matplotlib Figure; the report's section (`Figures`) draws them
only when an output that shows them is written (the PNG files, report.html), each once, as PNG bytes."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.order_statistics import bucket_of  # noqa: E402
from analysis.readers.records import COLLECTOR  # noqa: E402
from analysis.section import BEST, RunData, Section  # noqa: E402
from analysis.stats_sql import MS_PER_US, TIMED  # noqa: E402
from spe_tools.rundir.log_schema import sql_string  # noqa: E402

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "figures"  # the section's name: its anchor, and the key of its data in Report.data


def of(report: Report) -> Mapping[str, bytes]:
    """PNG file name -> contents, each drawn when first read (this section's data)."""
    return report.data.get(NAME, {})


CDF_POINTS = 2000


def _sources(names: list[str]) -> str:
    """The SQL list of the Collector and the proxies in `names`."""
    return ", ".join(sql_string(name) for name in [COLLECTOR, *names])


def cdf_points(tables: ReplyQueries, names: list[str]) -> dict[str, tuple[list[float], list[float]]]:
    """Per source with delivered replies: steps of its response times' cumulative distribution (ms, fraction), at
    most CDF_POINTS of them: at the longest time of each narrow band of times (0.1 % wide), the exact fraction of
    replies at or below it. One aggregate, so a ten-million-request run plots in the memory of a small one
    (analysis/order_statistics.py says why not a sort)."""
    bands: dict[str, list[tuple[float, int]]] = {}
    for name, x, c in tables.rows(f"""
            SELECT name, max(x), count(*) FROM (
                SELECT name, total_us::DOUBLE AS x, {bucket_of("total_us::DOUBLE", 1000)} AS b FROM results
                WHERE {TIMED} AND name IN ({_sources(names)}))
            GROUP BY name, b ORDER BY name, b"""):
        bands.setdefault(name, []).append((x, c))
    points: dict[str, tuple[list[float], list[float]]] = {}
    for name, steps in bands.items():
        below = list(accumulate(c for _, c in steps))
        n, every = below[-1], max(1, len(steps) // CDF_POINTS)
        kept = [i for i in range(len(steps)) if (i + 1) % every == 0 or i == len(steps) - 1]
        points[name] = ([steps[i][0] * MS_PER_US for i in kept], [below[i] / n for i in kept])
    return points


def latency_cdf(points: dict[str, tuple[list[float], list[float]]], names: list[str]) -> Figure:
    """ROPE's Figures 7 and 8: cumulative distribution of response times, log-scale time axis."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for name in [COLLECTOR, *names]:
        if name not in points:
            continue
        ax.step(*points[name], where="post", label=name, linewidth=2.0 if name == COLLECTOR else 1.3)
    ax.set_xscale("log")
    ax.set_xlabel("response time (ms, log scale)")
    ax.set_ylabel("fraction of responses")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("Cumulative distribution of response times")
    fig.tight_layout()
    return fig


@dataclass
class OverTime:
    """Per source, per time bucket (its start, s since the first request): the median response time (µs) and how
    many responses; `bucket_s` the buckets' width."""

    bucket_s: float
    series: dict[str, tuple[list[float], list[float], list[int]]]


def over_time(tables: ReplyQueries, names: list[str], buckets: int = 60) -> OverTime:
    """About `buckets` time buckets (at least 10 ms each) over the run, and each source's median (exact: its two
    middle order statistics, from one sort) and count per bucket. A reply's bucket is its time times the reciprocal
    of the width, as polars divides: the last reply of the run falls in the last bucket, as it did."""
    start, end = tables.row("SELECT min(ts), max(ts) FROM results")
    if start is None:
        return OverTime(1.0, {})
    bucket_s = max(0.01, (end - start) / buckets)
    found: dict[tuple[str, float], dict] = {}
    for name, t, n, rank, x in tables.rows(f"""
            SELECT name, t, n, rank, total_us FROM (
                SELECT name, t, total_us, row_number() OVER (PARTITION BY name, t ORDER BY total_us) - 1 AS rank,
                       count(*) OVER (PARTITION BY name, t) AS n
                FROM (SELECT name, total_us, floor((ts - ?) * ?) * ? AS t FROM results
                      WHERE {TIMED} AND ts IS NOT NULL AND name IN ({_sources(names)})))
            WHERE rank IN ((n - 1) // 2, n // 2) ORDER BY name, t, rank""", [start, 1 / bucket_s, bucket_s]):
        found.setdefault((name, t), {"n": n})[rank] = x
    series: dict[str, tuple[list[float], list[float], list[int]]] = {}
    for (name, t), bucket in found.items():
        n = bucket["n"]
        ts, medians, counts = series.setdefault(name, ([], [], []))
        ts.append(t)
        medians.append((bucket[(n - 1) // 2] + bucket[n // 2]) / 2)
        counts.append(n)
    return OverTime(bucket_s, series)


def latency_over_time(data: OverTime, names: list[str]) -> Figure:
    """Median response time and request rate over time, from over_time's buckets."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    bucket_s = data.bucket_s
    for name in [COLLECTOR, *names]:
        if name not in data.series:
            continue
        ts, medians, counts = data.series[name]
        top.plot(ts, [m * MS_PER_US for m in medians], label=name, marker="." if len(ts) < 30 else None)
        if name == COLLECTOR:
            bottom.bar(ts, [n * (1 / bucket_s) for n in counts], width=bucket_s * 0.9)  # as polars divides
    top.set_ylabel("median response time (ms)")
    top.set_yscale("log")
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize="small")
    top.grid(True, alpha=0.3)
    bottom.set_ylabel(f"client requests/s ({bucket_s:.3g} s buckets)")
    bottom.set_xlabel("time since the first request (s)")
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def _proxy_points(rows: list[dict], x: str, y: str, x_scale: float, labels: tuple[str, str, str]) -> Figure:
    """Each proxy as a labelled point (x_scale times its `x` column, its `y` column); rows lacking
    either are left out. labels: the x axis, the y axis, the title."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for row in rows:
        if row.get(x) is None or row.get(y) is None:
            continue
        point = (row[x] * x_scale, row[y])
        ax.scatter(*point)
        ax.annotate(row["name"], point, textcoords="offset points", xytext=(5, 5), fontsize="small")
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.grid(True, alpha=0.3)
    ax.set_title(labels[2])
    fig.tight_layout()
    return fig


def bandwidth_vs_latency(rows: list[dict]) -> Figure:
    """ROPE's trade-off: each proxy as a point, the bandwidth it used (bytes it fetched from its
    Collector port, relative to the direct path's) against its mean response time. A prefetcher buys
    latency with bandwidth; a proxy below and left of another serves users better for less."""
    return _proxy_points(rows, "rel_bandwidth_received", "latency_mean_ms", 1,
                         ("bandwidth used (relative to the direct path)", "mean response time (ms)",
                          "Bandwidth versus latency"))


def hit_ratio_vs_latency(rows: list[dict]) -> Figure:
    """Each proxy as a point: hit ratio against median response time."""
    return _proxy_points(rows, "hit_ratio", "latency_median_ms", 100,
                         ("hit ratio (%)", "median response time (ms)", "Hit ratio versus latency"))


def png_bytes(fig: Figure) -> bytes:
    """The figure as a PNG file's contents (what savefig writes to NAME.png), the figure then closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


class Figures(Mapping[str, bytes]):
    """The report's figures, PNG file name -> contents, each drawn on first use and kept: matplotlib takes most
    of a small report's time, and the tables, the text, summary.csv/json and the lab's printout need none. The
    per-proxy rows are copied when the section computes (once they are complete: a proxy that bypassed its
    Collector port has no hit ratio to plot), so a figure drawn later shows the same numbers."""

    def __init__(self, run: RunData):
        proxies, rows = list(run.records.proxies), [dict(r) for r in run.rows[1:]]
        # The figures' data is read now, while the run's tables are open: a few thousand points, not the replies.
        points, buckets = cdf_points(run.tables, proxies), over_time(run.tables, proxies)
        self._draw: dict[str, Callable[[], Figure]] = {
            "latency_cdf.png": lambda: latency_cdf(points, proxies),
            "latency_over_time.png": lambda: latency_over_time(buckets, proxies),
            "hit_ratio_vs_latency.png": lambda: hit_ratio_vs_latency(rows),
            "bandwidth_vs_latency.png": lambda: bandwidth_vs_latency(rows)}
        self._pngs: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self._pngs:
            self._pngs[name] = png_bytes(self._draw[name]())
        return self._pngs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._draw)

    def __len__(self) -> int:
        return len(self._draw)


SECTION = Section(NAME, "Figures", question=BEST, compute=Figures, template="sections/figures.html.j2",
                  context=lambda rep: {"pngs": {name: base64.b64encode(png).decode()
                                                for name, png in of(rep).items()}},
                  files=of)
