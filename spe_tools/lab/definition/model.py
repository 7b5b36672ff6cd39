"""The lab file: a TOML description of one test bed, parsed and validated into plain dataclasses.

Every mistake is reported as a `LabFileError` whose message names the file, the table and the key,
so `./spe lab check` can print it as is. Reference of every key: docs/lab-file.md. Each key is declared
once: as a field of its table's spec dataclass, with its default and its range or choices (options.key; the
[multiplier] table's in multiplier_spec.py, with the flag each becomes), from which one reader reads the table
(options.read_fields); a proxy's keys in spe_tools.lab.definition.proxy_spec, which each kind lists
(spe_tools.lab.definition.kinds).
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spe_tools.collector import BINARIES, CollectorOptions
from spe_tools.duration import DurationError, parse_duration
from spe_tools.lab.definition import kinds
from spe_tools.lab.definition.multiplier_spec import MultiplierSpec, read_multiplier
from spe_tools.lab.definition.options import LabFileError, Table, key, parse_address, read_fields, relative_to_file
from spe_tools.lab.definition.proxy_spec import COLLECTOR_LIMIT_KBPS, COLLECTOR_PORT, TWIN_OF, ProxySpec
from spe_tools.rundir import layout
from spe_tools.rundir.lab_json import DIRECT_PORT
from spe_tools.workload.client.popularity import DEFAULT_POPULARITY, parse_popularity
from spe_tools.workload.har.archive import replay_format

PROXY_KINDS = tuple(kinds.KINDS)
COLLECTOR_KINDS = tuple(BINARIES)  # spe: the patched Squid; squid: Debian's stock one
ORIGIN_KINDS = ("synthetic", "har", "none")
WORKLOAD_KINDS = ("none", "load", "browse", "command", "replay")
# What a `command` workload's arguments may name, each as {name} (docs/lab-file.md).
COMMAND_PLACEHOLDERS = ("proxy", "proxy_host", "proxy_port", "proxy_url", "origin", "origin_url", "tls_origin",
                        "duration_s", "rundir", "ca_cert")
# {name} is a placeholder; {{ and }} stand for literal braces (as in Python's str.format).
_COMMAND_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_]*)\}")


def command_placeholders(word: str) -> list[str]:
    """The placeholders a command word names ({{ and }} are literal braces, not placeholders)."""
    return [m.group(1) for m in _COMMAND_TOKEN.finditer(word) if m.group(1) is not None]


def expand_command(word: str, values: dict[str, str]) -> str:
    """The word with each {name} replaced by its value and {{ }} by single braces."""
    return _COMMAND_TOKEN.sub(lambda m: values[m.group(1)] if m.group(1) is not None else m.group(0)[0], word)
NAMESPACE = "namespace"
PLACEMENTS = ("loopback", NAMESPACE)  # [network]: where a piece sits
# Names the run directory or the Collector already uses for something else.
RESERVED_NAMES = (DIRECT_PORT, layout.COLLECTOR, layout.ORIGIN, layout.MULTIPLIER, layout.WORKLOAD, layout.REPORT,
                  layout.CAPTURES, layout.LAB, layout.LIVE)
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
GROUP_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")  # a Unix group name (useradd's rule, roughly)

@dataclass(frozen=True)
class CollectorSpec:
    kind: str = key("spe", choices=COLLECTOR_KINDS)
    # how long it keeps an uncacheable reply
    uncacheable_ttl_s: int = key(CollectorOptions.uncacheable_ttl_s, low=0, high=86400, integer=True)
    replay_timing: bool = key(CollectorOptions.replay_timing)
    cache_mb: int = key(CollectorOptions.cache_mb, low=1, high=65536, integer=True)
    port: int = key(0, low=0, high=65535, integer=True)  # the "direct" port the Multiplier uses; 0 = a free port
    # trusted for https origins beside the system store (relative to the lab file: _collector)
    origin_ca_files: tuple[Path, ...] = key(())


@dataclass(frozen=True)
class OriginSpec:
    kind: str = key("synthetic", choices=ORIGIN_KINDS)  # har: spe_tools.workload.har_origin (docs/workloads.md)
    # The name clients put in URLs. Not the literal 127.0.0.1: Traffic Server never sends such a
    # request to its parent (a hard-coded localhost test), so it would bypass its Collector port.
    host: str = key("localhost")
    port: int = key(0, low=0, high=65535, integer=True)
    model: Path | None = key(None)  # a content-model JSON file (relative to the lab file); None: the built-in model
    think_mean_ms: float | None = key(None, low=0, high=600000)  # first-byte delay per miss; None: the model's (300 ms)
    think_sd_ms: float | None = key(None, low=0, high=600000)
    seed: int = key(1)
    tls: bool = key(False)  # also serve HTTPS (a test CA the lab hands to the Collector)
    tls_port: int = key(0, low=0, high=65535, integer=True)
    har: tuple[Path, ...] = key(())  # kind "har": the recordings it serves (relative to the lab file)
    think_scale: float | None = key(None, low=0, high=1000)  # kind "har": times the recorded server time; None: 1


@dataclass(frozen=True)
class NetworkSpec:
    """[network]: where the lab's pieces sit. "loopback": every piece on 127.0.0.1; "namespace": each proxy under
    test (or the origin) in a network namespace of its own, a host of its own joined to the machine by a link
    (spe_tools/lab/network/netns.py; root only)."""

    proxies: str = key("loopback", choices=PLACEMENTS)
    origin: str = key("loopback", choices=PLACEMENTS)
    subnet: str = key("10.213.0.0/16")  # each host's /30 comes from it; nothing on this machine may use it

    @property
    def isolated(self) -> bool:
        return NAMESPACE in (self.proxies, self.origin)


@dataclass(frozen=True)
class LiveSpec:
    """[live]: the live scorecard page (analysis/live.py), served on a loopback port while the lab runs."""

    enabled: bool = False  # off by default: any local user can open a loopback port (docs/lab-file.md)
    every: float = 5.0  # rebuild the page from the log at most this often (seconds; a duration in the file)


@dataclass(frozen=True)
class WorkloadSpec:
    # load: spe_tools.workload.load; browse: headless Chromium (spe_tools.workload.browse); replay: recorded traffic
    # (spe_tools.workload.replay)
    kind: str = key("none", choices=WORKLOAD_KINDS)
    duration_s: float = key(60, low=0, high=7 * 86400)
    rate: float = key(20, low=0, high=100000)  # load: requests per second, all clients together
    clients: int = key(4, low=1, high=1000, integer=True)  # load: robots, each with its own keep-alive connections
    hit_ratio: float = key(0.55, low=0, high=1)  # load: offered hit ratio
    popularity: str = key(DEFAULT_POPULARITY)  # load: uniform | zipf:A
    # load: share of requests in RFC 9111 conformance sequences (/c/<case>/<id>)
    conformance: float = key(0.0, low=0, high=1)
    # browse: pages to visit; 0: as many as fit in duration_s at think_s each
    pages: int = key(0, low=0, high=1_000_000, integer=True)
    think_s: float = key(2.0, low=0, high=3600)  # browse, and load's users: mean think time between pages
    # load: browsing users in sessions beside the robots (spe_tools/workload/client/sessions.py)
    users: int = key(0, low=0, high=10000, integer=True)
    session_pages: float = key(5.0, low=1, high=1_000_000)  # browse, and load's users: mean pages per session
    seed: int = key(1)
    # with [origin] tls: share of URLs (load) or start pages (browse) over HTTPS
    https_share: float = key(0.5, low=0, high=1)
    args: tuple[str, ...] = key(())  # extra arguments for the workload's program
    command: tuple[str, ...] = key(())  # kind "command": the user's own load generator, argv with {placeholders}
    files: tuple[Path, ...] = key(())  # kind "replay": HAR files (each a client), or one access log
    speed: float = key(1.0, low=0.001, high=1000)  # kind "replay": the recording's time scale (2: twice as fast)



@dataclass(frozen=True)
class Lab:
    name: str
    source: Path | None
    collector: CollectorSpec
    proxies: tuple[ProxySpec, ...]
    multiplier: MultiplierSpec  # the run's own Multiplier: the first [[multiplier]], its log the run directory's
    origin: OriginSpec
    workload: WorkloadSpec
    runs_dir: Path | None = None
    share_group: str | None = None  # the run directory readable by this group too (never by every user)
    live: LiveSpec = LiveSpec()
    # The other [[multiplier]] tables: client groups sharing the Collector and the proxies, each Multiplier with
    # its own workload and its own run directory inside the run's (multipliers/NAME, rundir.layout).
    other_multipliers: tuple[MultiplierSpec, ...] = ()
    network: NetworkSpec = NetworkSpec()

    def proxy(self, name: str) -> ProxySpec:
        return next(p for p in self.proxies if p.name == name)

    @property
    def multipliers(self) -> tuple[MultiplierSpec, ...]:
        return (self.multiplier, *self.other_multipliers)


def multiplier_table(lab: Lab, m: MultiplierSpec) -> str:
    """How messages name a Multiplier's table: [multiplier] when it is the only one."""
    return f"[[multiplier]] {m.name!r}" if lab.other_multipliers else "[multiplier]"


def tag_prefix(lab: Lab, index: int) -> str | None:
    """The --tag-prefix of the lab's `index`th Multiplier: with several, the Collector routes each proxy's unsafe
    copy to the replay port of the Multiplier whose prefix its tag carries (collector.unsafe_replay_rules); with
    one, none is needed."""
    return f"m{index + 1}" if lab.other_multipliers else None


def _collector(data: dict, source: Path | None) -> CollectorSpec:
    t = Table("[collector]", data, CollectorSpec())
    values = read_fields(t, CollectorSpec)
    values["origin_ca_files"] = tuple(relative_to_file(source, path) for path in values["origin_ca_files"])
    t.finish()
    return CollectorSpec(**values)


def _proxy(data: Any, index: int) -> ProxySpec:
    where = f"[[proxy]] #{index + 1}"
    if not isinstance(data, dict):
        raise LabFileError(f"{where}: expected a table, got {data!r}")
    t = Table(where, data)
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
    for option in (*kinds.KINDS[kind].options, COLLECTOR_PORT, TWIN_OF, COLLECTOR_LIMIT_KBPS):
        values |= option.read(t)
    t.finish()
    return ProxySpec(**values)


def _multiplier(data: Any, source: Path | None, where: str = "[multiplier]") -> MultiplierSpec:
    if not isinstance(data, dict):
        raise LabFileError(f"{where}: expected a table, got {data!r}")
    t = Table(where, data, MultiplierSpec())
    name = t.get("name", str, None)
    if name is not None:
        t.where = where = f"[[multiplier]] {name!r}" if where.startswith("[[") else where
        if not NAME_RE.match(name):
            raise LabFileError(f"{where}.name: use a letter then up to 31 letters, digits, '-' or '_'")
    spec = read_multiplier(t, source)
    if spec.metrics_listen:  # checked now: a bad address is the lab file's mistake
        parse_address(spec.metrics_listen, f"{where}.metrics_listen")
    elif spec.prometheus:
        raise LabFileError(f"{where}: prometheus = true needs metrics_listen (what it scrapes)")
    if not spec.intercept_tls and (spec.no_intercept or spec.ca_dir):
        raise LabFileError(f"{where}: no_intercept and ca_dir need intercept_tls = true")
    return spec


def _multipliers(data: dict | list, source: Path | None) -> tuple[MultiplierSpec, ...]:
    """[multiplier] (one) or [[multiplier]] (one or more, each named): see _check_multipliers."""
    if isinstance(data, dict):
        return (_multiplier(data, source),)
    if not data:
        raise LabFileError("[[multiplier]]: an empty list (give one table per Multiplier, or none)")
    specs = tuple(_multiplier(m, source, f"[[multiplier]] #{i + 1}") for i, m in enumerate(data))
    _check_multipliers(specs)
    return specs


# What the lab's pieces share: one Collector trusts one CA for interception, so every Multiplier intercepts
# alike; Prometheus scrapes the first Multiplier's counters only.
_SHARED_MULTIPLIER_KEYS = ("intercept_tls", "no_intercept", "ca_dir")


def _check_multipliers(specs: tuple[MultiplierSpec, ...]) -> None:
    seen: set[str] = set()
    for i, m in enumerate(specs):
        if m.name is None:
            raise LabFileError(f"[[multiplier]] #{i + 1}: missing key 'name' (each Multiplier of several has one, "
                               "on every record it writes and as its directory, multipliers/NAME)")
        if m.name.lower() in seen:
            raise LabFileError(f"[[multiplier]] {m.name!r}: the name is used twice (names are case-insensitive)")
        seen.add(m.name.lower())
        for shared in _SHARED_MULTIPLIER_KEYS:
            if getattr(m, shared) != getattr(specs[0], shared):
                raise LabFileError(f"[[multiplier]] {m.name!r}.{shared}: differs from the first Multiplier's; every "
                                   "Multiplier of a lab intercepts HTTPS alike (one CA, one Collector)")
        if i and m.prometheus:
            raise LabFileError(f"[[multiplier]] {m.name!r}.prometheus: only the first Multiplier's counters are "
                               "scraped; give prometheus = true there")


def _origin(data: dict, source: Path | None) -> OriginSpec:
    t = Table("[origin]", data, OriginSpec())
    values = read_fields(t, OriginSpec)
    values["model"] = relative_to_file(source, values["model"]) if values["model"] else None
    values["har"] = tuple(relative_to_file(source, path) for path in values["har"])
    spec = OriginSpec(**values)
    t.finish()
    _check_origin_kind_keys(spec)
    if spec.host == "127.0.0.1" and spec.kind != "none":
        raise LabFileError("[origin].host: use 'localhost', not '127.0.0.1': Traffic Server sends requests for "
                           "the literal 127.0.0.1 straight to the origin, bypassing its Collector port")
    return spec


def _check_origin_kind_keys(spec: OriginSpec) -> None:
    """Each origin kind's own keys, only with it (the HAR files themselves are read by `./spe lab check`)."""
    if spec.tls and spec.kind != "synthetic":
        raise LabFileError("[origin].tls: only the synthetic origin serves HTTPS")
    if spec.kind == "har" and not spec.har:
        raise LabFileError("[origin].har: kind \"har\" needs the recordings it serves, e.g. har = [\"site.har\"] "
                           "(relative to the lab file)")
    if spec.kind != "har" and (spec.har or spec.think_scale is not None):
        raise LabFileError(f"[origin].{'har' if spec.har else 'think_scale'}: only for kind = \"har\"")
    synthetic = [k for k in ("model", "think_mean_ms", "think_sd_ms") if getattr(spec, k) is not None]
    if spec.kind == "har" and synthetic:
        raise LabFileError(f"[origin].{synthetic[0]}: only for the synthetic origin (a HAR origin waits the "
                           "recorded server time: think_scale)")


def _live(data: dict) -> LiveSpec:
    t = Table("[live]", data, LiveSpec())
    every = t.get("every", (str, int, float))
    try:
        seconds = parse_duration(every)
    except DurationError as e:
        raise LabFileError(f"[live].every: {e}") from None
    if not 0.5 <= seconds <= 3600:
        raise LabFileError(f"[live].every: {every!r} is out of range (500ms to 1h)")
    spec = LiveSpec(enabled=t.get("enabled", bool), every=seconds)
    t.finish()
    return spec


def _network(data: dict) -> NetworkSpec:
    t = Table("[network]", data, NetworkSpec())
    spec = NetworkSpec(**read_fields(t, NetworkSpec))
    t.finish()
    try:
        subnet = ipaddress.ip_network(spec.subnet)
    except ValueError as e:
        raise LabFileError(f"[network].subnet: {e}") from None
    if subnet.version != 4 or subnet.prefixlen > 30 or not subnet.is_private:
        raise LabFileError(f"[network].subnet: {spec.subnet!r}: give a private IPv4 network of /30 or larger "
                           "(each host of the lab takes a /30 of it)")
    return spec


def _workload(data: dict, source: Path | None) -> WorkloadSpec:
    t = Table("[workload]", data, WorkloadSpec())
    values = read_fields(t, WorkloadSpec)
    values["files"] = tuple(relative_to_file(source, path) for path in values["files"])  # relative to the lab file
    spec = WorkloadSpec(**values)
    t.finish()
    _check_replay(spec)
    if spec.kind == "command" and not spec.command:
        raise LabFileError("[workload].command: kind \"command\" needs the program and its arguments, "
                           "e.g. [\"wrk\", \"-d{duration_s}\", \"{origin_url}/\"]")
    if spec.kind == "load" and spec.rate == 0 and not spec.users:
        raise LabFileError("[workload].rate: 0 leaves the load client nothing to do without users")
    if spec.users and spec.kind != "load":
        raise LabFileError("[workload].users: only for kind = \"load\" (browse is one user: Chromium)")
    if spec.command and spec.kind != "command":
        raise LabFileError("[workload].command: only for kind = \"command\"")
    for word in spec.command:
        for name in command_placeholders(word):
            if name not in COMMAND_PLACEHOLDERS:
                raise LabFileError(f"[workload].command: unknown placeholder {{{name}}} in {word!r} "
                                   f"(known: {', '.join('{' + p + '}' for p in COMMAND_PLACEHOLDERS)}; "
                                   "write {{ and }} for literal braces)")
    try:
        parse_popularity(spec.popularity)
    except ValueError as e:
        raise LabFileError(f"[workload].popularity: {e}") from None
    return spec


def _check_replay(spec: WorkloadSpec) -> None:
    if spec.kind != "replay":
        if spec.files:
            raise LabFileError("[workload].files: only for kind = \"replay\"")
        return
    if not spec.files:
        raise LabFileError("[workload].files: kind \"replay\" needs the recordings, e.g. [\"site.har\"] (HAR "
                           "files, each a client) or [\"access.log\"] (one access log)")
    try:
        replay_format(spec.files)
    except ValueError as e:
        raise LabFileError(f"[workload].files: {e}") from None


def _fixed_ports(lab: Lab) -> list[tuple[str, int]]:
    """Every port the file pins (0 = chosen at start, never a clash), with what uses it."""
    ports = [("[collector].port", lab.collector.port), ("[origin].port", lab.origin.port),
             ("[origin].tls_port", lab.origin.tls_port)]
    for m in lab.multipliers:
        where = multiplier_table(lab, m)
        ports += [(f"{where}.listen", m.port), (f"{where}.metrics_listen", (m.metrics_address or ("", 0))[1])]
    for p in lab.proxies:
        if p.kind != "external":
            ports.append((f"[[proxy]] {p.name!r}.port", p.port))
        ports.append((f"[[proxy]] {p.name!r}.collector_port", p.collector_port))
    return [(what, port) for what, port in ports if port]


def check_consistency(lab: Lab) -> None:
    """The rules that span tables, checked after each table on its own."""
    _check_names_unique(lab.proxies)
    _check_twins(lab.proxies)
    _check_no_port_clash(lab)
    _check_workload_needs(lab)
    if lab.network.origin == NAMESPACE and lab.origin.kind == "none":
        raise LabFileError("[network].origin: \"namespace\" needs the lab's own origin ([origin].kind \"synthetic\" "
                           "or \"har\"); with live traffic the origins are the world's")


def _check_names_unique(proxies: tuple[ProxySpec, ...]) -> None:
    seen: set[str] = set()
    for p in proxies:
        if p.name.lower() in seen:
            raise LabFileError(f"[[proxy]] {p.name!r}: the name is used twice (names are case-insensitive)")
        seen.add(p.name.lower())


def _check_twins(proxies: tuple[ProxySpec, ...]) -> None:
    names = {p.name for p in proxies}
    for p in proxies:
        if p.twin_of and (p.twin_of == p.name or p.twin_of not in names):
            raise LabFileError(f"[[proxy]] {p.name!r}.twin_of: {p.twin_of!r} is not another proxy of this lab")


def _check_no_port_clash(lab: Lab) -> None:
    ports: dict[int, str] = {}
    for what, port in _fixed_ports(lab):
        if port in ports:
            raise LabFileError(f"port clash: {what} and {ports[port]} both use port {port}")
        ports[port] = what


# What the workload's command placeholders need from the other tables: (the placeholders, "is it missing?", the
# message). Checked in this order, so a lab without an origin hears about the origin before its TLS port.
_PLACEHOLDER_NEEDS: tuple[tuple[frozenset[str], Callable[[Lab], bool], str], ...] = (
    (frozenset({"origin", "origin_url", "tls_origin"}), lambda lab: lab.origin.kind == "none",
     "[workload].command: {origin}, {origin_url} and {tls_origin} need [origin].kind = \"synthetic\" or \"har\" "
     "({tls_origin}: the synthetic one with tls = true)"),
    (frozenset({"tls_origin"}), lambda lab: not lab.origin.tls,
     "[workload].command: {tls_origin} needs [origin].tls = true"),
    (frozenset({"ca_cert"}), lambda lab: not lab.multiplier.intercept_tls,
     "[workload].command: {ca_cert} needs [multiplier].intercept_tls = true"),
)


def _check_workload_needs(lab: Lab) -> None:
    if lab.workload.kind in ("load", "browse") and lab.origin.kind != "synthetic":
        raise LabFileError("[workload].kind: a generated workload needs [origin].kind = \"synthetic\" (its URLs "
                           "are the synthetic origin's; a HAR origin serves only what it recorded)")
    named = {n for word in lab.workload.command for n in command_placeholders(word)}
    for placeholders, missing, message in _PLACEHOLDER_NEEDS:
        if named & placeholders and missing(lab):
            raise LabFileError(message)


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
    top = Table("top level", data)
    name = top.get("name", str, source.stem if source else "lab")
    if not NAME_RE.match(name):
        raise LabFileError(f"name: {name!r}: use a letter then up to 31 letters, digits, '-' or '_'")
    tables = {}
    for table in ("collector", "origin", "workload", "live", "network"):
        tables[table] = top.get(table, dict, {})
    multipliers = _multipliers(top.get("multiplier", (dict, list), {}), source)
    proxies = top.get("proxy", list, [])
    runs_dir = top.get("runs_dir", str, None)
    share_group = top.get("share_group", str, None)
    top.finish()
    if share_group is not None and not GROUP_RE.match(share_group):
        raise LabFileError(f"share_group: {share_group!r} is not a group name")
    if not proxies:
        raise LabFileError("no proxies under test: add at least one [[proxy]] table with a name and a kind")
    lab = Lab(
        name=name, source=source,
        collector=_collector(tables["collector"], source),
        proxies=tuple(_proxy(p, i) for i, p in enumerate(proxies)),
        multiplier=multipliers[0], other_multipliers=multipliers[1:],
        origin=_origin(tables["origin"], source),
        workload=_workload(tables["workload"], source),
        runs_dir=relative_to_file(source, runs_dir) if runs_dir else None,
        share_group=share_group,
        live=_live(tables["live"]),
        network=_network(tables["network"]),
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
