"""Reading a log another process is still writing: only the lines completed since the last read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class LogTail:
    path: Path
    offset: int = 0

    def new_lines(self) -> list[bytes]:
        """Complete lines written since the last call (none if the file is not there yet)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # the last line may still be half-written
        self.offset += len(complete)
        return complete.splitlines()
