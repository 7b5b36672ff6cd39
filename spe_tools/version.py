"""Which SPE this is: the git commit of the checkout and whether its tree differs from that commit. `./spe
--version` prints it; every run's lab.json and the report's header keep it, so a result can be traced to the code
that produced it. Standard library only: `./spe --version` runs it with the system's python3, before any venv."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe() -> str:
    """'<commit>' or '<commit> (modified)'; 'unknown (not a git checkout)' for a copy without its history."""
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return "unknown (not a git checkout)"
    # Untracked files count: a new module changes what runs as much as an edited one.
    changed = _git("status", "--porcelain")
    return f"{commit} (modified)" if changed else commit
