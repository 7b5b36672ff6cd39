"""`./spe report --compare` reads each run only as far as its rows: the per-proxy table (with the hit ratios and the
prefetch columns they need) and the sections that change the columns it compares, no other section and no figure;
its rows are the whole reports' rows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_analysis import measure, paired_run, proxy, record
from test_prefetch import prefetch_run
from test_report_trust import PORTS, origin_fetch, topology, write_run

from analysis import sections
from analysis.cli import main as report_main
from analysis.compare import ROW_SECTIONS, compare_rows, compared_report
from analysis.report import build_report
from analysis.sections import bypass, figures


def bypass_run(path: Path) -> Path:
    """ats's Collector port saw no request while it answered every request the Collector fetched from the origin:
    the bypass section blanks its hit ratio and bandwidth."""
    records = [record(i, measure(), [proxy("squid"), proxy("ats")]) for i in range(1, 5)]
    log = [origin_fetch(i) for i in range(1, 5)] + [origin_fetch(1, 5001, "HIER_NONE/-", "TCP_MEM_HIT")]
    return write_run(path, records, topology({"squid": "squid", "ats": "trafficserver"}, ports=PORTS), log)


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    made = []
    for name, make in (("prefetch", prefetch_run), ("bypass", bypass_run), ("paired", paired_run)):
        (tmp_path / name).mkdir()
        made.append(make(tmp_path / name))
    return made


def test_compare_computes_only_the_sections_that_change_its_rows_and_draws_nothing(runs, tmp_path, monkeypatch):
    computed = []

    def spied(section):
        def compute(run):
            computed.append(section.name)
            return section.compute(run)
        return dataclasses.replace(section, compute=compute)

    def no_drawing(fig):
        raise AssertionError("a figure was drawn")

    monkeypatch.setattr(sections, "SECTIONS", tuple(spied(s) if s.compute else s for s in sections.SECTIONS))
    monkeypatch.setattr(figures, "png_bytes", no_drawing)
    out = tmp_path / "cmp"
    assert report_main(["--compare", *map(str, runs), "--out", str(out)]) == 0
    assert computed == [bypass.NAME] * len(runs)
    assert sorted(p.name for p in out.iterdir()) == ["compare.csv", "compare.json", "compare.txt"]
    assert not [p for p in tmp_path.rglob("*.png")]


@pytest.mark.parametrize("engine", ["duckdb", "memory"])
def test_compare_shows_the_whole_reports_rows(runs, engine):
    """The same rows as from every section computed; without the bypass section ats would keep a hit ratio its port
    cannot give, so ROW_SECTIONS is not empty for nothing; and the prefetcher's hit ratio leaves its prefetches out."""
    whole = compare_rows([build_report(run, engine=engine) for run in runs])
    assert compare_rows([compared_report(run, engine=engine) for run in runs]) == whole
    assert ROW_SECTIONS == (bypass.NAME,)
    assert compare_rows([build_report(run, engine=engine, computed=()) for run in runs]) != whole
    pf = next(r for r in whole if r["name"] == "pf" and r["run"] == str(runs[0]))
    assert pf["hit_ratio"] == pytest.approx(1 - 2 / 5)
