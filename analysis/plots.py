"""Figures of a run. Each function returns a matplotlib Figure; the report's section (`Figures`) draws them
only when an output that shows them is written (the PNG files, report.html), each once, as PNG bytes."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterator, Mapping

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.records import COLLECTOR  # noqa: E402
from analysis.report_data import FIGURES  # noqa: E402
from analysis.section import BEST, RunData, Section  # noqa: E402

CDF_POINTS = 2000


def _delivered(results: pl.DataFrame, name: str) -> pl.DataFrame:
    return results.filter((pl.col("name") == name) & pl.col("status").is_not_null() & pl.col("error").is_null()
                          & pl.col("total_us").is_not_null())


def latency_cdf(results: pl.DataFrame, names: list[str]) -> Figure:
    """ROPE's Figures 7 and 8: cumulative distribution of response times, log-scale time axis."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for name in [COLLECTOR, *names]:
        times = _delivered(results, name)["total_us"].sort()
        if times.len() == 0:
            continue
        # At most CDF_POINTS steps per curve: a million-request run plots as fast as a small one.
        step = max(1, times.len() // CDF_POINTS)
        index = list(range(step - 1, times.len(), step))
        if index[-1] != times.len() - 1:
            index.append(times.len() - 1)
        xs = (times.gather(index) / 1000).to_list()
        ax.step(xs, [(i + 1) / times.len() for i in index], where="post", label=name,
                linewidth=2.0 if name == COLLECTOR else 1.3)
    ax.set_xscale("log")
    ax.set_xlabel("response time (ms, log scale)")
    ax.set_ylabel("fraction of responses")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("Cumulative distribution of response times")
    fig.tight_layout()
    return fig


def latency_over_time(results: pl.DataFrame, names: list[str], buckets: int = 60) -> Figure:
    """Median response time and request rate over about `buckets` time buckets (at least 10 ms each)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    start = results["ts"].min() if results["ts"].null_count() < results.height else None
    bucket_s = max(0.01, (results["ts"].max() - start) / buckets) if start is not None else 1.0
    for name in [COLLECTOR, *names]:
        part = _delivered(results, name).drop_nulls("ts")
        if start is None or part.height == 0:
            continue
        per = (part.with_columns(((pl.col("ts") - start) // bucket_s * bucket_s).alias("t"))
               .group_by("t").agg(pl.col("total_us").median().alias("median"), pl.len().alias("n")).sort("t"))
        top.plot(per["t"], per["median"] / 1000, label=name, marker="." if per.height < 30 else None)
        if name == COLLECTOR:
            bottom.bar(per["t"], per["n"] / bucket_s, width=bucket_s * 0.9)
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
        results, proxies, rows = run.records.results, list(run.records.proxies), [dict(r) for r in run.rows[1:]]
        self._draw: dict[str, Callable[[], Figure]] = {
            "latency_cdf.png": lambda: latency_cdf(results, proxies),
            "latency_over_time.png": lambda: latency_over_time(results, proxies),
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


SECTION = Section(FIGURES, "Figures", question=BEST, compute=Figures, template="sections/figures.html.j2",
                  context=lambda rep: {"pngs": {name: base64.b64encode(png).decode()
                                                for name, png in rep.figures.items()}})
