"""docs/benchmarks.md keeps one section per benchmark: a new run replaces its own section (bench/lib/doc.py).
Checked by what the code does, never by its source text: the helper on a sample document, each benchmark's
title and --write-docs, and benchmarks writing their sections into temporary copies of the doc."""

import argparse
import datetime
import importlib
import pkgutil
import sys
import types
from pathlib import Path

import pytest

import bench
from bench import ROOT
from bench.lib import doc as results_doc

DOC = """\
# Benchmarks

| target | latest | status |
|---|---|---|
| soak | flat | met |

## Soak — 2026-11-22

old soak table

## Tail isolation — 2026-11-23 21:35

old tail table

### Tail isolation: what the numbers say

old explanation

## Tail isolation: the fan-out on threads of its own — 2026-11-23 23:30

hand-written before/after

    ## not a heading: an indented code line

```
## not a heading either: inside a fence
```
"""


@pytest.fixture
def doc(tmp_path, monkeypatch):
    path = tmp_path / "benchmarks.md"
    path.write_text(DOC)
    monkeypatch.setattr(results_doc, "RESULTS", path)
    return path


def headings(path: Path) -> list[str]:
    in_fence = False
    found = []
    for line in path.read_text().splitlines():
        in_fence ^= line.startswith("```")
        if not in_fence and line.startswith("## "):
            found.append(line)
    return found


def test_a_new_run_replaces_its_own_section_in_place(doc):
    results_doc.publish("\n## Soak — 2026-11-24\n\nnew soak table\n", [], title="Soak", write=True)
    text = doc.read_text()
    assert "old soak table" not in text and "new soak table" in text
    assert headings(doc)[0] == "## Soak — 2026-11-24"  # where the old one was, not at the end
    assert text.startswith(DOC.split("## Soak")[0])  # the targets table above is kept


def test_running_twice_leaves_one_section(doc):
    for day in ("24", "25"):
        results_doc.publish(f"\n## Soak — 2026-11-{day}\n\nsoak of the {day}th\n", [], title="Soak", write=True)
    assert [h for h in headings(doc) if h.startswith("## Soak")] == ["## Soak — 2026-11-25"]
    assert "soak of the 24th" not in doc.read_text()


def test_the_section_ends_at_the_next_level_two_heading_and_sub_sections_go_with_it(doc):
    results_doc.publish("\n## Tail isolation — 2026-11-24 10:00\n\nnew tail table\n", [], title="Tail isolation",
                     write=True)
    text = doc.read_text()
    assert "old tail table" not in text and "old explanation" not in text
    # a hand-written section whose heading only starts with the same words is another section
    assert "hand-written before/after" in text
    assert "## not a heading: an indented code line" in text and "## not a heading either" in text
    assert headings(doc) == ["## Soak — 2026-11-22", "## Tail isolation — 2026-11-24 10:00",
                             "## Tail isolation: the fan-out on threads of its own — 2026-11-23 23:30"]


def test_a_benchmark_without_a_section_yet_is_added_at_the_end(doc):
    results_doc.publish("\n## Report speed — 2026-11-24\n\nfast\n", [], title="Report speed", write=True)
    assert headings(doc)[-1] == "## Report speed — 2026-11-24"
    assert doc.read_text().endswith("fast\n") and DOC.rstrip("\n") in doc.read_text()


def test_a_heading_with_a_detail_in_brackets_belongs_to_its_title(doc):
    doc.write_text(DOC + "\n## Multiplier overhead on loopback (1k; 0, 4 proxies) — 2026-11-22\n\nold\n")
    results_doc.publish("\n## Multiplier overhead on loopback (13k; 8 proxies) — 2026-11-24\n\nnew\n", [],
                     title="Multiplier overhead on loopback", write=True)
    assert headings(doc)[-1] == "## Multiplier overhead on loopback (13k; 8 proxies) — 2026-11-24"
    assert "\nold\n" not in doc.read_text()


def test_without_write_docs_the_doc_is_left_alone_and_problems_are_still_reported(doc, capsys):
    status = results_doc.publish("\n## Soak — 2026-11-24\n\nnew\n", ["a leak"], title="Soak", write=False)
    assert doc.read_text() == DOC
    assert status == 1 and "- a leak" in capsys.readouterr().out


def test_a_report_whose_heading_does_not_carry_its_title_is_refused(doc):
    with pytest.raises(ValueError, match="Soak"):
        results_doc.publish("\n## Soak test — 2026-11-24\n\nnew\n", [], title="Soak", write=True)
    assert doc.read_text() == DOC


BENCHMARKS = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if not m.ispkg)


def benchmark(name: str):
    return importlib.import_module(f"bench.{name}")


def test_every_benchmark_has_a_title_of_its_own():
    titles = {name: benchmark(name).TITLE for name in BENCHMARKS}
    assert len(titles) >= 13
    # no benchmark's section can be taken for another's
    for name, title in titles.items():
        for other, other_title in titles.items():
            taken = results_doc.is_heading_of(f"## {other_title} — 2026-11-24", title)
            assert other == name or not taken, (name, other)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_writes_the_doc_only_when_asked(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as done:
        benchmark(name).main()
    assert done.value.code == 0 and "--write-docs" in capsys.readouterr().out


def test_the_results_doc_holds_one_section_per_benchmark():
    lines = (ROOT / "docs/benchmarks.md").read_text().splitlines(keepends=True)
    for name in BENCHMARKS:
        assert len(results_doc.sections_of(lines, benchmark(name).TITLE)) == 1, name


def test_a_benchmark_run_writes_its_own_section_and_a_second_run_replaces_it(doc, monkeypatch):
    report_speed = benchmark("report_speed")
    for day in (1, 2):
        monkeypatch.setattr(sys, "argv", ["report_speed", "--records", "200", "--write-docs"])
        monkeypatch.setattr(report_speed, "datetime", types.SimpleNamespace(date=fixed_date(day)))
        assert report_speed.main() == 0
    assert headings(doc)[-1] == "## Report speed — 2026-11-02"
    assert [h for h in headings(doc) if h.startswith("## Report speed")] == ["## Report speed — 2026-11-02"]
    assert doc.read_text().startswith(DOC.rstrip("\n")) and "| 200 |" in doc.read_text()


def fixed_date(day: int) -> type:
    class Date(datetime.date):
        @classmethod
        def today(cls) -> datetime.date:
            return datetime.date(2026, 11, day)
    return Date


def test_a_report_that_publishes_replaces_the_section_of_its_title(doc):
    throughput = benchmark("throughput")
    doc.write_text(DOC + f"\n## {throughput.TITLE} (Multiplier, nginx mirror) — 2026-11-20 10:00\n\nold\n")
    runs = [{"round": 0, "scenario": f"{kind}{n}", "rps": 1000.0, "cpu_us": 50.0, "origin_us": 10.0, "foreign": 0.0,
             "errors": ""} for kind in throughput.KINDS for n in throughput.FANOUTS]
    args = argparse.Namespace(connections=10, seconds=8, write_docs=True)
    throughput.report(args, runs, ["mult4: 10 records"])
    assert results_doc.is_heading_of(headings(doc)[-1], throughput.TITLE)
    assert "\nold\n" not in doc.read_text() and "- mult4: 10 records" in doc.read_text()


def test_a_reports_heading_carries_its_title():
    soak = benchmark("soak")
    args = argparse.Namespace(duration=60, rate=100)
    sample = {"t": 10, "rss_mb": 10.0, "fds": 20, "requests": 1000, "p50_ms": 1.0, "p99_ms": 5.0}
    text = soak.report(args, [sample], 1000, 1000, [])
    assert results_doc.is_heading_of(text.strip("\n").splitlines()[0], soak.TITLE)
    assert "`./spe bench soak --duration 60s`" in text


def test_on_a_copy_of_the_results_doc_a_run_changes_its_own_section_only(tmp_path, monkeypatch):
    copy = tmp_path / "benchmarks.md"
    copy.write_text((ROOT / "docs/benchmarks.md").read_text())
    monkeypatch.setattr(results_doc, "RESULTS", copy)
    report_speed = benchmark("report_speed")
    before = copy.read_text().splitlines(keepends=True)
    [(start, end)] = results_doc.sections_of(before, report_speed.TITLE)
    monkeypatch.setattr(sys, "argv", ["report_speed", "--records", "200"])
    report_speed.main()
    assert copy.read_text() == "".join(before)  # printed only: no --write-docs
    monkeypatch.setattr(sys, "argv", ["report_speed", "--records", "200", "--write-docs"])
    report_speed.main()
    after = copy.read_text().splitlines(keepends=True)
    [(new_start, new_end)] = results_doc.sections_of(after, report_speed.TITLE)
    assert new_start == start and after[:start] == before[:start]
    assert after[new_end:] == before[end:] and "| 200 |" in "".join(after[new_start:new_end])


def test_the_test_suites_times_are_a_section_written_from_its_step_lines():
    from bench.lib.test_times import TITLE, section

    text = section(["spe: time per step (75s in all):", "     12s  Debian packages", "     63s  C++ unit tests"],
                   "./spe test", datetime.date(2026, 12, 3))
    assert text.startswith(f"## {TITLE} — 2026-12-03\n")
    assert "| Debian packages | 12 |\n| C++ unit tests | 63 |\n| **all** | **75** (1 min) |" in text
    with pytest.raises(ValueError):
        section(["nothing timed"], "./spe test", datetime.date(2026, 12, 3))
