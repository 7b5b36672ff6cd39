"""The shape of the Python code, from its imports (read with `ast`, nothing imported): no two modules import each
other, directly or around a loop, and the lab, workload, repro and prefetch side reaches the analysis only through
the run directory's contract (spe_tools/rundir), never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("spe_tools", "analysis")
# The one place the lab side imports the analysis: ./spe lab run writes the report when the run ends (its report
# function imports analysis.* inside itself, so a lab without polars still runs and says how to report later).
ANALYSIS_ALLOWED_IN = {"spe_tools.lab.cli"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def imported(node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The project modules an import statement names (`from a.b import c` is module a.b.c when there is one)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level or node.module is None:
        return []  # the project uses absolute imports only
    else:
        names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                 for alias in node.names]
    return [name for name in names if name in known]


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (at the top, in a function, under TYPE_CHECKING)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {target for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                       for target in imported(node, known) if target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other():
    assert cycles(import_graph()) == []


def test_the_lab_side_reaches_the_analysis_only_through_the_contract():
    graph = import_graph()
    crossing = {name: sorted(t for t in targets if t.split(".")[0] == "analysis")
                for name, targets in graph.items() if name.split(".")[0] == "spe_tools"}
    assert {name: targets for name, targets in crossing.items() if targets and name not in ANALYSIS_ALLOWED_IN} == {}


def test_the_contract_stands_below_the_lab_and_the_analysis():
    """spe_tools.rundir imports nothing of the project but itself: both sides can depend on it."""
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("spe_tools.rundir"):
            assert all(t.startswith("spe_tools.rundir") for t in targets), (name, targets)


def test_the_graph_sees_imports():
    """A guard for the tests above: the reader finds imports of each form."""
    graph = import_graph()
    assert "spe_tools.rundir.lab_json" in graph["analysis.noise"]  # from a.b import C
    assert "spe_tools.lab.access" in graph["spe_tools.lab.runner"]  # from a import module
    assert "analysis.report" in graph["spe_tools.lab.cli"]  # inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
