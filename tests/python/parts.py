"""What a test needs that `./spe setup` installs or builds, and the one rule for when it is missing.

Run by hand (`pytest tests/python/loopback/test_x.py`), a test whose part is missing (the Multiplier, the patched
Collector, a Debian proxy, nginx, Chromium) is skipped and says what to run. `./spe test` sets
SPE_REQUIRE_ALL_PARTS=1: then a missing part fails its test, and any skip at all fails the run (the hooks below),
so that a machine without the patched Collector cannot pass the tests that were meant to test it.

What the project cannot provide (running as root, a group of the host) is an environment skip: a skip all the
same, said as such, and `./spe test` still fails on it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import pytest

from spe_tools.lab.definition.kinds import KINDS

REQUIRE_ALL = "SPE_REQUIRE_ALL_PARTS"


def all_parts_required() -> bool:
    return os.environ.get(REQUIRE_ALL) == "1"


def require(problems: Iterable[str], what: str) -> None:
    """Go on if `problems` is empty; else fail (SPE_REQUIRE_ALL_PARTS=1) or skip, naming `what` and the fix."""
    problems = list(problems)
    if not problems:
        return
    message = f"{what} is missing: {'; '.join(problems)} (./spe setup installs or builds it)"
    if all_parts_required():
        pytest.fail(f"{message}; {REQUIRE_ALL}=1 (./spe test) requires every part", pytrace=False)
    pytest.skip(message)


def missing_program(program: str) -> list[str]:
    """[] if `program` (a name on PATH or a path) can run here, else why not: for require()."""
    return [] if shutil.which(program) else [f"{program} is not installed"]


def environment_skip(reason: str) -> NoReturn:
    """Skip for what this host is, which no setup step changes (not root, no such group)."""
    pytest.skip(f"environment: {reason}")


def installed_kinds(kinds: Iterable[str], multiplier: Path) -> list[str]:
    """The proxy kinds among `kinds` whose programs are installed here. Every one must be when
    SPE_REQUIRE_ALL_PARTS=1; run by hand, the test goes on with those there are."""
    kinds = list(kinds)
    problems = {kind: KINDS[kind].missing(multiplier) for kind in kinds}
    if all_parts_required():
        require([f"{kind}: {problem}" for kind in kinds for problem in problems[kind]], "a proxy kind under test")
    return [kind for kind in kinds if not problems[kind]]


class SkipPolicy:
    """With SPE_REQUIRE_ALL_PARTS=1: every skip is listed at the end, and any skip fails the run."""

    def __init__(self) -> None:
        self.skipped: list[pytest.CollectReport | pytest.TestReport] = []

    def note(self, report: pytest.CollectReport | pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self.note(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.note(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.skipped and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.skipped:
            return
        terminalreporter.section(f"{len(self.skipped)} skipped: {REQUIRE_ALL}=1 (./spe test) allows no skip",
                                 red=True)
        for report in self.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            terminalreporter.line(f"{report.nodeid}: {reason.removeprefix('Skipped: ')}")


def pytest_configure(config: pytest.Config) -> None:
    """A hook: the root conftest imports it, and `-p parts` loads it in a pytest of its own."""
    if all_parts_required():
        config.pluginmanager.register(SkipPolicy(), "spe-skip-policy")
