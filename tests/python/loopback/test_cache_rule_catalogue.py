"""One cache-rule catalogue: the one the judge itself holds (multiplier/src/judge/cache_rule_catalogue.hpp,
printed by `spe-multiplier --list-cache-rules`), the report's (analysis/cache_rules.py: RULES and
ADVISORIES) and the log schema's (docs/multiplier-log.schema.json: $defs rule and advisory) name exactly
the same rules, each a violation or an advisory alike, with the same RFC section."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import ROOT, multiplier_binary

from analysis.cache_rules import ADVISORIES, RULES


@pytest.fixture(scope="module")
def judge() -> list[dict]:
    listed = subprocess.run([str(multiplier_binary()), "--list-cache-rules"], capture_output=True, text=True,
                            timeout=30)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def of_severity(judge: list[dict], severity: str) -> dict[str, dict]:
    return {rule["id"]: rule for rule in judge if rule["severity"] == severity}


def schema_defs() -> dict:
    return json.loads((ROOT / "docs/multiplier-log.schema.json").read_text())["$defs"]


def test_the_judge_lists_each_rule_once_with_its_section_and_meaning(judge):
    ids = [rule["id"] for rule in judge]
    assert len(ids) == len(set(ids)) > 20
    for rule in judge:
        assert rule["severity"] in {"violation", "advisory"}, rule
        assert rule["section"] and rule["meaning"], rule


def test_the_report_names_the_judges_rules_as_violations_and_advisories(judge):
    assert set(RULES) == set(of_severity(judge, "violation"))
    assert set(ADVISORIES) == set(of_severity(judge, "advisory"))


def test_the_report_gives_each_rule_the_judges_section(judge):
    for catalogue, severity in ((RULES, "violation"), (ADVISORIES, "advisory")):
        judged = of_severity(judge, severity)
        assert {rule: section for rule, (section, _) in catalogue.items()} == \
               {rule: entry["section"] for rule, entry in judged.items()}


def test_the_log_schema_names_the_judges_rules(judge):
    defs = schema_defs()
    assert set(defs["rule"]["enum"]) == set(of_severity(judge, "violation"))
    assert set(defs["advisory"]["enum"]) == set(of_severity(judge, "advisory"))
