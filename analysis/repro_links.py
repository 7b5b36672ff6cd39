"""How the report points at `./spe repro` (spe_tools/repro, docs/repro.md): the command line that turns a proxy's
cache-rule violation on a request into a case and replays it, and the case when it was already written."""

from __future__ import annotations

import shlex
from pathlib import Path

from analysis.readers.records import COLLECTOR
from spe_tools.rundir.layout import CASE_JSON, MULTIPLIER_LOG, RunDir


def repro_run(run: Path) -> Path | None:
    """The run directory `./spe repro` can take a case from (it reads RUN/multiplier.jsonl), if the report has one."""
    run = Path(run)
    directory = run if run.is_dir() else run.parent if run.name == MULTIPLIER_LOG else None
    return directory if directory is not None and RunDir(directory).multiplier_log.exists() else None


def repro_command(run: Path, proxy: str, request: int | str) -> str:
    """The command line that writes and replays a proxy's violation on a request as a case (spe_tools/repro)."""
    return f"./spe repro {shlex.quote(str(run))} --proxy {shlex.quote(proxy)} --request {request}"


def repro_case(run: Path, proxy: str, request: int) -> Path | None:
    """The case `./spe repro` already wrote for it, in its default place (spe_tools/repro/case_dir.py default_dir)."""
    case = RunDir(run).repro(request, proxy)
    return case if (case / CASE_JSON).exists() else None


def repro_text(sections: list[dict], runs: dict[str, Path]) -> list[str]:
    """Per proxy with violations, the first request of each rule it broke: what `./spe repro` takes (in a merged
    report, each from its own run: `./spe repro` reads one)."""
    usable = {label: found for label, run in runs.items() if (found := repro_run(run)) is not None}
    merged = len(runs) > 1
    firsts = [(s["label"], [f"{r['rule']} {r['example']['id']}" + (f" ({r['example']['run']})" if merged else "")
                            for r in s["rules"] if r["count"] and r["example"] and r["example"]["run"] in usable])
              for s in sections if s["name"] != COLLECTOR]
    firsts = [(label, rules) for label, rules in firsts if rules]
    if not firsts:
        return []
    run = next(iter(usable.values())) if not merged else Path("RUN")
    width = max(len(label) for label, _ in firsts) + 2
    whose = " (RUN the run in brackets)" if merged else ""
    return [f"Reproduce one as a case: {repro_command(run, 'PROXY', 'ID')} (docs/repro.md), ID the first request of "
            f"each rule broken{whose}:", *(f"  {label:{width}}{', '.join(rules)}" for label, rules in firsts)]
