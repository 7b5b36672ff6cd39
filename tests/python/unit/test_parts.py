"""The rule for a missing part (parts.py), in a pytest of its own run in this process: by hand a missing part
skips its test; with SPE_REQUIRE_ALL_PARTS=1 (./spe test) it fails it, and any other skip fails the run."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
PARTS = ("-p", "parts", "-W", "ignore::pytest.PytestAssertRewriteWarning")  # parts.py: the outer pytest imported it

TESTS = """
from parts import environment_skip, require

def test_present():
    require([], "a part that is here")

def test_missing():
    require(["/opt/x is not built"], "the X")

def test_not_on_this_host():
    environment_skip("not root")
"""


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, required: bool) -> pytest.RunResult:
    if required:
        monkeypatch.setenv("SPE_REQUIRE_ALL_PARTS", "1")
    else:
        monkeypatch.delenv("SPE_REQUIRE_ALL_PARTS", raising=False)
    pytester.makepyfile(test_parts_rule=TESTS)
    return pytester.runpytest_inprocess(*PARTS, "-rs")


def test_by_hand_a_missing_part_and_the_environment_skip(pytester, monkeypatch):
    result = run(pytester, monkeypatch, required=False)
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*the X is missing: /opt/x is not built (./spe setup installs or builds it)*",
                                 "*environment: not root*"])


def test_with_every_part_required_a_missing_part_fails_and_a_skip_fails_the_run(pytester, monkeypatch):
    result = run(pytester, monkeypatch, required=True)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 skipped: SPE_REQUIRE_ALL_PARTS=1 (./spe test) allows no skip*",
                                 "*test_not_on_this_host: environment: not root*"])


def test_with_every_part_required_a_skip_alone_fails_the_run(pytester, monkeypatch):
    monkeypatch.setenv("SPE_REQUIRE_ALL_PARTS", "1")
    pytester.makepyfile(test_only_a_skip="""
import pytest

def test_fine():
    pass

def test_skipped():
    pytest.skip("for no reason")
""")
    result = pytester.runpytest_inprocess(*PARTS)
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_installed_kinds_keeps_those_there_by_hand_and_requires_all_otherwise(monkeypatch, tmp_path):
    from parts import installed_kinds

    from spe_tools.lab.definition.kinds import KINDS

    monkeypatch.setattr(KINDS["squid"], "missing", lambda multiplier=None: [])
    monkeypatch.setattr(KINDS["tinyproxy"], "missing", lambda multiplier=None: ["tinyproxy is not installed"])
    monkeypatch.delenv("SPE_REQUIRE_ALL_PARTS", raising=False)
    assert installed_kinds(["squid", "tinyproxy"], tmp_path) == ["squid"]
    monkeypatch.setenv("SPE_REQUIRE_ALL_PARTS", "1")
    with pytest.raises(pytest.fail.Exception, match="tinyproxy: tinyproxy is not installed"):
        installed_kinds(["squid", "tinyproxy"], tmp_path)
