"""The content model: an object id decides everything about its reply (pure, deterministic).

Like Polygraph's oids, the id in a URL fixes the reply's size, cacheability, framing, type and
validators, so every correct proxy returns identical bytes and the load client knows, without
asking, which objects a cache may keep. Only the server's think time is drawn per request.

URL scheme (docs/workloads.md):
    /obj/<id>            an object; its type from the id's extension or the model's type shares
    /page/<id>.html      an HTML page with embedded images (/obj/p<id>-<k>.jpg) and links to pages
    /seq/<s>/<n>.jpg     object n of numbered sequence s (n < seq_length, else 404)
    any other path       an object whose id is the path (so replayed traces find something)

Randomness comes from a keyed hash of the id, never from a shared generator, so a property
does not depend on which objects were asked for before.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import random
import re
from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from pathlib import Path

# Cacheability classes and the Cache-Control each sends (max-age filled in from the model).
CACHE_CLASSES = ("public", "private", "no-store", "cookie", "vary")
CACHEABLE = frozenset({"public", "cookie", "vary"})
LAST_MODIFIED_BASE = 1_790_000_000  # 2026-09-21 UTC: validators are fixed, so replies stay identical over time
EXTENSION_TYPES = {".html": "text/html", ".htm": "text/html", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                   ".gif": "image/gif", ".png": "image/png", ".css": "text/css", ".js": "application/javascript",
                   ".txt": "text/plain", ".pdf": "application/pdf"}


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_type(name: str, value: object, default: object) -> None:
    """A model value must have its default's type (a share table: names to numbers), or the origin
    would fail on the first request instead of at start."""
    if isinstance(default, dict):
        ok, expected = isinstance(value, dict) and all(map(is_number, value.values())), "a table of numbers"
    elif isinstance(default, str):
        ok, expected = isinstance(value, str), "a string"
    elif isinstance(default, int):
        ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
    else:
        ok, expected = is_number(value), "a number"
    if not ok:
        raise ValueError(f"model key {name!r}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class Model:
    """Workload parameters; defaults follow PolyMix-1 with think times scaled down tenfold."""

    size_dist: str = "exp"  # exp (mean size_mean) | const (size_mean) | uniform (1 .. 2*size_mean)
    size_mean: int = 13312
    size_max: int = 4 << 20
    cache_shares: dict = field(default_factory=lambda: {"public": 0.8, "private": 0.2, "no-store": 0.0,
                                                        "cookie": 0.0, "vary": 0.0})
    max_age: int = 86400
    chunked_share: float = 0.1
    think_mean_ms: float = 300.0
    think_sd_ms: float = 150.0
    rate: int = 0  # body bytes per second, 0: as fast as the socket takes them
    type_shares: dict = field(default_factory=lambda: {"image/jpeg": 0.4, "image/gif": 0.2, "text/plain": 0.2,
                                                       "application/octet-stream": 0.2})
    page_size_mean: int = 8192
    page_images_min: int = 2
    page_images_max: int = 8
    page_links: int = 4
    pages: int = 1000  # links point at pages 0 .. pages-1
    seq_length: int = 20

    def __post_init__(self) -> None:
        for name, shares in (("cache_shares", self.cache_shares), ("type_shares", self.type_shares)):
            if any(v < 0 for v in shares.values()) or abs(sum(shares.values()) - 1.0) > 1e-6:
                raise ValueError(f"{name} must be non-negative and sum to 1: {shares}")
        unknown = set(self.cache_shares) - set(CACHE_CLASSES)
        if unknown:
            raise ValueError(f"unknown cacheability classes {sorted(unknown)}; known: {CACHE_CLASSES}")
        if self.size_dist not in ("exp", "const", "uniform"):
            raise ValueError(f"size_dist must be exp, const or uniform, not {self.size_dist!r}")
        if self.page_images_min > self.page_images_max:
            raise ValueError("page_images_min > page_images_max")
        object.__setattr__(self, "_hash", hash(self.key()))  # dict fields: hash the text once

    @classmethod
    def from_dict(cls, data: dict) -> Model:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown model keys {sorted(unknown)}; known: {sorted(known)}")
        for f in fields(cls):
            if f.name in data:
                check_type(f.name, data[f.name], f.default if f.default is not MISSING else f.default_factory())
        if "cache_shares" in data:  # a partial share table means "these, the rest 0"
            data = {**data, "cache_shares": {c: 0.0 for c in CACHE_CLASSES} | data["cache_shares"]}
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path | None, **overrides: object) -> Model:
        """The model from a JSON file (missing keys keep their defaults), then CLI overrides."""
        data = json.loads(Path(path).read_text()) if path else {}
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(data)

    def key(self) -> str:
        """Stable text of the parameters (models are hashed into lru caches)."""
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, sort_keys=True)

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True)
class ObjectSpec:
    """Everything fixed about one object's 200 reply."""

    oid: str
    kind: str  # obj | page | seq
    size: int
    cache: str  # one of CACHE_CLASSES
    chunked: bool
    content_type: str
    last_modified: int  # epoch seconds
    etag: str

    @property
    def cacheable(self) -> bool:
        return self.cache in CACHEABLE


def uniform(oid: str, salt: str) -> float:
    """A uniform number in [0, 1) fixed by (oid, salt)."""
    digest = hashlib.blake2b(f"{salt}\0{oid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def pick(shares: dict, u: float) -> str:
    """The key whose cumulative share interval holds u (keys in insertion order)."""
    total = 0.0
    last = next(iter(shares))
    for key, share in shares.items():
        if share <= 0:
            continue
        total += share
        last = key
        if u < total:
            return key
    return last


def draw_size(dist: str, mean: int, size_max: int, u: float) -> int:
    if dist == "const":
        size = mean
    elif dist == "uniform":
        size = 1 + int(u * (2 * mean - 1))
    else:  # exponential by inversion
        size = int(round(-mean * math.log1p(-u)))
    return max(1, min(size, size_max))


PAGE_RE = re.compile(r"^/page/([^/]+)\.html$")
SEQ_RE = re.compile(r"^/seq/([^/]+)/(\d+)\.jpg$")


def parse_path(path: str) -> tuple[str, str]:
    """(kind, oid) for a URL path (query already removed)."""
    if path.startswith("/obj/") and len(path) > 5:
        return "obj", path[5:]
    m = PAGE_RE.match(path)
    if m:
        return "page", m.group(1)
    m = SEQ_RE.match(path)
    if m:
        return "seq", f"{m.group(1)}/{m.group(2)}"
    return "obj", path


def content_type_for(model: Model, oid: str) -> str:
    dot = oid.rfind(".")
    if dot > oid.rfind("/"):
        known = EXTENSION_TYPES.get(oid[dot:].lower())
        if known:
            return known
    return pick(model.type_shares, uniform(oid, "type"))


@lru_cache(maxsize=65536)
def object_spec(model: Model, kind: str, oid: str) -> ObjectSpec:
    """The fixed properties of object `oid` of `kind` (obj, page or seq)."""
    if kind == "page":
        size = draw_size(model.size_dist, model.page_size_mean, model.size_max, uniform(oid, "page-size"))
        ctype = "text/html"
    else:
        size = draw_size(model.size_dist, model.size_mean, model.size_max, uniform(oid, "size"))
        ctype = "image/jpeg" if kind == "seq" else content_type_for(model, oid)
    cache = pick(model.cache_shares, uniform(oid, "cache"))
    chunked = uniform(oid, "chunked") < model.chunked_share
    age = int(uniform(oid, "age") * 365 * 86400)  # last modified up to a year before the base date
    last_modified = LAST_MODIFIED_BASE - 86400 - age
    etag = '"' + hashlib.blake2b(f"{kind}\0{oid}".encode(), digest_size=8).hexdigest() + f'-{size}"'
    return ObjectSpec(oid, kind, size, cache, chunked, ctype, last_modified, etag)


def variant_etag(spec: ObjectSpec, variant: str) -> str:
    """The strong ETag of one variant of a Vary object: variants have different bodies, so each needs
    its own tag, or a cache revalidating one variant would be told another is current (RFC 9110 8.8.3).
    No variant (no Accept-Language) keeps the object's tag."""
    if not variant:
        return spec.etag
    suffix = hashlib.blake2b(variant.encode(), digest_size=4).hexdigest()
    return spec.etag[:-1] + f'-v{suffix}"'


def cache_control(model: Model, cache: str) -> str:
    if cache in CACHEABLE:
        return f"public, max-age={model.max_age}"
    return "no-store" if cache == "no-store" else "private, no-cache"


def page_images(model: Model, oid: str) -> list[str]:
    """Paths of the images embedded in page `oid`."""
    span = model.page_images_max - model.page_images_min + 1
    count = model.page_images_min + int(uniform(oid, "images") * span)
    return [f"/obj/p{oid}-{k}.jpg" for k in range(count)]


def page_links(model: Model, oid: str) -> list[str]:
    """Paths page `oid` links to: other pages, then the start of the page's own sequence."""
    targets = [int(uniform(oid, f"link{j}") * model.pages) for j in range(model.page_links)]
    return [f"/page/{t}.html" for t in targets] + [f"/seq/{oid}/0.jpg"]


# 256 KiB of printable filler, the same in every process; bodies are slices of it.
_FILLER = bytes(random.Random(20011).choices(b"abcdefghijklmnopqrstuvwxyz0123456789 \n", k=1 << 18))


def filler(key: str, size: int) -> bytes:
    """`size` bytes fixed by `key`: a slice of the filler at a key-chosen offset, repeated as needed."""
    start = int(uniform(key, "offset") * len(_FILLER))
    out = _FILLER[start:start + size]
    while len(out) < size:
        out += _FILLER[:size - len(out)]
    return out


def body(model: Model, spec: ObjectSpec, serial: int | None = None, variant: str = "") -> bytes:
    """The reply body: exactly spec.size bytes (a page at least its markup).

    An uncacheable object's body starts with its serial, so two fetches never match; a
    Vary object's body depends on the varied request header's value (`variant`).
    """
    if spec.kind == "page":
        return page_html(model, spec.oid, spec.size)
    first = f"spe {spec.kind} {spec.oid} size {spec.size}"
    if serial is not None:
        first += f" serial {serial}"
    if variant:
        first += f" variant {variant}"
    head = (first + "\n").encode()[:spec.size]
    return head + filler(f"{spec.kind}\0{spec.oid}\0{variant}", spec.size - len(head))


def page_html(model: Model, oid: str, size: int) -> bytes:
    """A real page: its images, links to other pages and a sequence, padded with text to `size`."""
    name = html.escape(oid)
    parts = [f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>page {name}</title></head>\n<body>\n"
             f"<h1>page {name}</h1>\n"]
    parts += [f'<img src="{html.escape(src)}" width="64" height="64" alt="image {k}">\n'
              for k, src in enumerate(page_images(model, oid))]
    parts += [f'<p><a href="{html.escape(href)}">{html.escape(href)}</a></p>\n' for href in page_links(model, oid)]
    tail = "</body></html>\n"
    text = "".join(parts).encode()
    pad = size - len(text) - len(tail) - len("<p></p>\n")
    if pad > 0:
        text += b"<p>" + filler(f"page\0{oid}", pad).replace(b"<", b" ") + b"</p>\n"
    return text + tail.encode()


def think_ms(model: Model, rng: random.Random, mean_ms: float | None = None, sd_ms: float | None = None) -> float:
    """One server think time: normal, truncated at 0 (drawn per request, not per object)."""
    mean = model.think_mean_ms if mean_ms is None else mean_ms
    sd = model.think_sd_ms if sd_ms is None else sd_ms
    if mean <= 0 and sd <= 0:
        return 0.0
    return max(0.0, rng.gauss(mean, sd))
