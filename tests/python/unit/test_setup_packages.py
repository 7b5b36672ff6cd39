"""`./spe setup` installs every Debian package a lab kind names (spe_tools/lab/definition/kinds.py): the kinds say which
package has their programs, the script's BUILD_PACKAGES, DEMO_PACKAGES and TEST_PACKAGES say what setup installs,
and a kind whose package is in none would fail a fresh machine's first lab with "not installed". `./spe demo`
installs only BUILD_PACKAGES and DEMO_PACKAGES, so those must hold every proxy of the default lab it runs."""

from __future__ import annotations

import re

from conftest import ROOT

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import load_lab


def packages(name: str) -> set[str]:
    block = re.search(rf"^{name}=\((.*?)\)", (ROOT / "spe").read_text(), re.S | re.M)
    assert block, f"./spe has no {name}=(...) list"
    return set(block.group(1).split())


def test_setup_installs_the_package_of_every_lab_kind():
    wanted = {kind.name: kind.package for kind in KINDS.values() if kind.package}
    assert len(wanted) >= 6  # squid, trafficserver, varnish, apache2, nginx-light, haproxy, ...
    installed = packages("BUILD_PACKAGES") | packages("DEMO_PACKAGES") | packages("TEST_PACKAGES")
    assert {name: package for name, package in wanted.items() if package not in installed} == {}


def test_the_demo_installs_what_the_default_lab_runs_and_the_tests_the_rest():
    demo = packages("BUILD_PACKAGES") | packages("DEMO_PACKAGES")
    lab = load_lab(ROOT / "configs/labs/default.toml")
    needed = {KINDS[p.kind].package for p in lab.proxies if KINDS[p.kind].package}
    assert needed - demo == set()
    assert demo & packages("TEST_PACKAGES") == set()
    assert {"chromium", "default-jre-headless", "clang-format"} <= packages("TEST_PACKAGES")


def test_the_build_packages_are_what_both_builds_need_and_nothing_the_lab_runs():
    """The demo installs BUILD_PACKAGES before its builds start and DEMO_PACKAGES beside them: a proxy in the
    first list would hold the builds back, a compiler in the second would start them without it."""
    build = packages("BUILD_PACKAGES")
    assert {"build-essential", "cmake", "ninja-build", "ccache", "quilt", "dpkg-dev", "autoconf"} <= build
    assert build & packages("DEMO_PACKAGES") == set()
    proxies = {kind.package for kind in KINDS.values() if kind.package}
    assert build & proxies == set()
