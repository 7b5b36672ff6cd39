"""Where the HAR origin keeps response bodies: out of memory, in a spill file.

A HAR's bytes are mostly its bodies (a 500 MB recording holds a few MB of headers), and the origin must be able to
answer any recorded request at any time. So as the reader streams the file it appends each decoded body to an
unlinked temporary file and keeps only its offset and length (`Spilled`); a reply reads its body back with one
pread, which the page cache makes cheap. Memory then grows with the number of entries, not with the file's size.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass


@dataclass(frozen=True)
class Spilled:
    """A body in the spill file."""

    offset: int
    length: int


class BodyStore:
    """An append-only spill file, removed when closed (or when the process ends: it is unlinked at once)."""

    def __init__(self, directory: str | None = None):
        self.file = tempfile.TemporaryFile(prefix="spe-har-bodies-", dir=directory)
        self.size = 0
        self.unflushed = False

    def put(self, data: bytes) -> Spilled:
        self.file.write(data)  # only ever appended: reads go by pread, which leaves the position alone
        self.unflushed = True
        ref = Spilled(self.size, len(data))
        self.size += len(data)
        return ref

    def get(self, ref: Spilled) -> bytes:
        if self.unflushed:  # what put() wrote may still be in the file object's buffer
            self.file.flush()
            self.unflushed = False
        return os.pread(self.file.fileno(), ref.length, ref.offset)

    def close(self) -> None:
        self.file.close()


def body_bytes(body: bytes | Spilled, store: BodyStore | None) -> bytes:
    """A body as bytes, read back from `store` where it was spilled."""
    if isinstance(body, Spilled):
        if store is None:
            raise ValueError("a spilled body without its store")
        return store.get(body)
    return body
