"""Which recorded response answers a request to the HAR origin (pure: the recordings are given, nothing is read).

A request is matched by its method, the recorded URL it stands for (its /_har/SCHEME/HOST/PATH target, see
har.lab_url, or on a recording of one host only, its plain path and query) and, when it has a body, that body.
Repeated requests for one URL take the recorded responses in the order they were recorded, the last one again
once they run out; a recorded 304 answers only a conditional request (the recording's own revalidation), so an
unconditional one passes it over. The requests of one client request (its tag, X-SPE-Request, which the lab's
Collector passes to a HAR origin) take one response: the client's, and each proxy's copy that reaches the origin
(an unconditional copy of one the recording answered 304 gets the complete response as that 304 updated it).
HEAD takes the recorded HEAD, else the GET's response without moving its sequence on.
Memory: a request body is keyed by its SHA-256, and a prepared response's body stays in the origin's spill file
(har_bodies.py) where it has one.
"""

from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from spe_tools.workload.har import reply as har_reply
from spe_tools.workload.har.archive import HarEntry, recorded_url
from spe_tools.workload.har.bodies import BodyStore
from spe_tools.workload.har.reply import Prepared, prepare

Key = tuple[str, str, bytes | None]  # method, recorded URL (normal_url), the request body's SHA-256 (None: no body)
#: How many client requests' responses are remembered by tag: the proxies' copies of one come within its timeout.
TAGS_KEPT = 4096


@dataclass
class Recorded:
    """One recorded exchange in its sequence, its response prepared once, when first asked for."""

    entry: HarEntry
    offset: int  # its recording's date offset (har_reply.date_offset)
    store: BodyStore | None = field(default=None, repr=False)  # where its body was spilled, if it was
    _prepared: Prepared | None = field(default=None, repr=False)

    def prepared(self) -> Prepared:
        if self._prepared is None:
            self._prepared = prepare(self.entry, self.offset, self.store)
        return self._prepared


def normal_url(url: str) -> str | None:
    """The form URLs are matched in: scheme and host lower case, "/" for an empty path, no fragment; None for a
    URL that is not http(s) (data:, blob:, ws:, a browser extension's)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


def servable(entry: HarEntry) -> bool:
    """An exchange with a final response to serve: DevTools records a blocked or failed request with status 0,
    and a WebSocket with 101."""
    return 200 <= entry.response.status <= 599


def key(method: str, url: str, body: bytes | None) -> Key:
    return method.upper(), url, hashlib.sha256(body).digest() if body else None


class HarIndex:
    """The recorded responses by request, and where each sequence has got to."""

    def __init__(self, recordings: Iterable[tuple[list[HarEntry], int]], store: BodyStore | None = None):
        """`recordings`: each file's entries (in time order) with its date offset, in the order given; `store`:
        where their response bodies were spilled."""
        self.store = store
        self.fixes: Counter = Counter()  # what reading the files put right (har_entry.FIXES), set by the reader
        self.sequences: dict[Key, list[Recorded]] = {}
        self.cursor: Counter = Counter()
        self.by_tag: OrderedDict[tuple[str, Key], Recorded] = OrderedDict()  # the response each tag took
        self.origins: set[tuple[str, str]] = set()  # (scheme, host) recorded
        self.left_out = 0  # entries with no response to serve
        for entries, offset in recordings:
            for entry in entries:
                self._add(entry, offset)

    def _add(self, entry: HarEntry, offset: int) -> None:
        url = normal_url(entry.request.url)
        if url is None or not servable(entry):
            self.left_out += 1
            return
        self.sequences.setdefault(key(entry.request.method, url, entry.request.body), []).append(
            Recorded(entry, offset, self.store))
        parts = urlsplit(url)
        self.origins.add((parts.scheme, parts.netloc))

    @property
    def responses(self) -> int:
        return sum(len(s) for s in self.sequences.values())

    def candidates(self, target: str) -> list[str]:
        """The recorded URLs a request target may stand for: its /_har/ URL; for a plain target, on a recording
        of one host, that host's URL (https first, where it was recorded under both schemes); else none."""
        lab = recorded_url(target)
        if lab is not None:
            return [url] if (url := normal_url(lab)) else []
        if len({host for _, host in self.origins}) != 1:
            return []
        parts = urlsplit(target)
        return [urlunsplit((scheme, host, parts.path or "/", parts.query, ""))
                for scheme, host in sorted(self.origins, reverse=True)]

    def lookup(self, method: str, target: str, body: bytes, conditional: bool, tag: str = "",
               ) -> tuple[str | None, Recorded | None]:
        """The recorded URL the request stands for (None: none) and the response that answers it (None: the
        recording holds none). `tag`: the client request it is part of (X-SPE-Request; "" none)."""
        urls = self.candidates(target)
        for url in urls:
            found = self.take(method, url, body, conditional, tag)
            if found is not None:
                return url, found
        return (urls[0] if urls else None), None

    def take(self, method: str, url: str, body: bytes, conditional: bool, tag: str = "") -> Recorded | None:
        if method.upper() == "HEAD" and key("HEAD", url, body) not in self.sequences:
            return self._tagged(tag, key("GET", url, None), conditional, advance=False)
        return self._tagged(tag, key(method, url, body), conditional, advance=True)

    def _tagged(self, tag: str, k: Key, conditional: bool, advance: bool) -> Recorded | None:
        """The response the tag's first request took (a proxy's copy gets what the client got), else the next.
        An unconditional copy of a request the recording answered 304 gets the complete response that 304
        confirmed, as the 304 updated it: what the recorded origin would have sent that request then."""
        taken = self.by_tag.get((tag, k)) if tag else None
        if taken is not None:
            return taken if _answers(taken, conditional) else self._confirmed_by(k, taken)
        found = self._next(k, conditional, advance)
        if tag and found is not None:
            self.by_tag[(tag, k)] = found
            while len(self.by_tag) > TAGS_KEPT:
                self.by_tag.popitem(last=False)
        return found

    def _confirmed_by(self, k: Key, not_modified: Recorded) -> Recorded | None:
        """The complete response a recorded 304 confirmed (the latest before it, else the first after it), with
        the 304's fields; None when the sequence holds no complete response."""
        sequence = self.sequences.get(k, [])
        at = next(i for i, r in enumerate(sequence) if r is not_modified)
        full = next((r for r in [*reversed(sequence[:at]), *sequence[at + 1:]] if _answers(r, False)), None)
        if full is None:
            return None
        merged = har_reply.updated(full.prepared(), not_modified.prepared())
        return Recorded(full.entry, full.offset, full.store, _prepared=merged)

    def _next(self, k: Key, conditional: bool, advance: bool) -> Recorded | None:
        sequence = self.sequences.get(k, [])
        for i in range(self.cursor[k], len(sequence)):
            if _answers(sequence[i], conditional):
                if advance:
                    self.cursor[k] = i + 1
                return sequence[i]
        return next((r for r in reversed(sequence) if _answers(r, conditional)), None)  # run out: the last one again


def _answers(r: Recorded, conditional: bool) -> bool:
    """A recorded 304 answers only a conditional request (the recording's own revalidation)."""
    return conditional or r.entry.response.status != 304
