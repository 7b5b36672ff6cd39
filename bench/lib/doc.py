"""The results file, docs/benchmarks.md: each benchmark's section replaced in place by its latest run (git keeps
the earlier ones), and what every section states about its run (the machine, the command)."""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from pathlib import Path

from bench import ROOT

RESULTS = ROOT / "docs/benchmarks.md"

HEADER = ("# Benchmarks\n\nThe latest result of each benchmark, one section each, written by the command it "
          "names; earlier runs: `git log -p docs/benchmarks.md`.\n")


def is_heading_of(line: str, title: str) -> bool:
    """Whether a line is the level-2 heading of this benchmark: '## TITLE', '## TITLE — <date>' or
    '## TITLE (<detail>) — <date>'. A longer title that only starts with the same words ('## Tail isolation:
    the fan-out ...') is another, hand-written section."""
    if not line.startswith("## "):
        return False
    heading = line[3:].rstrip("\n")
    return heading == title or heading.startswith((f"{title} — ", f"{title} ("))


def sections_of(lines: list[str], title: str) -> list[tuple[int, int]]:
    """[start, end) line ranges of this benchmark's sections: from its heading to the next level-2 heading
    (its ### sub-sections go with it); lines inside ``` fences are not headings."""
    spans, start, in_fence = [], None, False
    for i, line in enumerate(lines):
        in_fence ^= line.startswith("```")
        if in_fence or not line.startswith("## "):
            continue
        if start is not None:
            spans.append((start, i))
            start = None
        if is_heading_of(line, title):
            start = i
    if start is not None:
        spans.append((start, len(lines)))
    return spans


def with_section(document: str, title: str, section: str) -> str:
    """The document with this benchmark's section replaced by the new one, in the place of the first old
    one (later repeats are dropped), or added at the end if it has none yet."""
    section = section.strip("\n") + "\n"
    heading = section.splitlines()[0]
    if not is_heading_of(heading, title):
        raise ValueError(f"the report's heading {heading!r} is not the section '## {title} — ...'")
    lines = document.splitlines(keepends=True)
    spans = sections_of(lines, title)
    if not spans:
        return document.rstrip("\n") + "\n\n" + section
    start, end = spans[0]
    later = {i for a, b in spans[1:] for i in range(a, b)}
    rest = "".join(line for i, line in enumerate(lines[end:], end) if i not in later)
    return "".join(lines[:start]) + section + ("\n" + rest if rest.strip() else "")


def write_section(title: str, text: str) -> None:
    """Puts a result section into docs/benchmarks.md in place of the same benchmark's previous one (created with
    its header if missing), so the file holds the latest run of each benchmark; git keeps the earlier ones."""
    document = RESULTS.read_text() if RESULTS.exists() else HEADER
    replaced = bool(sections_of(document.splitlines(keepends=True), title))
    RESULTS.write_text(with_section(document, title, text))
    print(f"bench: {'replaced' if replaced else 'added'} the section '{title}' in {RESULTS} (earlier runs: "
          "git log -p docs/benchmarks.md); its explanation and the targets table at the top are written by hand",
          file=sys.stderr)


def add_write_docs(parser: argparse.ArgumentParser) -> None:
    """A benchmark prints its results; docs/benchmarks.md changes only when its user asks."""
    parser.add_argument("--write-docs", action="store_true",
                        help="also put the result into docs/benchmarks.md, in place of this benchmark's section")


def publish(report: str, problems: list[str], *, title: str, write: bool) -> int:
    """Adds the problems to the report, prints it and, if write, puts it into docs/benchmarks.md in place of
    the section of the same title; the exit status."""
    if problems:
        report += "\nProblems seen:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(report)
    if write:
        write_section(title, report)
    return 1 if problems else 0


def command_line(name: str) -> str:
    """The command as the user typed it, for the results file."""
    args = " ".join(shlex.quote(a) for a in sys.argv[1:])
    if str(ROOT / ".venv") in sys.executable:
        return f"./spe bench {name} {args}".rstrip()
    return f"python3 -m bench.{name} {args}".rstrip()


def machine() -> str:
    """'2 vCPU <CPU model>, Linux <kernel>' of this machine."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} vCPU {model}, Linux {platform.release()}"
