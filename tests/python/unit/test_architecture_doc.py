"""docs/architecture.md names every source file of the Multiplier and every module of the analysis: a file the map
leaves out is one a newcomer cannot place."""

from __future__ import annotations

import re

from conftest import ROOT

DOC = ROOT / "docs/architecture.md"


def named(stem: str, text: str) -> bool:
    """`core/config` is named as `core/config.*`, `core/config.cpp` or `core/config.hpp`; a module by its file."""
    return re.search(re.escape(stem) + r"(\.\*|\.cpp|\.hpp|\.py)", text) is not None


def test_every_multiplier_source_file_is_on_the_map():
    text = DOC.read_text()
    stems = {str(p.relative_to(ROOT / "multiplier/src").with_suffix("")) for p in (ROOT / "multiplier/src").rglob("*")
             if p.suffix in (".cpp", ".hpp") and p.parent != ROOT / "multiplier/src"}
    assert len(stems) > 50
    assert sorted(stem for stem in stems if not named(stem, text)) == []


def test_every_analysis_module_is_on_the_map():
    text = DOC.read_text()
    modules = {p.name for p in (ROOT / "analysis").rglob("*.py") if p.name != "__init__.py"}
    assert sorted(m for m in modules if not named(m.removesuffix(".py"), text)) == []
