"""The lab file: a TOML description of one test bed, parsed and validated into plain dataclasses.

Every mistake is reported as a `LabFileError` whose message names the file, the table and the key,
so `./spe lab check` can print it as is. Reference of every key: docs/lab-file.md.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spe_tools.workload.popularity import parse_popularity

PROXY_KINDS = ("squid", "trafficserver", "varnish", "apache", "nginx", "tinyproxy", "privoxy", "dummy", "external")
COLLECTOR_KINDS = ("spe", "squid")
ORIGIN_KINDS = ("synthetic", "none")
WORKLOAD_KINDS = ("none", "load", "browse")
MULTIPLIER_MODES = ("sequential", "concurrent")
MULTIPLIER_LEGS = ("parallel", "serial")
# Names the run directory or the Collector already uses for something else.
RESERVED_NAMES = ("direct", "collector", "origin", "multiplier", "workload", "report", "captures", "lab")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")

# Per proxy kind: the keys a [[proxy]] table may carry besides name and kind.
PROXY_KEYS: dict[str, set[str]] = {
    "squid": {"port", "cache_mb"},
    "trafficserver": {"port", "cache_mb", "prefetch", "prefetch_count", "prefetch_pattern"},
    "varnish": {"port", "cache_mb"},
    "apache": {"port", "cache_mb", "cache_ports"},
    "nginx": {"port", "cache_mb"},
    "tinyproxy": {"port"},
    "privoxy": {"port"},
    "dummy": {"port"},
    "external": {"address"},
}


class LabFileError(ValueError):
    """The lab file is unreadable or describes an impossible lab; the message says where and why."""


@dataclass(frozen=True)
class CollectorSpec:
    kind: str = "spe"
    uncacheable_ttl_s: int = 180  # how long the patched Collector keeps an uncacheable reply for the proxies
    replay_timing: bool = True
    cache_mb: int = 256
    port: int = 0  # the "direct" port the Multiplier uses; 0 = a free port


@dataclass(frozen=True)
class ProxySpec:
    name: str
    kind: str
    port: int = 0  # where the proxy listens (0 = a free port); external: taken from address
    cache_mb: int = 64
    prefetch: bool = False
    prefetch_count: int = 2
    # The synthetic origin's numbered sequences: seq/<s>/<n>.jpg -> seq/<s>/<n+1>.jpg, matched against the
    # path without its leading slash. '.' stands where the path has a '/' (no '/' inside the pattern, whose
    # own delimiter it is), and \D keeps the number whole (else a greedy [^.]* would leave only its last digit).
    prefetch_pattern: str = r"/(seq.[^.]*\D)(\d+)(\.jpg)/$1{$2+1}$3/"
    cache_ports: tuple[int, ...] = ()  # apache: extra origin ports to cache (CacheEnable needs each one)
    host: str = "127.0.0.1"
    collector_port: int = 0  # this proxy's Collector port (0 = a free port; fix it for an external proxy)


@dataclass(frozen=True)
class MultiplierSpec:
    host: str = "127.0.0.1"
    port: int = 0
    mode: str = "sequential"
    legs: str = "parallel"
    timeout_s: float = 30
    threads: int = 1
    fanout_threads: int = 1
    compare_headers: tuple[str, ...] = ()
    ignore_headers: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class OriginSpec:
    kind: str = "synthetic"  # spe_tools.workload.origin (docs/workloads.md)
    # The name clients put in URLs. Not the literal 127.0.0.1: Traffic Server never sends such a
    # request to its parent (a hard-coded localhost test), so it would bypass its Collector port.
    host: str = "localhost"
    port: int = 0
    model: Path | None = None  # a content-model JSON file; None: the built-in model
    think_mean_ms: float | None = None  # first-byte delay per miss; None: the model's (300 ms)
    think_sd_ms: float | None = None
    seed: int = 1


@dataclass(frozen=True)
class WorkloadSpec:
    kind: str = "none"  # load: spe_tools.workload.load; browse: headless Chromium (spe_tools.workload.browse)
    duration_s: float = 60
    rate: float = 20  # load: requests per second, all clients together
    clients: int = 4  # load: robots, each with its own keep-alive connections
    hit_ratio: float = 0.55  # load: offered hit ratio
    popularity: str = "zipf:0.8"  # load: uniform | zipf:A
    pages: int = 0  # browse: pages to visit; 0: as many as fit in duration_s at think_s each
    think_s: float = 2.0  # browse: mean think time between pages
    seed: int = 1
    args: tuple[str, ...] = ()  # extra arguments for the workload's program


@dataclass(frozen=True)
class Lab:
    name: str
    source: Path | None
    collector: CollectorSpec
    proxies: tuple[ProxySpec, ...]
    multiplier: MultiplierSpec
    origin: OriginSpec
    workload: WorkloadSpec
    runs_dir: Path | None = None

    def proxy(self, name: str) -> ProxySpec:
        return next(p for p in self.proxies if p.name == name)


@dataclass
class _Table:
    """One TOML table being read: remembers which keys were used, to reject the others."""

    where: str
    data: dict[str, Any]
    used: set[str] = field(default_factory=set)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any) -> Any:
        self.used.add(key)
        if key not in self.data:
            return default
        value = self.data[key]
        # bool is an int in Python; a number where a flag is expected (or the reverse) is a mistake.
        wrong_bool = isinstance(value, bool) != (kind is bool or (isinstance(kind, tuple) and bool in kind))
        if not isinstance(value, kind) or wrong_bool:
            raise LabFileError(f"{self.where}.{key}: expected {_type_name(kind)}, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.get(key, str, default)
        if value not in choices:
            raise LabFileError(f"{self.where}.{key}: unknown {key} {value!r} (known: {', '.join(choices)})")
        return value

    def number(self, key: str, default: float | None, low: float, high: float, integer: bool = False) -> Any:
        """The value, checked against [low, high]; `default` (None: "not given") when the key is absent."""
        value = self.get(key, int if integer else (int, float), default)
        if value is not None and not low <= value <= high:
            raise LabFileError(f"{self.where}.{key}: {value} is out of range ({low} to {high})")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key, list, [])
        if not all(isinstance(v, str) for v in value):
            raise LabFileError(f"{self.where}.{key}: expected a list of strings, got {value!r}")
        return tuple(value)

    def finish(self, allowed: set[str] | None = None) -> None:
        allowed = self.used if allowed is None else allowed
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise LabFileError(f"{self.where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "a table"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def parse_address(text: str, where: str) -> tuple[str, int]:
    """'host:port' -> (host, port); port 0 means "pick a free one"."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise LabFileError(f"{where}: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _relative_to(source: Path | None, path: str) -> Path:
    """A path in the lab file is relative to the file's own directory."""
    return source.parent / path if source else Path(path)


def _port(table: _Table, key: str = "port") -> int:
    return table.number(key, 0, 0, 65535, integer=True)


def _collector(data: dict) -> CollectorSpec:
    t = _Table("[collector]", data)
    spec = CollectorSpec(
        kind=t.choice("kind", COLLECTOR_KINDS, "spe"),
        uncacheable_ttl_s=t.number("uncacheable_ttl_s", 180, 0, 86400, integer=True),
        replay_timing=t.get("replay_timing", bool, True),
        cache_mb=t.number("cache_mb", 256, 1, 65536, integer=True),
        port=_port(t),
    )
    t.finish()
    return spec


def _proxy(data: Any, index: int) -> ProxySpec:
    where = f"[[proxy]] #{index + 1}"
    if not isinstance(data, dict):
        raise LabFileError(f"{where}: expected a table, got {data!r}")
    t = _Table(where, data)
    name = t.get("name", str, None)
    if name is None:
        raise LabFileError(f"{where}: missing key 'name'")
    t.where = f"[[proxy]] {name!r}"
    if not NAME_RE.match(name):
        raise LabFileError(f"{t.where}.name: use a letter then up to 31 letters, digits, '-' or '_'")
    if name.lower() in RESERVED_NAMES:
        raise LabFileError(f"{t.where}.name: {name!r} is reserved (reserved: {', '.join(RESERVED_NAMES)})")
    if "kind" not in data:
        raise LabFileError(f"{t.where}: missing key 'kind' (one of: {', '.join(PROXY_KINDS)})")
    kind = t.choice("kind", PROXY_KINDS, "")
    values: dict[str, Any] = {"name": name, "kind": kind}
    if kind == "external":
        if "address" not in data:
            raise LabFileError(f"{t.where}: kind 'external' needs address = \"HOST:PORT\" of your proxy")
        values["host"], values["port"] = parse_address(t.get("address", str, ""), f"{t.where}.address")
        if values["port"] == 0:
            raise LabFileError(f"{t.where}.address: an external proxy needs its real port, not 0")
    else:
        values["port"] = _port(t)
        values["cache_mb"] = t.number("cache_mb", 64, 1, 65536, integer=True)
        values["prefetch"] = t.get("prefetch", bool, False)
        values["prefetch_count"] = t.number("prefetch_count", 2, 1, 100, integer=True)
        values["prefetch_pattern"] = t.get("prefetch_pattern", str, ProxySpec.prefetch_pattern)
        ports = t.get("cache_ports", list, [])
        if not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports):
            raise LabFileError(f"{t.where}.cache_ports: expected a list of port numbers, got {ports!r}")
        values["cache_ports"] = tuple(ports)
    values["collector_port"] = _port(t, "collector_port")
    t.finish(PROXY_KEYS[kind] | {"name", "kind", "collector_port"})
    return ProxySpec(**values)


def _multiplier(data: dict) -> MultiplierSpec:
    t = _Table("[multiplier]", data)
    host, port = parse_address(t.get("listen", str, "127.0.0.1:0"), "[multiplier].listen")
    spec = MultiplierSpec(
        host=host, port=port,
        mode=t.choice("mode", MULTIPLIER_MODES, "sequential"),
        legs=t.choice("legs", MULTIPLIER_LEGS, "parallel"),
        timeout_s=t.number("timeout_s", 30, 0.1, 3600),
        threads=t.number("threads", 1, 1, 64, integer=True),
        fanout_threads=t.number("fanout_threads", 1, 0, 64, integer=True),
        compare_headers=t.strings("compare_headers"),
        ignore_headers=t.strings("ignore_headers"),
        extra_args=t.strings("extra_args"),
    )
    t.finish()
    return spec


def _origin(data: dict, source: Path | None) -> OriginSpec:
    t = _Table("[origin]", data)
    model = t.get("model", str, None)
    spec = OriginSpec(kind=t.choice("kind", ORIGIN_KINDS, "synthetic"), host=t.get("host", str, "localhost"),
                      port=_port(t), model=_relative_to(source, model) if model else None,
                      think_mean_ms=t.number("think_mean_ms", None, 0, 600000),
                      think_sd_ms=t.number("think_sd_ms", None, 0, 600000),
                      seed=t.get("seed", int, 1))
    t.finish()
    if spec.host == "127.0.0.1" and spec.kind == "synthetic":
        raise LabFileError("[origin].host: use 'localhost', not '127.0.0.1': Traffic Server sends requests for "
                           "the literal 127.0.0.1 straight to the origin, bypassing its Collector port")
    return spec


def _workload(data: dict) -> WorkloadSpec:
    t = _Table("[workload]", data)
    spec = WorkloadSpec(
        kind=t.choice("kind", WORKLOAD_KINDS, "none"),
        duration_s=t.number("duration_s", 60, 0, 7 * 86400),
        rate=t.number("rate", 20, 0.01, 100000),
        clients=t.number("clients", 4, 1, 1000, integer=True),
        hit_ratio=t.number("hit_ratio", 0.55, 0, 1),
        popularity=t.get("popularity", str, "zipf:0.8"),
        pages=t.number("pages", 0, 0, 1_000_000, integer=True),
        think_s=t.number("think_s", 2.0, 0, 3600),
        seed=t.get("seed", int, 1),
        args=t.strings("args"),
    )
    t.finish()
    try:
        parse_popularity(spec.popularity)
    except ValueError as e:
        raise LabFileError(f"[workload].popularity: {e}") from None
    return spec


def _fixed_ports(lab: Lab) -> list[tuple[str, int]]:
    """Every port the file pins (0 = chosen at start, never a clash), with what uses it."""
    ports = [("[collector].port", lab.collector.port), ("[multiplier].listen", lab.multiplier.port),
             ("[origin].port", lab.origin.port)]
    for p in lab.proxies:
        if p.kind != "external":
            ports.append((f"[[proxy]] {p.name!r}.port", p.port))
        ports.append((f"[[proxy]] {p.name!r}.collector_port", p.collector_port))
    return [(what, port) for what, port in ports if port]


def check_consistency(lab: Lab) -> None:
    seen: dict[str, str] = {}
    for p in lab.proxies:
        if p.name.lower() in seen:
            raise LabFileError(f"[[proxy]] {p.name!r}: the name is used twice (names are case-insensitive)")
        seen[p.name.lower()] = p.name
    ports: dict[int, str] = {}
    for what, port in _fixed_ports(lab):
        if port in ports:
            raise LabFileError(f"port clash: {what} and {ports[port]} both use port {port}")
        ports[port] = what
    if lab.workload.kind != "none" and lab.origin.kind == "none":
        raise LabFileError("[workload].kind: a generated workload needs [origin].kind = \"synthetic\"")


def parse_lab(text: str, source: Path | None = None) -> Lab:
    """Parse and validate lab-file text; `source` is only used in messages and for relative paths."""
    label = str(source) if source else "lab file"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LabFileError(f"{label}: not valid TOML: {e}") from e
    try:
        return _parse(data, source)
    except LabFileError as e:
        raise LabFileError(f"{label}: {e}") from None


def _parse(data: dict, source: Path | None) -> Lab:
    top = _Table("top level", data)
    name = top.get("name", str, source.stem if source else "lab")
    if not NAME_RE.match(name):
        raise LabFileError(f"name: {name!r}: use a letter then up to 31 letters, digits, '-' or '_'")
    tables = {}
    for key in ("collector", "multiplier", "origin", "workload"):
        tables[key] = top.get(key, dict, {})
    proxies = top.get("proxy", list, [])
    runs_dir = top.get("runs_dir", str, None)
    top.finish()
    if not proxies:
        raise LabFileError("no proxies under test: add at least one [[proxy]] table with a name and a kind")
    lab = Lab(
        name=name, source=source,
        collector=_collector(tables["collector"]),
        proxies=tuple(_proxy(p, i) for i, p in enumerate(proxies)),
        multiplier=_multiplier(tables["multiplier"]),
        origin=_origin(tables["origin"], source),
        workload=_workload(tables["workload"]),
        runs_dir=_relative_to(source, runs_dir) if runs_dir else None,
    )
    check_consistency(lab)
    return lab


def load_lab(path: Path) -> Lab:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise LabFileError(f"{path}: cannot read the lab file: {e.strerror}") from None
    return parse_lab(text, path)
