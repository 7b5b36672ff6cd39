"""The Multiplier's mismatch captures (RUN/captures/<id>-<proxy>.txt, docs/log-format.md "Mismatch captures"), read
back: both replies' headers as received and the first bytes of both bodies.

A capture is text around raw bytes: a few `key: value` lines, then per reply

    ## Collector reply header        (the header as received: status line, fields, CRLFs, the blank line)
    ## Collector body: first N of M bytes, md5 X
    <N bytes>

and the same for the proxy. The bodies are read by their stated length, never by looking for the next heading:
a body may hold any bytes. A file that does not have this shape reads as None (a capture cut short by a full disk,
another version's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BODY_LINE = re.compile(rb"## (Collector|Proxy) body: first (\d+) of (\d+) bytes, md5 (\S+)\n")
STATUS_LINE = re.compile(r"(HTTP/\d(?:\.\d)?) (\d{3})(?: (.*))?")
CAPTURE_NAME = re.compile(r"(\d{8,})-(.+)\.txt")  # layout.capture_file's names


@dataclass(frozen=True)
class CapturedReply:
    http_version: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]  # as received, in order (secrets as the Multiplier wrote them)
    body_head: bytes  # the first bytes of the body
    body_bytes: int  # the whole body's length
    md5: str  # of the whole body, "-" when it was not complete


@dataclass(frozen=True)
class Capture:
    collector: CapturedReply | None  # None: that reply had no header (a leg that failed before one)
    proxy: CapturedReply | None


def parse_header(raw: bytes) -> tuple[str, int, str, tuple[tuple[str, str], ...]] | None:
    """A reply header's status line and fields; None for one that is empty or has no status line."""
    lines = raw.decode("latin-1").split("\r\n")
    status = STATUS_LINE.fullmatch(lines[0].strip())
    if status is None:
        return None
    fields = tuple((name.strip(), value.strip()) for name, sep, value in (line.partition(":") for line in lines[1:])
                   if sep and name.strip())
    return status[1], int(status[2]), (status[3] or "").strip(), fields


def _reply(text: bytes, at: int, who: bytes) -> tuple[CapturedReply | None, int] | None:
    """The reply whose header heading starts at `at`: it and where the text after its body starts."""
    heading = b"## " + who + b" reply header\n"
    if at < 0 or not text.startswith(heading, at):
        return None
    body_line = BODY_LINE.search(text, at + len(heading))
    if body_line is None or body_line[1] != who:
        return None
    start = body_line.end()
    kept = int(body_line[2])
    if len(text) < start + kept:
        return None
    parsed = parse_header(text[at + len(heading):body_line.start()].removesuffix(b"\n"))
    reply = None if parsed is None else CapturedReply(*parsed, text[start:start + kept], int(body_line[3]),
                                                      body_line[4].decode("ascii", "replace"))
    return reply, start + kept


def read_capture(path: Path) -> Capture | None:
    """The capture at `path`; None when there is none or it does not have a capture's shape."""
    try:
        text = Path(path).read_bytes()
    except OSError:
        return None
    collector = _reply(text, text.find(b"## Collector reply header\n"), b"Collector")
    if collector is None:
        return None
    proxy = _reply(text, text.find(b"## Proxy reply header\n", collector[1]), b"Proxy")
    return Capture(collector[0], proxy[0] if proxy else None)


def captures_by_request(directory: Path) -> dict[int, dict[str, Path]]:
    """The capture files in a captures directory: request id -> proxy name -> file (one listing of the
    directory, however many records ask)."""
    found: dict[int, dict[str, Path]] = {}
    if not Path(directory).is_dir():
        return found
    for path in sorted(Path(directory).iterdir()):
        if (name := CAPTURE_NAME.fullmatch(path.name)) is not None:
            found.setdefault(int(name[1]), {})[name[2]] = path
    return found
