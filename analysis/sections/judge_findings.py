"""The cache-rule section: per reply source, what the Multiplier's cache-rule judge found (RFC 9111).

From the `cache` object of every judged reply (cache_records.py), per proxy under test and for the
Collector as its own row (the Collector is a Squid too: its bugs must not pass as the reference's truth):
- reused replies; violations per rule, with their share of the reused replies and one example whose
  judged headers (served, reference, request) stand side by side; advisories (SHOULD-level) apart;
- each rule's standing: `violated`, `passed (N chances)` when the source had N replies that could have
  broken it and none did, `not exercised` when it had none (never shown as passed);
- conservative misses by cause, claim conflicts (a claimed hit that was a fresh fetch, or the reverse),
  provenance (replies from the origin, with no stamp, a corrupt stamp, or a fetch the Multiplier never saw).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.cache_rule_catalogue import load as load_catalogue
from analysis.cache_rule_catalogue import of_severity
from analysis.readers.judge_records import load_evidence
from analysis.readers.records import COLLECTOR
from analysis.repro_links import repro_case, repro_command, repro_run, repro_text
from analysis.section import BUGS, FIRST, LATEST, TRUST, RunData, RunFiles, Section
from analysis.sections import noise

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "cache-rules"  # the section's name: its anchor, and the key of its data in Report.data


def of(report: Report) -> list[dict]:
    """What the cache-rule judge found, per source; empty for a log without it (this section's data)."""
    return report.data.get(NAME, [])


# rule id -> (its section, what breaking it means), from the judge's own catalogue; the section is RFC 9111's
# unless it names another RFC. Advisories are SHOULD-level findings and the request's own directives, which
# RFC 9111 5.2.1 makes advisory ("caches MAY implement them"): reported beside the violations, never
# counted as violations.

RULES = of_severity(load_catalogue(), "violation")
ADVISORIES = of_severity(load_catalogue(), "advisory")
PROVENANCE = {"origin": "from an origin fetch the Multiplier saw", "none": "no stamp: not from the origin",
              "not-modified": "a 304 without a stamp (no body)", "corrupt": "corrupt or forged stamp",
              "unknown": "a fetch the Multiplier never saw"}
CLAIMS = {"hit": "claimed a hit, was a fresh fetch", "miss": "claimed a miss, served a reused copy"}


def rfc(section: str) -> str:
    """`4.2.4` -> `RFC 9111 4.2.4`, `4, 5.1` -> `RFC 9111 4, 5.1`; a section of another RFC names it first
    (`9110 9.3.2`)."""
    number, _, rest = section.partition(" ")
    return f"RFC {section}" if rest and number.isdigit() else f"RFC 9111 {section}"


def source_label(name: str) -> str:
    return "Collector" if name == COLLECTOR else name


def _ranked(counted: dict[str, int]) -> dict[str, int]:
    """Occurrences per value, most frequent first (ties by value)."""
    return dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))


def _per_source(rows: list[tuple]) -> dict[str, dict]:
    """(source, key, value) rows as source -> key -> value, in the rows' order."""
    out: dict[str, dict] = {}
    for name, key, value in rows:
        out.setdefault(name, {})[key] = value
    return out


def _value_counts(tables: ReplyQueries, value: str, source: str = "verdicts") -> dict[str, dict[str, int]]:
    """Per source: occurrences of each value of `value` (an expression over `source`, a FROM item of verdicts'
    rows), most frequent first, nulls left out."""
    counts = _per_source(tables.rows(
        f"SELECT name, v, count(*) FROM (SELECT name, {value} AS v FROM {source}) WHERE v IS NOT NULL GROUP BY ALL"))
    return {name: _ranked(counted) for name, counted in counts.items()}


def _findings(column: str, log_order: str) -> str:
    """One row per finding (violation or advisory) of `column`: name, id, method, url, its place (`r` the reply's in
    the log, `k` the finding's in the reply) and the finding `f` (rule, section, reason)."""
    return (f"(SELECT name, run, id, method, url, {log_order} AS r, u.k, u.f "
            f"FROM verdicts, unnest({column}) WITH ORDINALITY AS u(f, k))")


def _rule_examples(tables: ReplyQueries, column: str, which: str) -> dict[str, dict[str, dict]]:
    """Per source: the first (FIRST) or latest (LATEST) request, by id, then the log's order, that had each rule's
    finding: one aggregate either way, as cheap at 10 M records for the live page as for the report."""
    pick = "arg_max" if which == LATEST else "arg_min"
    return _per_source(tables.rows(f"""
        SELECT name, f.rule, {pick}(struct_pack(id, method, url, run, rule := f.rule, section := f.section,
                                                 reason := f.reason), struct_pack(i := id, r := r, k := k))
        FROM {_findings(column, tables.log_order)} WHERE f.rule IS NOT NULL GROUP BY ALL"""))


def _provenance(tables: ReplyQueries) -> dict[str, dict[str, int]]:
    """Per source: every provenance kind, 0 included, in the record format's order; an unknown kind after them, in
    the order the log first names it."""
    counts = _per_source(tables.rows(f"SELECT name, coalesce(provenance, 'missing'), count(*) FROM verdicts "
                                     f"GROUP BY ALL ORDER BY min({tables.log_order})"))
    return {name: {**dict.fromkeys(PROVENANCE, 0), **counted} for name, counted in counts.items()}


def _grouped_examples(tables: ReplyQueries, column: str, labels: dict | None = None, reason: str = "NULL",
                      where: str = "TRUE") -> dict[str, list[dict]]:
    """Per source, per value of `column` (a conservative cause, a conflicting claim), most frequent first: count
    and first request (with its `reason` column's value), of the verdicts `where` says."""
    groups = _per_source((name, value, (n, first)) for name, value, n, first in tables.rows(f"""
        SELECT name, {column}, count(*), arg_min(struct_pack(id, method, url, run, reason := {reason}),
                                                 struct_pack(i := id, o := {tables.log_order}))
        FROM verdicts WHERE {column} IS NOT NULL AND {where} GROUP BY ALL"""))
    return {name: [{"value": value, "label": (labels or {}).get(value, value), "count": n, **found[value][1]}
                   for value, n in _ranked({v: n for v, (n, _) in found.items()}).items()]
            for name, found in groups.items()}


def judged_sources(tables: ReplyQueries, examples: str = FIRST) -> dict[str, dict]:
    """Per source with judged replies, everything its part of the section counts (source_section reads it), each
    rule's example the `examples` (FIRST or LATEST) request that broke it."""
    judged = {name: {"judged": n, "reused": reused, "claim_conflicts": conflicts}
              for name, n, reused, conflicts in tables.rows(
                  "SELECT name, count(*), count(*) FILTER (reused), count(claim_conflict) FROM verdicts GROUP BY name")}
    parts = {
        "violations": _value_counts(tables, "f.rule", _findings("violations", tables.log_order)),
        "advisories": _value_counts(tables, "f.rule", _findings("advisories", tables.log_order)),
        "exercised": _value_counts(tables, "unnest(exercised)"),
        "conservative": _value_counts(tables, "conservative"),
        "provenance": _provenance(tables),
        "violation_examples": _rule_examples(tables, "violations", examples),
        "advisory_examples": _rule_examples(tables, "advisories", examples),
        "conservative_examples": _grouped_examples(tables, "conservative"),
        "claim_examples": _grouped_examples(tables, "claim", CLAIMS, "claim_conflict", "claim_conflict IS NOT NULL"),
    }
    return {name: {**counts, **{part: found.get(name, {}) for part, found in parts.items()}}
            for name, counts in judged.items()}


def tally(found: dict) -> dict:
    """The summary.json object of one source's judged replies."""
    return {"judged": found["judged"], "reused": found["reused"], "violations": found["violations"],
            "advisories": found["advisories"], "exercised": found["exercised"],
            "conservative": found["conservative"], "claim_conflicts": found["claim_conflicts"],
            "provenance": found["provenance"]}


def _pct(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def standing(found: int, chances: int, finding: str = "violated") -> str:
    """A rule no reply of the source could have broken was not passed: it was not exercised."""
    if found:
        return finding
    return f"passed ({chances:,} chance{'s' if chances > 1 else ''})" if chances else "not exercised"


def _other_rules(counts: dict, catalogue: dict) -> list[str]:
    """Rules the records name that no catalogue knows (a newer judge's): the found ones, and for the
    violations table the exercised ones too."""
    unknown_exercised = set(counts["exercised"]) - RULES.keys() - ADVISORIES.keys() if catalogue is RULES else set()
    return sorted({*counts["found"], *unknown_exercised} - catalogue.keys())


def rule_rows(counts: dict, catalogue: dict, examples: dict[str, dict]) -> list[dict]:
    """One row per rule of the catalogue, then any other rule the records name, with its standing and its example."""
    names = [*catalogue, *_other_rules(counts, catalogue)]
    rows = []
    for rule in names:
        found, chances = counts["found"].get(rule, 0), counts["exercised"].get(rule, 0)
        example = examples.get(rule)
        section, meaning = catalogue.get(rule, (example["section"] if example else "", ""))
        rows.append({"rule": rule, "section": rfc(section) if section else "", "meaning": meaning,
                     "count": found, "share_pct": _pct(found, counts["reused"]), "chances": chances,
                     "chance_pct": _pct(found, chances),
                     "standing": standing(found, chances, "violated" if catalogue is RULES else "advised"),
                     "example": example})
    return rows


def source_section(name: str, found: dict, examples: str = FIRST) -> dict:
    """Everything the report shows of one source (evidence and captures are attached later); `examples` says
    which request each rule's example is (FIRST or LATEST), for the page's words."""
    summary = tally(found)
    return {
        "name": name, "label": source_label(name), "summary": summary, "examples": examples,
        "anchor": "cache-" + re.sub(r"[^A-Za-z0-9_-]", "-", source_label(name)),  # an HTML id
        "rules": rule_rows({"found": summary["violations"], "exercised": summary["exercised"],
                            "reused": summary["reused"]}, RULES, found["violation_examples"]),
        "advisories": rule_rows({"found": summary["advisories"], "exercised": summary["exercised"],
                                 "reused": summary["reused"]}, ADVISORIES, found["advisory_examples"]),
        "conservative": found["conservative_examples"],
        "claim_conflicts": found["claim_examples"],
        "provenance": [{"kind": kind, "label": PROVENANCE.get(kind, kind), "count": n}
                       for kind, n in summary["provenance"].items()],
    }


def _attach_examples(sections: list[dict], runs: dict[str, RunFiles], examples: str) -> None:
    """Each violation example gets its judged headers and, when its run captured it, the capture file; the
    examples of a merged report each from its own run's log. The latest examples are near the log's end: read
    from there."""
    for label, files in runs.items():
        mine = [(s["name"], row["example"]) for s in sections for row in s["rules"]
                if row["example"] and row["example"]["run"] == label]
        evidence = load_evidence(files.log, {(e["id"], name) for name, e in mine}, from_end=examples == LATEST)
        for name, example in mine:
            example["evidence"] = evidence.get((example["id"], name), {})
            capture = files.capture_dir / f"{example['id']:08d}-{name}.txt" if files.capture_dir else None
            example["capture"] = capture if capture is not None and capture.exists() else None


def cache_rule_sections(tables: ReplyQueries, names: list[str], runs: dict[str, RunFiles],
                        examples: str = FIRST) -> list[dict]:
    """The Collector's section, then one per proxy in `names` order that had judged replies, each rule's example
    the `examples` (FIRST or LATEST) request that broke it; [] for a log without `cache` objects."""
    found = judged_sources(tables, examples)
    sections = [source_section(name, found[name], examples) for name in [COLLECTOR, *names] if name in found]
    _attach_examples(sections, runs, examples)
    return sections


def evidence_rows(evidence: dict) -> list[tuple[str, str, str, str]]:
    """(header, served, reference, request) for every header any side of the evidence names; names match
    whatever their case (as HTTP's do), `-` where a side lacks the header."""
    sides = [{name.lower(): value for name, value in (evidence.get(side) or {}).items()}
             for side in ("served", "reference", "request")]
    spelling: dict[str, str] = {}
    for side in ("served", "reference", "request"):
        for name in evidence.get(side) or {}:
            spelling.setdefault(name.lower(), name)
    return [(spelling[h], *("-" if side.get(h) is None else str(side[h]) for side in sides))
            for h in sorted(spelling)]


def judge_noise(sections: list[dict], noise: dict) -> list[str]:
    """The dummy has no cache: a reuse or a violation recorded for it is the judge's own error, or the
    Collector's (the dummy passes its replies on)."""
    by_name = {s["name"]: s["summary"] for s in sections}
    lines = []
    for dummy in noise.get("dummies", []):
        if (found := by_name.get(dummy["name"])) is not None:
            lines.append(f"{dummy['name']} (no cache): {found['reused']:,} reused and "
                         f"{sum(found['violations'].values()):,} violations over {found['judged']:,} judged replies "
                         "(goal: 0; it has no cache: any is the judge's error or the Collector's)")
    return lines


def _standings(section: dict) -> tuple[int, int]:
    """(rules passed, rules not exercised) of a source."""
    return (sum(r["standing"].startswith("passed") for r in section["rules"]),
            sum(r["standing"] == "not exercised" for r in section["rules"]))


def _standing_summary(section: dict) -> str:
    violated = [f"{r['rule']} {r['count']:,}" + (f" ({r['share_pct']:.2f} % of reused)" if r["share_pct"] is not None
                                                  else "") for r in section["rules"] if r["count"]]
    passed, untried = _standings(section)
    return f"violations: {', '.join(violated) if violated else 'none'}; {passed} rules passed, {untried} not exercised"


def cache_rules_text(sections: list[dict]) -> list[str]:
    """A few lines for the text report: per source, reuse, violations, misses and conflicts."""
    if not sections:
        return []
    out = ["Cache rules (RFC 9111; the Collector is judged too):"]
    width = max(len(s["label"]) for s in sections) + 2
    for s in sections:
        t = s["summary"]
        advisories = sum(t["advisories"].values())
        out.append(f"  {s['label']:{width}}{t['reused']:,} of {t['judged']:,} replies reused; {_standing_summary(s)}; "
                   f"{advisories:,} advisories; {sum(t['conservative'].values()):,} conservative misses; "
                   f"{t['claim_conflicts']:,} claim conflicts")
    return out


def add_cache_rule_columns(rows: list[dict], sections: list[dict]) -> None:
    """The flat columns of summary.csv / summary.json from each source's cache-rule tally."""
    tallies = {s["name"]: s["summary"] for s in sections}
    for row in rows:
        if t := tallies.get(row["name"]):
            row.update(cache_reused=t["reused"], cache_violations=sum(t["violations"].values()),
                       cache_violation_rules=" ".join(f"{rule}:{n}" for rule, n in t["violations"].items()),
                       cache_advisories=sum(t["advisories"].values()))


def cache_rules_summary(rep, rows: list[dict]) -> dict:
    """Each proxy row gains its `cache_rules`; the Collector's go top-level. Nothing for a log without them."""
    if not of(rep):
        return {}
    tallies = {s["name"]: s["summary"] for s in of(rep)}
    for row in rows:
        if row["name"] != COLLECTOR and row["name"] in tallies:
            row["cache_rules"] = tallies[row["name"]]
    return {"collector_cache_rules": tallies.get(COLLECTOR), "bad_cache_lines": rep.bad_cache_lines}


def violated_rules(sections: list[dict]) -> list[dict]:
    """Every rule some source violated (rule, section, meaning), in the catalogue's order, then rules no catalogue
    knows."""
    found = {r["rule"]: r for s in sections for r in s["rules"] if r["count"]}
    return [found[rule] for rule in [*(r for r in RULES if r in found), *sorted(found.keys() - RULES.keys())]]


def _page_context(rep) -> dict:
    runs = {label: repro_run(run) for label, run in rep.runs.items()}

    def repro(name: str, example: dict) -> str | None:
        run = runs.get(example["run"])
        return repro_command(run, name, example["id"]) if run and name != COLLECTOR else None

    def case(name: str, example: dict) -> Path | None:
        run = runs.get(example["run"])
        return repro_case(run, name, example["id"]) if run and name != COLLECTOR else None

    firsts = [repro(s["name"], r["example"]) for s in of(rep) for r in s["rules"]
              if r["count"] and r["example"]]
    return {"evidence_rows": evidence_rows, "judge_noise": judge_noise(of(rep), noise.of(rep)),
            "floor": noise.floor_line(noise.of(rep)) if noise.of(rep) else "", "violated": violated_rules(of(rep)),
            "by_rule": {s["name"]: {r["rule"]: r for r in s["rules"]} for s in of(rep)},
            "standings": {s["name"]: _standings(s) for s in of(rep)}, "repro": repro, "repro_case": case,
            "example_repro": next((command for command in firsts if command), None),
            "which": of(rep)[0]["examples"], "merged": rep.merged}


def _tally_sections(run: RunData) -> list[dict]:
    sections = cache_rule_sections(run.tables, run.records.proxies, run.runs, run.examples)
    add_cache_rule_columns(run.rows, sections)
    return sections


SECTION = Section(
    NAME, "Cache rules (RFC 9111)", question=BUGS,
    columns=("cache_reused", "cache_violations", "cache_violation_rules", "cache_advisories"),
    compute=_tally_sections, applies=lambda rep: bool(of(rep)),
    verdict_text=lambda rep: [*cache_rules_text(of(rep)), *repro_text(of(rep), rep.runs)],
    template="sections/cache_rules.html.j2", context=_page_context, summary=cache_rules_summary)
# The dummy's reuse and violations: the judge's own noise, a reason to doubt its verdicts.
JUDGE_NOISE = Section("judge-noise", "The cache-rule judge's own noise", question=TRUST,
                      applies=lambda rep: bool(judge_noise(of(rep), noise.of(rep))),
                      verdict_text=lambda rep: judge_noise(of(rep), noise.of(rep)))
