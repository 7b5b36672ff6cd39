"""Which SPE produced a result: `describe()` names the checkout's commit and whether its tree was modified; a
run's lab.json keeps it and the report's header and summary.json show it."""

from __future__ import annotations

import subprocess

from test_analysis import measure, proxy, record
from test_report_trust import write_run

from analysis.report import build_report, html_report, summary_json, text_report
from spe_tools.rundir.lab_json import LabJson
from spe_tools.version import ROOT, describe


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_describe_names_the_commit_and_whether_the_tree_differs():
    commit = git("rev-parse", "HEAD")
    expected = f"{commit} (modified)" if git("status", "--porcelain") else commit
    assert describe() == expected


def test_lab_json_keeps_the_version_and_the_report_shows_it(tmp_path):
    assert LabJson.from_json(LabJson(spe_version="abc123 (modified)").to_json()).spe_version == "abc123 (modified)"
    lab = {"spe_version": "abc123 (modified)", "collector": {"ports": {"direct": 5000}},
           "proxies": {"squid": {"kind": "squid"}}}
    rep = build_report(write_run(tmp_path, [record(1, measure(), [proxy("squid")])], lab))
    assert text_report(rep).splitlines()[0] == f"SPE report: {tmp_path} (run by SPE abc123 (modified))"
    assert summary_json(rep)["spe_version"] == "abc123 (modified)"
    page = html_report(rep)  # after the counts, which the live page's readers look for as "RUN: N client requests;"
    assert f"{tmp_path}: 1 client requests;" in page and "Run by SPE abc123 (modified)." in page


def test_a_run_without_a_version_says_nothing_of_it(tmp_path):
    rep = build_report(write_run(tmp_path, [record(1, measure(), [proxy("squid")])]))
    assert "run by SPE" not in text_report(rep) and summary_json(rep)["spe_version"] is None
