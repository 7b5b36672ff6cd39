"""The report's cache-rule section, on hand-made records in the `cache` format (docs/log-format.md) whose
right answers are worked out here: counts, shares, "not exercised" against "passed", the Collector's own
row, and logs written before the judge (no section, no error)."""

from __future__ import annotations

import csv
import json
import sys

import pytest
from conftest import read_records
from test_analysis import measure, proxy, record
from test_report_trust import topology, write_run

from analysis.cli import main as report_main
from analysis.readers.records import COLLECTOR
from analysis.report import build_report, html_report, text_report
from analysis.sections import judge_findings
from analysis.sections.judge_findings import RULES, evidence_rows, rfc


def finding(rule: str, section: str | None = None) -> dict:
    return {"rule": rule, "section": section or RULES.get(rule, ("4.2.2",))[0], "reason": f"broke {rule}"}


def cache(provenance="origin", reused=False, violations=(), advisories=(), exercised=(), conservative=None,
          claim=None, claim_conflict=None, evidence=None) -> dict:
    out = {"provenance": provenance, "fetch": "c0ffee.1" if provenance == "origin" else None,
           "fetched_at": 1000.0, "validated_at": None, "reused": reused, "age_s": 5.0 if reused else None,
           "violations": [finding(r) for r in violations], "advisories": [finding(r) for r in advisories],
           "exercised": list(exercised), "conservative": conservative, "claim": claim,
           "claim_conflict": claim_conflict}
    if evidence is not None:
        out["evidence"] = evidence
    return out


AGE_EVIDENCE = {"served": {"Age": "1", "Date": "Tue, 24 Nov 2026 01:00:00 GMT"},
                "reference": {"Date": "Tue, 24 Nov 2026 01:00:09 GMT"}, "request": {"Cache-Control": "max-age=60"}}
STALE_EVIDENCE = {"served": {"Cache-Control": "max-age=1"}, "reference": {"Cache-Control": "max-age=1"},
                  "request": {}}

# squid, per request: 1 a fresh fetch; 2 and 3 reused copies with a wrong Age (example: 2); 4 a reused copy
# that broke nothing, with a heuristic-freshness advisory; 5 a conservative miss that claimed a hit; 6 its own
# error page (no stamp).
SQUID = {
    1: cache(),
    2: cache(reused=True, violations=["age"], exercised=["age", "no-store"], evidence=AGE_EVIDENCE),
    3: cache(reused=True, violations=["age"], exercised=["age", "vary"],
             evidence={"served": {"Age": "0"}, "reference": {}, "request": {}}),
    4: cache(reused=True, advisories=["heuristic"], exercised=["age", "vary", "heuristic"]),
    5: cache(conservative="revalidated a fresh copy", claim="hit",
             claim_conflict="claimed a hit, the reply is a fresh fetch"),
    6: cache(provenance="none"),
}
# varnish: a corrupt stamp (1), a fetch the Multiplier never saw (2), a HEAD reply with a body on a fresh fetch (3).
VARNISH = {1: cache(provenance="corrupt"), 2: cache(provenance="unknown"),
           3: cache(violations=["head-body"], exercised=["head-body"]), 4: cache(), 5: cache(), 6: cache()}
# the Collector served request 4 from a stale copy of its own.
COLLECTOR_CACHE = {4: cache(reused=True, violations=["stale"], exercised=["stale", "age"], evidence=STALE_EVIDENCE)}


def judged_run(path, captures: bool = False):
    records = []
    for i in range(1, 7):
        ref = {**measure(), "cache": COLLECTOR_CACHE.get(i, cache())}
        records.append(record(i, ref, [{**proxy("squid"), "cache": SQUID[i]}, {**proxy("varnish"), "cache": VARNISH[i]},
                                       {**proxy("dummy"), "cache": cache()}]))
    if captures:
        (path / "captures").mkdir()
        (path / "captures" / "00000002-squid.txt").write_text("## request\nGET http://o/2\n")
    return write_run(path, records, topology({"squid": "squid", "varnish": "varnish", "dummy": "dummy"}))


def test_the_hand_made_records_honour_the_log_schema(tmp_path):
    """The records these tests judge are in the documented format (read_records validates each one)."""
    records = read_records(judged_run(tmp_path) / "multiplier.jsonl")
    assert len(records) == 6 and records[1]["proxies"][0]["cache"]["evidence"] == AGE_EVIDENCE


def sections(rep) -> dict[str, dict]:
    return {s["name"]: s for s in judge_findings.of(rep)}


def rules(section: dict) -> dict[str, dict]:
    return {r["rule"]: r for r in section["rules"]}


SQUID_SUMMARY = {"judged": 6, "reused": 3, "violations": {"age": 2}, "advisories": {"heuristic": 1},
                 "exercised": {"age": 3, "vary": 2, "heuristic": 1, "no-store": 1},
                 "conservative": {"revalidated a fresh copy": 1}, "claim_conflicts": 1,
                 "provenance": {"origin": 5, "none": 1, "not-modified": 0, "corrupt": 0, "unknown": 0}}


def test_counts_shares_and_standing_per_proxy(tmp_path):
    run = judged_run(tmp_path)
    squid = sections(build_report(run))["squid"]
    assert squid["summary"] == SQUID_SUMMARY
    age, vary, no_store, private = (rules(squid)[r] for r in ("age", "vary", "no-store", "private"))
    assert (age["count"], age["standing"], age["section"]) == (2, "violated", "RFC 9111 4, 5.1")
    assert age["share_pct"] == 200 / 3
    assert age["example"]["id"] == 2 and age["example"]["url"] == "http://o/2" and age["example"]["method"] == "GET"
    assert age["example"]["evidence"] == AGE_EVIDENCE
    assert (vary["count"], vary["standing"], vary["chance_pct"]) == (0, "passed (2 chances)", 0)
    assert age["chance_pct"] == 200 / 3
    assert no_store["standing"] == "passed (1 chance)"
    assert (private["standing"], private["chances"], private["example"]) == ("not exercised", 0, None)
    assert [r["rule"] for r in squid["rules"]] == list(RULES)  # every rule listed, the unexercised ones too
    heuristic = squid["advisories"][0]
    assert (heuristic["rule"], heuristic["count"], heuristic["share_pct"], heuristic["section"]) == (
        "heuristic", 1, 100 / 3, "RFC 9111 4.2.2")
    assert squid["claim_conflicts"] == [{"value": "hit", "label": "claimed a hit, was a fresh fetch", "count": 1,
                                         "id": 5, "method": "GET", "url": "http://o/5", "run": run.name,
                                         "reason": "claimed a hit, the reply is a fresh fetch"}]
    assert [(c["label"], c["count"], c["id"]) for c in squid["conservative"]] == [("revalidated a fresh copy", 1, 5)]


def test_a_violation_without_reuse_has_no_share_and_provenance_is_counted(tmp_path):
    varnish = sections(build_report(judged_run(tmp_path)))["varnish"]
    head = rules(varnish)["head-body"]
    assert (head["count"], head["share_pct"], head["chance_pct"], head["section"]) == (1, None, 100, "RFC 9110 9.3.2")
    assert varnish["summary"]["provenance"] == {"origin": 4, "none": 0, "not-modified": 0, "corrupt": 1, "unknown": 1}
    assert head["example"]["evidence"] == {}  # the record had none


def test_the_collector_is_judged_as_its_own_row(tmp_path):
    rep = build_report(judged_run(tmp_path))
    assert [s["label"] for s in judge_findings.of(rep)] == ["Collector", "squid", "varnish", "dummy"]
    collector = sections(rep)[COLLECTOR]
    assert collector["summary"]["reused"] == 1 and collector["summary"]["violations"] == {"stale": 1}
    stale = rules(collector)["stale"]
    assert (stale["share_pct"], stale["example"]["id"], stale["example"]["evidence"]) == (100.0, 4, STALE_EVIDENCE)
    assert rules(collector)["age"]["standing"] == "passed (1 chance)"
    text = text_report(rep)
    assert "Cache rules (RFC 9111; the Collector is judged too):" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("Collector ") and "reused" in x)
    assert "1 of 6 replies reused; violations: stale 1 (100.00 % of reused)" in line


def test_the_dummy_gives_the_judges_own_noise(tmp_path):
    text = text_report(build_report(judged_run(tmp_path)))
    assert "dummy (no cache): 0 reused and 0 violations over 6 judged replies" in text
    assert "Noise floor: 0.00 %" in text


def test_an_unknown_rule_is_listed_after_the_known_ones(tmp_path):
    records = [record(1, measure(), [{**proxy("squid"), "cache": {
        **cache(reused=True, exercised=["future-rule"]), "violations": [finding("future-rule", "9.9")]}}])]
    squid = sections(build_report(write_run(tmp_path, records)))["squid"]
    last = squid["rules"][-1]
    assert (last["rule"], last["section"], last["standing"], last["share_pct"]) == (
        "future-rule", "RFC 9111 9.9", "violated", 100.0)


def test_html_section_tables_and_evidence(tmp_path):
    run = judged_run(tmp_path, captures=True)
    page = html_report(build_report(run), run / "report")
    assert page.index('<a href="#cache-rules">') < page.index('<h2 id="per-proxy">')  # found from the top
    section = page[page.index('<h2 id="cache-rules">'):]
    assert "<h3 id=\"cache-squid\">squid</h3>" in section and "<h3 id=\"cache-Collector\">Collector</h3>" in section
    squid = section[section.index('<h3 id="cache-squid">'):section.index('<h3 id="cache-varnish">')]
    assert "<tr><th>age</th><td>RFC 9111 4, 5.1</td>" in squid and "<tr><th>private</th>" not in squid
    assert "<td>passed (2 chances)</td>" in squid and "<td>not exercised</td>" not in squid
    untried = ", ".join(r for r in RULES if r not in ("age", "vary", "no-store"))
    assert f"<p>Not exercised (no reply could have broken them: not passed either): {untried}</p>" in squid
    assert '<a href="#cache-squid-age">request 2</a>' in squid
    assert ("<tr><th>Date</th><td>Tue, 24 Nov 2026 01:00:00 GMT</td><td>Tue, 24 Nov 2026 01:00:09 GMT</td>"
            "<td>-</td></tr>") in squid
    assert "<tr><th>Cache-Control</th><td>-</td><td>-</td><td>max-age=60</td></tr>" in squid
    assert '<a href="../captures/00000002-squid.txt">both replies</a>' in squid
    assert "Noise floor: 0.00 %" in section


def test_the_page_opens_with_each_sources_violations_by_rule_and_how_to_reproduce_them(tmp_path):
    """The verdict, before the per-proxy table: one row per rule broken (age, head-body, stale), one column per
    source; a count links to its first request, whose example gives the `./spe repro` command (none for the
    Collector, which repro does not replay), and a case already written is linked."""
    run = judged_run(tmp_path, captures=True)
    page = html_report(build_report(run), run / "report")
    questions = [page.index(q) for q in ("Which proxy is best?", "Which bugs does each have?",
                                         "Can I trust this run?", '<h2 id="per-proxy">')]
    assert questions == sorted(questions)
    verdict = page[:questions[-1]]
    assert [row.split("<th")[1].split(">")[1].split(" <small")[0] for row in verdict.split("<tr>")[2:5]] == [
        "stale", "age", "head-body"]  # the catalogue's order
    command = f"./spe repro {run} --proxy squid --request 2"
    assert f'title="squid: 2 violations of age, first on request 2: {command}"><a href="#cache-squid-age">2</a>' \
        in verdict
    assert 'title="Collector: 1 violations of stale, first on request 4"><a href="#cache-Collector-stale">1</a>' \
        in verdict
    assert f"<p>Reproduce it: <code>{command}</code></p>" in page[page.index('<h4 id="cache-squid-age">'):]
    case = run / "repro" / "2-squid"
    case.mkdir(parents=True)
    (case / "case.json").write_text("{}")
    assert '<a href="../repro/2-squid/README.txt">case</a>' in html_report(build_report(run), run / "report")
    text = text_report(build_report(run))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Reproduce one as a case: "))
    assert lines[at].startswith(f"Reproduce one as a case: ./spe repro {run} --proxy PROXY --request ID")
    assert [" ".join(line.split()) for line in lines[at + 1:at + 3]] == ["squid age 2", "varnish head-body 3"]


def test_a_section_is_cited_with_its_rfc_and_a_list_of_sections_as_rfc_9111s():
    assert rfc("4.2.4") == "RFC 9111 4.2.4"
    assert rfc("9110 9.3.2") == "RFC 9110 9.3.2"
    # A rule judged by two sections of RFC 9111 (age, date) is not cited as "RFC 4".
    assert rfc("4, 5.1") == "RFC 9111 4, 5.1"
    assert rfc("4, 3.2") == "RFC 9111 4, 3.2"


def test_evidence_rows_put_each_header_beside_its_counterparts():
    rows = evidence_rows({"served": {"age": "3", "Vary": None}, "reference": {"Age": "9"},
                          "request": {"accept-encoding": "gzip"}})
    assert rows == [("accept-encoding", "-", "-", "gzip"), ("age", "3", "9", "-"), ("Vary", "-", "-", "-")]


def test_summary_json_per_proxy_and_for_the_collector(tmp_path, capsys):
    run = judged_run(tmp_path)
    assert report_main([str(run)]) == 0  # ./spe report RUN
    assert "Cache rules (RFC 9111" in capsys.readouterr().out
    summary = json.loads((run / "report/summary.json").read_text())
    rows = {r["name"]: r for r in summary["proxies"]}
    assert rows["squid"]["cache_rules"] == SQUID_SUMMARY
    assert rows["varnish"]["cache_rules"]["violations"] == {"head-body": 1}
    assert "cache_rules" not in rows[COLLECTOR]
    assert summary["collector_cache_rules"]["violations"] == {"stale": 1}
    assert summary["collector_cache_rules"]["exercised"] == {"age": 1, "stale": 1}
    assert summary["bad_cache_lines"] == 0
    assert '<h2 id="cache-rules">' in (run / "report/report.html").read_text()
    with (run / "report/summary.csv").open() as f:  # the same tallies as flat columns
        csv_rows = {r["name"]: r for r in csv.DictReader(f)}
    assert csv_rows["varnish"]["cache_violations"] == "1"
    assert csv_rows["varnish"]["cache_violation_rules"] == "head-body:1"
    assert csv_rows["squid"]["cache_reused"] == str(SQUID_SUMMARY["reused"])
    assert csv_rows[COLLECTOR]["cache_violation_rules"] == "stale:1"
    assert rows["varnish"]["cache_violations"] == 1  # summary.json rows carry them too


def test_a_log_without_cache_objects_gives_no_section(tmp_path):
    records = [record(i, measure(), [proxy("squid"), proxy("dummy")]) for i in range(1, 3)]
    run = write_run(tmp_path, records, topology({"squid": "squid", "dummy": "dummy"}))
    rep = build_report(run)
    assert judge_findings.of(rep) == [] and "Cache rules" not in text_report(rep)
    assert "cache-rules" not in html_report(rep)
    from analysis.cli import main as report_main
    assert report_main([str(run), "--format", "json"]) == 0
    summary = json.loads((run / "report/summary.json").read_text())
    assert "collector_cache_rules" not in summary and all("cache_rules" not in r for r in summary["proxies"])


@pytest.mark.parametrize("engine", ["duckdb", "memory"])
def test_an_unreadable_cache_object_costs_only_its_line(tmp_path, engine):
    records = [record(1, measure(), [{**proxy("squid"), "cache": cache(reused=True, exercised=["age"])}]),
               record(2, measure(), [{**proxy("squid"), "cache": "not an object"}])]
    rep = build_report(write_run(tmp_path, records), engine=engine)
    assert rep.requests == 2 and rep.bad_lines == 0  # the tables keep both records
    assert rep.bad_cache_lines == 1 and sections(rep)["squid"]["summary"]["judged"] == 1


def test_a_broken_line_costs_neither_the_tables_nor_the_verdicts(tmp_path):
    """A line that is no JSON makes the one-pass read fail: tables and verdicts are then read apart."""
    log = judged_run(tmp_path) / "multiplier.jsonl"
    log.write_text(log.read_text() + '{"id": oops}\n')
    rep = build_report(tmp_path)
    assert rep.requests == 6 and rep.bad_lines == 1 and rep.bad_cache_lines == 0
    assert sections(rep)["squid"]["summary"] == SQUID_SUMMARY


def test_a_rope_log_gives_no_section(tmp_path):
    line = ("Wed Jun 20 02:10:11 2001:(pid=1):RESULT: Collector: 0:1 0:1 5 {DUMMY,} 1.2.3.4 non-validation "
            "HTTP/1.0 GET http://o/\n")
    (tmp_path / "multiplier.rope.log").write_text(line)
    assert judge_findings.of(build_report(tmp_path)) == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_the_lab_prints_the_cache_rule_lines_under_its_table(tmp_path, capsys):
    # What ./spe lab run prints at the end of a run (it runs this as a program: the lab's tests cover that part).
    from analysis.cli import main

    judged_run(tmp_path)
    assert main([str(tmp_path), "--lab-summary"]) == 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "Cache rules (RFC 9111; the Collector is judged too):" in text
    assert "violations:" in text
    assert "Which bugs does each have?" in text and "Reproduce one as a case: ./spe repro" in text
