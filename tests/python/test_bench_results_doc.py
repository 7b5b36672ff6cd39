"""docs/benchmarks.md keeps one section per benchmark: a new run replaces its own section (bench/lib/doc.py)."""

from pathlib import Path

import pytest

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


def test_no_append_leaves_the_doc_alone_and_problems_are_still_reported(doc, capsys):
    status = results_doc.publish("\n## Soak — 2026-11-24\n\nnew\n", ["a leak"], title="Soak", write=False)
    assert doc.read_text() == DOC
    assert status == 1 and "- a leak" in capsys.readouterr().out


def test_a_report_whose_heading_does_not_carry_its_title_is_refused(doc):
    with pytest.raises(ValueError, match="Soak"):
        results_doc.publish("\n## Soak test — 2026-11-24\n\nnew\n", [], title="Soak", write=True)
    assert doc.read_text() == DOC


def test_every_benchmark_that_writes_the_doc_goes_through_the_helper_with_its_own_title():
    scripts = [p for p in (ROOT / "bench").glob("*.py") if "--no-append" in p.read_text()]
    assert len(scripts) >= 11
    titles = {}
    for script in scripts:
        source = script.read_text()
        assert "append_result" not in source and 'open("a")' not in source, script.name
        assert "title=TITLE, write=not args.no_append" in source or "write_section(TITLE" in source, script.name
        assert "## {TITLE}" in source, script.name  # the heading is made from the title it is replaced by
        titles[script.name] = source.split('\nTITLE = "', 1)[1].split('"', 1)[0]
    # no benchmark's section can be taken for another's
    for name, title in titles.items():
        for other, other_title in titles.items():
            taken = results_doc.is_heading_of(f"## {other_title} — 2026-11-24", title)
            assert other == name or not taken, (name, other)


def test_the_results_doc_holds_one_section_per_benchmark():
    lines = (ROOT / "docs/benchmarks.md").read_text().splitlines(keepends=True)
    for script in (ROOT / "bench").glob("*.py"):
        if '\nTITLE = "' in (source := script.read_text()):
            title = source.split('\nTITLE = "', 1)[1].split('"', 1)[0]
            assert len(results_doc.sections_of(lines, title)) == 1, script.name
