"""The shape of the Python code, from its imports (read with `ast`, nothing imported): no two modules import each
other, directly or around a loop (the benchmarks included), the lab, workload, repro and prefetch side reaches the
analysis only through the run directory's contract (spe_tools/rundir), never the other way round, and the
benchmarks stand on top: no tool imports them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGES = ("spe_tools", "analysis", "bench")


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


def type_only_imports(tree: ast.Module) -> set[ast.AST]:
    """The import statements under `if TYPE_CHECKING:`."""
    return {node for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test).endswith(
        "TYPE_CHECKING") for statement in block.body for node in ast.walk(statement)
        if isinstance(node, ast.Import | ast.ImportFrom)}


@functools.cache
def import_graph(type_only: bool = True) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (at the top, in a function and, with `type_only`, under
    TYPE_CHECKING). Read once per pytest run (half a second) and shared by the tests, which only read it."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        skipped = set() if type_only else type_only_imports(tree)
        graph[name] = {target for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                       and node not in skipped for target in imported(node, known) if target != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through their imports (the graph is small: reachability
    from each module is enough)."""
    reach = {node: reachable(graph, node) for node in graph}
    return sorted({tuple(sorted(m for m in reach[node] if node in reach.get(m, ()))) for node in graph
                   if node in reach[node]})


def test_no_modules_import_each_other():
    assert cycles(import_graph()) == []


def test_the_lab_side_reaches_the_analysis_only_through_the_contract():
    graph = import_graph()
    crossing = {name: sorted(t for t in targets if t.split(".")[0] == "analysis")
                for name, targets in graph.items() if name.split(".")[0] == "spe_tools"}
    # ./spe lab run's report at the end of a run is `python -m analysis.cli RUN --lab-summary`, not an import
    assert {name: targets for name, targets in crossing.items() if targets} == {}


def test_the_benchmarks_stand_on_top_no_tool_imports_them():
    graph = import_graph()
    assert any(name.startswith("bench.") for name in graph)  # they are read
    assert {name: sorted(t for t in targets if t.split(".")[0] == "bench") for name, targets in graph.items()
            if name.split(".")[0] != "bench" and any(t.split(".")[0] == "bench" for t in targets)} == {}


def test_the_contract_stands_below_the_lab_and_the_analysis():
    """spe_tools.rundir imports nothing of the project but itself: both sides can depend on it."""
    graph = import_graph()
    for name, targets in graph.items():
        if name.startswith("spe_tools.rundir"):
            assert all(t.startswith("spe_tools.rundir") for t in targets), (name, targets)


def room_graph(graph: dict[str, set[str]], folder: str) -> dict[str, set[str]]:
    """The imports between the rooms of a folder: each module or subfolder directly inside it, with everything
    below it (spe_tools.lab.start.collector is in the room spe_tools.lab.start of spe_tools.lab)."""
    def room(name: str) -> str | None:
        rest = name.removeprefix(folder + ".")
        return f"{folder}.{rest.split('.')[0]}" if rest != name else None

    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if (mine := room(name)) is not None:
            rooms.setdefault(mine, set()).update(r for t in targets if (r := room(t)) not in (None, mine))
    return rooms


@pytest.mark.parametrize("folder", ["spe_tools", "spe_tools.lab", "spe_tools.workload", "analysis"])
def test_each_folder_stands_in_floors(folder):
    """No room of the folder imports one that imports it back, around any loop: read from the top, every arrow
    goes down (the shared helpers stand below what uses them, as in multiplier/src)."""
    rooms = room_graph(import_graph(), folder)
    assert len(rooms) > 3  # the folder is read
    assert cycles(rooms) == []


def test_the_graph_sees_imports():
    """A guard for the tests above: the reader finds imports of each form."""
    graph = import_graph()
    assert "spe_tools.rundir.lab_json" in graph["analysis.sections.noise"]  # from a.b import C
    assert "spe_tools.rundir.access" in graph["spe_tools.lab.start.bring_up"]  # from a import module
    assert cycles(room_graph({"f.a.x": {"f.b.y"}, "f.b.y": {"f.c"}, "f.c": {"f.a.z"}, "f.a.z": set()}, "f")) == [
        ("f.a", "f.b", "f.c")]
    assert "spe_tools.thresholds" in graph["analysis.cli"]  # from a.b import f
    assert "analysis.report_data" in graph["analysis.section"]  # under TYPE_CHECKING
    assert "analysis.report_data" not in import_graph(type_only=False)["analysis.section"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
