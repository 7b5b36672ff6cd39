"""A HAR file read as a stream: its entries are parsed one at a time as the file goes by (ijson, over the yajl C
parser), so a recording of hundreds of MB is never in memory whole: one entry's JSON at a time, and of each entry
what the reader is asked to keep (har_entry.Bodies: the replay drops response bodies, the HAR origin spills them
to a file). The entries themselves, without those bodies, are kept: both sides need them in time order.

A file that is no HAR (no JSON, no log.entries) or has an entry that cannot be used is one HarError naming the
file, the entry's index and the field; the fixes made on the way are counted (har_entry.FIXES).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import ijson

from spe_tools.workload.har.archive import HarEntry, HarError
from spe_tools.workload.har.entry import Bodies, parse_entry

BOM = b"\xef\xbb\xbf"  # DevTools exports may start with one
ENTRIES = "log.entries"


@dataclass
class HarFile:
    path: Path
    entries: list[HarEntry]  # by start time, then place in the file
    fixes: Counter = field(default_factory=Counter)  # har_entry.FIXES: what was read past or put right


def _open(path: Path) -> BinaryIO:
    f = open(path, "rb")  # closed by the caller's with
    if f.read(len(BOM)) != BOM:
        f.seek(0)
    return f


def _entries_problem(path: Path) -> str | None:
    """Why a file whose log.entries yielded nothing is no HAR (None: it is one, with no entries). Only read for
    such a file: a second pass over an empty recording costs nothing."""
    with _open(path) as f:
        for prefix, event, _ in ijson.parse(f):
            if prefix == ENTRIES:
                return None if event == "start_array" else "log.entries is no list"
    return "no log.entries (is it a HAR file?)"


def raw_entries(path: Path | str) -> Iterator[object]:
    """Each element of the file's log.entries, as JSON values (numbers as floats), one at a time."""
    path = Path(path)
    count = 0
    try:
        with _open(path) as f:
            for raw in ijson.items(f, f"{ENTRIES}.item", use_float=True):
                count += 1
                yield raw
        problem = None if count else _entries_problem(path)
    except OSError as e:
        raise HarError(f"{path}: cannot be read ({e.strerror or e})") from None
    except (ijson.JSONError, UnicodeDecodeError) as e:
        where = f"in or after entry {count}" if count else "before its first entry"
        first = (str(e).strip().splitlines() or ["?"])[0]  # yajl adds lines that point at the byte
        raise HarError(f"{path}: not a readable JSON file: {where}: {first}") from None
    if problem:
        raise HarError(f"{path}: {problem}")


def read_har_file(path: Path | str, bodies: Bodies = "keep") -> HarFile:
    """The file's entries by their start time (then their order in the file), and the fixes made."""
    fixes: Counter = Counter()
    entries = []
    for index, raw in enumerate(raw_entries(path)):
        try:
            entries.append(parse_entry(raw, index, bodies, fixes))
        except HarError as e:
            raise HarError(f"{path}: {e}") from None
    entries.sort(key=lambda e: (e.started, e.index))
    return HarFile(Path(path), entries, fixes)


def read_har(path: Path | str, bodies: Bodies = "keep") -> list[HarEntry]:
    return read_har_file(path, bodies).entries


def read_hars(paths: Iterable[Path | str], bodies: Bodies = "keep") -> Iterator[HarFile]:
    for path in paths:
        yield read_har_file(path, bodies)
