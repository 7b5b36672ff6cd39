"""`./spe test --write-docs`: the time of each step of the run that just passed, as the section "Test times" of
docs/benchmarks.md (bench/lib/doc.py), so that the test suite's timings live in one place and are written by
the command that measured them, never by hand.

Reads `./spe`'s step lines on standard input ("  123s  C++ build (release)"; argv: the command as run).
"""

from __future__ import annotations

import datetime
import re
import sys

from bench.lib.doc import machine, write_section

TITLE = "Test times"
STEP = re.compile(r"^\s*(\d+)s\s+(.+?)\s*$")


def section(step_lines: list[str], command: str, today: datetime.date) -> str:
    """The section: each step's seconds, in the order they ran, and the total."""
    steps = [(int(m.group(1)), m.group(2)) for line in step_lines if (m := STEP.match(line))]
    if not steps:
        raise ValueError("no step times given (lines like '  123s  C++ build (release)')")
    rows = "".join(f"| {name} | {seconds:,} |\n" for seconds, name in steps)
    total = sum(seconds for seconds, _ in steps)
    return (f"## {TITLE} — {today}\n\nMachine: {machine()}. Command: `{command}` (a run that passed; written by "
            f"`./spe test --write-docs`). A step that found everything built or installed takes a second.\n\n"
            f"| step | seconds |\n|---|---|\n{rows}| **all** | **{total:,}** ({total / 60:.0f} min) |\n")


def main() -> int:
    command = " ".join(sys.argv[1:]) or "./spe test"
    try:
        text = section(sys.stdin.read().splitlines(), command, datetime.date.today())
    except ValueError as e:
        print(f"spe test: {e}", file=sys.stderr)
        return 2
    print(text)
    write_section(TITLE, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
