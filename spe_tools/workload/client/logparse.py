"""Access-log parsing for the replayer (pure): Squid native, Apache combined and common formats,
ROPE's dynamic-URL filter, spreading of identical timestamps, host rewriting."""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

APACHE_RE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "([^"]*)" (\d{3}|-) (\d+|-)')
REPLAYED_METHODS = frozenset({"GET", "HEAD", "POST"})


class LogError(ValueError):
    """A line that is not a log entry of the expected format."""


@dataclass(frozen=True)
class Entry:
    time: float  # when the request started, epoch seconds
    client: str
    method: str
    url: str  # absolute (Squid) or a path (Apache)
    line_no: int = 0


@dataclass
class Parsed:
    entries: list[Entry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # malformed lines, each with its number
    skipped: Counter = field(default_factory=Counter)  # well-formed lines not replayed, by reason


def parse_squid(line: str, line_no: int = 0) -> Entry:
    """Squid's native format: time elapsed client code/status bytes method URL ...

    Squid logs when a transaction ends; the start (time - elapsed) is what gets replayed.
    """
    f = line.split()
    if len(f) < 7:
        raise LogError("too few fields for Squid's native format")
    try:
        end, elapsed_ms = float(f[0]), int(f[1])
    except ValueError as e:
        raise LogError(f"bad time or elapsed field: {e}") from e
    if "/" not in f[3]:
        raise LogError(f"bad result code {f[3][:40]!r}")
    return Entry(end - elapsed_ms / 1000, f[2], f[5], f[6], line_no)


def parse_apache(line: str, line_no: int = 0) -> Entry:
    """Apache common or combined format (the combined tail is ignored)."""
    m = APACHE_RE.match(line)
    if not m:
        raise LogError("not Apache common/combined format")
    try:
        when = datetime.datetime.strptime(m.group(2), "%d/%b/%Y:%H:%M:%S %z").timestamp()
    except ValueError as e:
        raise LogError(f"bad date {m.group(2)!r}") from e
    request = m.group(3).split()
    if len(request) not in (2, 3) or not request[1].startswith(("/", "http://")):
        raise LogError(f"bad request line {m.group(3)[:60]!r}")
    return Entry(when, m.group(1), request[0], request[1], line_no)


def detect_format(line: str) -> str:
    return "apache" if APACHE_RE.match(line) else "squid"


def is_dynamic(method: str, url: str) -> bool:
    """ROPE's heuristic for dynamic resources: cgi-bin, '?', '.cgi', or POST (section 8.2.1)."""
    lowered = url.lower()
    return method == "POST" or "cgi-bin" in lowered or "?" in url or ".cgi" in lowered


def parse_lines(lines, fmt: str = "auto", filter_dynamic: bool = False) -> Parsed:
    """Entries in time order; a malformed line becomes a warning, never an exception."""
    out = Parsed()
    parser = {"squid": parse_squid, "apache": parse_apache}.get(fmt)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if parser is None:  # auto: the first well-formed line decides
                fmt = detect_format(line)
                parser = parse_squid if fmt == "squid" else parse_apache
            entry = parser(line, no)
        except LogError as e:
            out.warnings.append(f"line {no}: {e}: {line[:100]}")
            continue
        if entry.method not in REPLAYED_METHODS:
            out.skipped[f"method {entry.method}"] += 1
        elif filter_dynamic and is_dynamic(entry.method, entry.url):
            out.skipped["dynamic"] += 1
        else:
            out.entries.append(entry)
    out.entries.sort(key=lambda e: e.time)  # stable: equal times keep log order
    return out


def spread_identical(entries: list[Entry], step_s: float = 0.010) -> list[Entry]:
    """Requests logged with the same timestamp get spread `step_s` apart (ROPE did 10 ms for
    Apache's one-second resolution). Order is kept; a spread never passes a later entry's time."""
    out: list[Entry] = []
    previous_raw, k = None, 0
    for e in entries:
        k = k + 1 if e.time == previous_raw else 0
        previous_raw = e.time
        t = e.time + k * step_s
        if out and t < out[-1].time:
            t = out[-1].time
        out.append(replace(e, time=t) if t != e.time else e)
    return out


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def target_url(url: str, origin: str | None) -> str:
    """The absolute URL to request: the log's, with scheme and host:port replaced by `origin` if given."""
    parts = urlsplit(url)
    if origin:
        return urlunsplit(("http", origin, parts.path or "/", parts.query, ""))
    if not parts.scheme:
        raise LogError("a path-only URL needs --origin HOST:PORT")
    return url
