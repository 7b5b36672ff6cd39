"""Helpers shared by the benchmarks: the machine line and the results file."""

from __future__ import annotations

import os
import platform
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs/benchmarks.md"


def machine() -> str:
    """'2 vCPU <CPU model>, Linux <kernel>' of this machine."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{os.cpu_count()} vCPU {model}, Linux {platform.release()}"


def append_result(text: str) -> None:
    """Appends a result section to docs/benchmarks.md (created with its header if missing)."""
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmarks\n\nEach section was appended by the command it names.\n")
    with RESULTS.open("a") as f:
        f.write(text)
