"""One cache-rule catalogue: the judge's own (multiplier/src/judge/cache_rule_catalogue.hpp, printed by
`spe-multiplier --list-cache-rules`) is the one the report reads (analysis/cache_rule_catalogue.json,
behind RULES and ADVISORIES in analysis/sections/judge_findings.py) and the one the log schema's enums name
(docs/multiplier-log.schema.json: $defs rule and advisory). Both files are written by
`python -m analysis.cache_rule_catalogue --update`; these tests fail until it has been run."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, multiplier_binary

from analysis import cache_rule_catalogue
from analysis.sections.judge_findings import ADVISORIES, RULES

UPDATE = "run `.venv/bin/python -m analysis.cache_rule_catalogue --update` after ./spe build"


@pytest.fixture(scope="module")
def judge() -> list[dict]:
    return json.loads(cache_rule_catalogue.listed_by(multiplier_binary()))


def test_the_judge_lists_each_rule_once_with_its_section_and_meaning(judge):
    ids = [rule["id"] for rule in judge]
    assert len(ids) == len(set(ids)) > 20
    for rule in judge:
        assert rule["severity"] in {"violation", "advisory"}, rule
        assert rule["section"] and rule["meaning"], rule


def test_the_kept_catalogue_is_what_the_judge_prints():
    kept = cache_rule_catalogue.CATALOGUE_JSON.read_text()
    assert kept == cache_rule_catalogue.listed_by(multiplier_binary()), UPDATE


def test_the_report_names_the_judges_rules_as_violations_and_advisories(judge):
    assert RULES == cache_rule_catalogue.of_severity(judge, "violation")
    assert ADVISORIES == cache_rule_catalogue.of_severity(judge, "advisory")


def test_the_log_schema_names_the_judges_rules(judge):
    schema = (ROOT / "docs/multiplier-log.schema.json").read_text()
    assert schema == cache_rule_catalogue.schema_with_enums(schema, judge), UPDATE
    defs = json.loads(schema)["$defs"]
    assert set(defs["rule"]["enum"]) == set(cache_rule_catalogue.of_severity(judge, "violation"))
    assert set(defs["advisory"]["enum"]) == set(cache_rule_catalogue.of_severity(judge, "advisory"))


def test_updating_the_schema_rewrites_only_the_two_enums(judge):
    schema = (ROOT / "docs/multiplier-log.schema.json").read_text()
    emptied = schema.replace('"rule": {"enum": [', '"rule": {"enum": ["gone", ', 1)
    assert emptied != schema
    assert cache_rule_catalogue.schema_with_enums(emptied, judge) == schema
