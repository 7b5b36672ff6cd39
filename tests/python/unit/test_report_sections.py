"""The report's section registry (analysis/sections): every section is declared whole, and the report shows
what the registry holds, in its order, without knowing any section by name."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from test_analysis import measure, proxy, record

from analysis import report, sections
from analysis.report import (
    CORE_COLUMNS,
    HTML,
    build_report,
    html_report,
    short_report,
    summary_columns,
    text_report,
    write_report,
)
from analysis.section import QUESTIONS, Section

TEMPLATES = Path(report.__file__).parent / "templates"


def test_every_section_is_declared_whole():
    names = [s.name for s in sections.SECTIONS]
    assert len(names) == len(set(names)), names
    columns = summary_columns()
    assert len(columns) == len(set(columns)) and columns[:len(CORE_COLUMNS)] == CORE_COLUMNS
    for s in sections.SECTIONS:
        assert s.question in (*QUESTIONS, None), s.name
        assert s.template or s.verdict_text or s.details_text or (s.rows and s.columns), f"{s.name} shows nothing"
        if s.template:
            assert (TEMPLATES / s.template).is_file(), s.template
            macros = HTML.get_template(s.template).module
            assert hasattr(macros, "verdict") or hasattr(macros, "details"), f"{s.template} has no macro"


def small_run(path: Path) -> Path:
    (path / "multiplier.jsonl").write_text("".join(json.dumps(record(i, measure(), [proxy("a"), proxy("b")])) + "\n"
                                                   for i in range(1, 4)))
    return path


def test_a_section_added_to_the_registry_shows_in_every_form(tmp_path, monkeypatch):
    """A section the report has never heard of: its data is computed, its column reaches the rows, summary.csv
    and summary.json, its verdict opens report.txt, the lab's printout and the page (under its question), its
    details follow."""
    def compute(run):
        for row in run.rows[1:]:
            row["letters"] = len(row["name"])
        return {"proxies": len(run.rows) - 1}

    extra = Section("letters", "Letters", question="trust", columns=("letters",), compute=compute,
                    verdict_text=lambda rep: [f"{rep.data['letters']['proxies']} proxies, named in letters"],
                    details_text=lambda rep: ["every name has letters"])
    monkeypatch.setattr(sections, "SECTIONS", (*sections.SECTIONS, extra))
    rep = build_report(small_run(tmp_path))
    assert [r.get("letters") for r in rep.rows] == [None, 1, 1]
    text = text_report(rep)
    assert text.index("2 proxies, named in letters") < text.index("Per proxy") < text.index("every name has letters")
    assert "2 proxies, named in letters" in short_report(rep)
    page = html_report(rep)
    assert page.index("<p>2 proxies, named in letters</p>") < page.index('<h2 id="per-proxy">')
    assert '<h2 id="letters">Letters</h2><pre>every name has letters</pre>' in page
    assert '<a href="#letters">Letters</a>' in page
    write_report(rep, tmp_path / "out", {"csv", "json"})
    assert (tmp_path / "out/summary.csv").read_text().splitlines()[0].endswith(",letters")
    assert [r["letters"] for r in json.loads((tmp_path / "out/summary.json").read_text())["proxies"]] == [None, 1, 1]
    # A section that does not apply shows nothing anywhere.
    monkeypatch.setattr(sections, "SECTIONS", (*sections.SECTIONS[:-1], replace(extra, applies=lambda rep: False)))
    rep = build_report(tmp_path)
    assert "letters" not in text_report(rep) + html_report(rep)


def test_the_legs_without_a_complete_reply_are_counted_by_error(tmp_path):
    """analysis/sections/failed_legs.py, registered in one line: b timed out twice and sent too large a body
    once, of 6 requests; a never failed."""
    legs = {2: proxy("b", result="NO_RESPONSE", status=None, error="timeout"),
            3: proxy("b", result="NO_RESPONSE", status=None, error="timeout"),
            5: proxy("b", result="BODY_MISMATCH", error="body too large")}
    (tmp_path / "multiplier.jsonl").write_text("".join(
        json.dumps(record(i, measure(), [proxy("a"), legs.get(i, proxy("b"))])) + "\n" for i in range(1, 7)))
    rep = build_report(tmp_path)
    rows = {r["name"]: r for r in rep.rows}
    assert (rows["b"]["failed_legs"], rows["b"]["failed_leg_errors"]) == (3, "timeout 2; body too large 1")
    assert (rows["a"]["failed_legs"], rows["b"]["responses"] + rows["b"]["failed_legs"]) == (0, 6)
    text = text_report(rep)
    trust = text[text.index("Can I trust this run?"):text.index("Per proxy")]
    assert "Legs without a complete reply (left out of the latency and cache columns): b 3 of 6" in trust
    assert "\n  b        3  timeout 2; body too large 1\n" in text[text.index("Per proxy"):]
    write_report(rep, tmp_path / "out", {"json"})
    assert json.loads((tmp_path / "out/summary.json").read_text())["failed_legs"] == {
        "b": {"timeout": 2, "body too large": 1}}
    clean = tmp_path / "clean"
    clean.mkdir()
    assert "without a complete reply" not in text_report(build_report(small_run(clean)))
