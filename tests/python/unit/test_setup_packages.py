"""`./spe setup` installs every Debian package a lab kind names (spe_tools/lab/kinds.py): the kinds say which
package has their programs, the script's APT_PACKAGES says what setup installs, and a kind whose package is not
in that list would fail a fresh machine's first lab with "not installed"."""

from __future__ import annotations

import re

from conftest import ROOT

from spe_tools.lab.kinds import KINDS


def apt_packages() -> set[str]:
    block = re.search(r"^APT_PACKAGES=\((.*?)\)", (ROOT / "spe").read_text(), re.S | re.M)
    assert block, "./spe has no APT_PACKAGES=(...) list"
    return set(block.group(1).split())


def test_setup_installs_the_package_of_every_lab_kind():
    wanted = {kind.name: kind.package for kind in KINDS.values() if kind.package}
    assert len(wanted) >= 6  # squid, trafficserver, varnish, apache2, nginx-light, haproxy, ...
    assert {name: package for name, package in wanted.items() if package not in apt_packages()} == {}
