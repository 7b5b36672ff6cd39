"""lab.json, typed: the topology of a run as the lab started it (names, kinds, versions, ports, log paths).

The lab writes it (`LabJson.write`) once everything is up; the analysis, ./spe repro and the benchmarks read it
(`LabJson.read`). Reading never fails on what a run from another version wrote: an unknown key is ignored and a
missing one reads as None (or empty), which the readers take as "this run does not say". Writing gives the same
JSON, key for key and in the same order, as the lab always wrote (docs/lab.md shows one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Self

from spe_tools.rundir.layout import LAB_JSON, MULTIPLIERS

DIRECT_PORT = "direct"  # the name of the Collector port the Multiplier's own requests use (collector.ports)
# A key written only when it has a value (the lab writes twin_of only for a twin, prefetch only for Traffic Server).
OMITTED_WHEN_NONE = {"omit_when_none": True}
# The patched Collector's default uncacheable_ttl_s (spe_tools.collector.CollectorOptions), for a lab.json
# that names the Collector's kind but not the key.
DEFAULT_UNCACHEABLE_TTL_S = 180


class _Table:
    """A JSON object read into a dataclass's fields: known keys only, missing ones at their defaults."""

    @classmethod
    def from_json(cls, data: Any) -> Self:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in (data if isinstance(data, dict) else {}).items() if k in known})

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)  # type: ignore[arg-type]
                if not (f.metadata.get("omit_when_none") and getattr(self, f.name) is None)}


@dataclass
class CollectorOfRun(_Table):
    """lab.json's "collector": the Collector the run used and its ports."""

    kind: str | None = None  # "spe" (patched) or "squid" (Debian's stock)
    version: str | None = None
    ports: dict[str, int] = field(default_factory=dict)  # DIRECT_PORT (the Multiplier's) and one per proxy name
    accel: list[str] = field(default_factory=list)  # proxies whose port is an accelerator port
    access_log: str | None = None  # relative to the run directory (layout.ACCESS_LOG)
    cache_log: str | None = None
    uncacheable_ttl_s: int | None = None  # the lab file's [collector] settings
    replay_timing: bool | None = None
    cache_mb: int | None = None
    origin_ca_files: list[str] = field(default_factory=list)  # absolute
    strip_query_terms: bool | None = None  # its access.log cuts URLs after their '?' (None: an older run, no)

    def port_names(self) -> dict[int, str]:
        """Collector port -> DIRECT_PORT or the proxy's name (how its access.log tells them apart)."""
        return {int(port): name for name, port in self.ports.items()}

    def strips_query_terms(self) -> bool:
        return bool(self.strip_query_terms)


@dataclass
class ProxyOfRun(_Table):
    """One of lab.json's "proxies": a proxy under test as it ran."""

    kind: str | None = None
    version: str | None = None
    host: str | None = None
    port: int | None = None
    collector_port: int | None = None
    caches: bool | None = None
    accel: bool | None = None
    twin_of: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # its non-prefetching twin
    collector_limit_kbps: int | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    prefetch: bool | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # Traffic Server's prefetch plugin
    dir: str | None = None  # its directory, relative to the run directory (layout.proxy_dir)
    stdout: str | None = None


@dataclass
class MultiplierOfRun(_Table):
    name: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # its --name, when the lab gave one
    host: str | None = None
    port: int | None = None
    mode: str | None = None
    legs: str | None = None
    replay_port: int | None = None
    version: str | None = None
    log: str | None = None  # relative to the run directory (layout.MULTIPLIER_LOG)
    intercept_tls: bool | None = None
    ca_cert: str | None = None  # SPE's CA certificate, with intercept_tls
    rope_log: str | None = None
    captures: str | None = None
    metrics_url: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # /metrics, with metrics_listen
    prometheus_url: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # with [multiplier] prometheus
    tag_prefix: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # with several Multipliers
    dir: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # an other Multiplier's run directory


@dataclass
class OriginOfRun(_Table):
    kind: str | None = None  # "synthetic", "har" (recordings served again) or "none" (live traffic)
    host: str | None = None
    port: int | None = None
    model: str | None = None
    think_mean_ms: float | None = None
    think_sd_ms: float | None = None
    seed: int | None = None
    stdout: str | None = None
    tls_port: int | None = None
    tls_ca: str | None = None  # relative to the run directory
    har: list[str] | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # kind "har": its recordings, absolute
    think_scale: float | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # kind "har", when set


# The live page's secret path, handed to its server in the environment (a command line is public: ps); the lab
# (spe_tools/lab/start/live.py) sets it, analysis/live.py reads it.
LIVE_TOKEN_ENV = "SPE_LIVE_TOKEN"


@dataclass
class LiveOfRun(_Table):
    """lab.json's "live" (only in a run with [live] enabled): where the live scorecard page is served."""

    url: str | None = None  # http://127.0.0.1:PORT/
    port: int | None = None
    every_s: float | None = None  # how often the page is rebuilt from the log, at most


def lab_run_of(run: Path) -> Path:
    """The run directory whose lab.json and lab.toml describe `run`: itself, or, for a lab's other Multiplier's
    directory (multipliers/NAME, with no lab.json of its own), the lab run holding it."""
    run = Path(run)
    if not (run / LAB_JSON).is_file() and run.parent.name == MULTIPLIERS:
        return run.parent.parent
    return run


@dataclass
class LabJson:
    """The whole file. `proxies` keeps the lab file's order."""

    name: str | None = None
    lab_file: str | None = None  # the lab as it ran, relative to the run directory (layout.LAB_TOML)
    started: str | None = None
    spe_version: str | None = None  # the SPE that ran it: commit, "(modified)" (spe_tools/version.py)
    collector: CollectorOfRun = field(default_factory=CollectorOfRun)
    proxies: dict[str, ProxyOfRun] = field(default_factory=dict)
    multiplier: MultiplierOfRun = field(default_factory=MultiplierOfRun)
    origin: OriginOfRun = field(default_factory=OriginOfRun)
    workload: dict[str, Any] = field(default_factory=dict)  # the lab file's [workload] table, every key
    noise_pairs: list[tuple[str, str]] = field(default_factory=list)  # identical proxies (analysis/sections/noise.py)
    live: LiveOfRun | None = None  # written only when the run had a live page
    # A lab's other Multipliers, by name (written only when it had several): each wrote its records into its own
    # run directory, `dir` (layout.multiplier_dir), its paths relative to that directory.
    other_multipliers: dict[str, MultiplierOfRun] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> Self:
        data = data if isinstance(data, dict) else {}
        proxies = data.get("proxies") if isinstance(data.get("proxies"), dict) else {}
        return cls(name=data.get("name"), lab_file=data.get("lab_file"), started=data.get("started"),
                   spe_version=data.get("spe_version"), collector=CollectorOfRun.from_json(data.get("collector")),
                   proxies={name: ProxyOfRun.from_json(spec) for name, spec in proxies.items()},
                   multiplier=MultiplierOfRun.from_json(data.get("multiplier")),
                   origin=OriginOfRun.from_json(data.get("origin")),
                   workload=dict(data.get("workload") or {}),
                   noise_pairs=[(a, b) for a, b in data.get("noise_pairs") or []],
                   live=LiveOfRun.from_json(data["live"]) if isinstance(data.get("live"), dict) else None,
                   other_multipliers={name: MultiplierOfRun.from_json(spec)
                                      for name, spec in (data.get("other_multipliers") or {}).items()})

    def to_json(self) -> dict:
        return {"name": self.name, "lab_file": self.lab_file, "started": self.started,
                "spe_version": self.spe_version, "collector": self.collector.to_json(),
                "proxies": {name: spec.to_json() for name, spec in self.proxies.items()},
                "multiplier": self.multiplier.to_json(), "origin": self.origin.to_json(),
                "workload": self.workload, "noise_pairs": [list(pair) for pair in self.noise_pairs],
                **({"live": self.live.to_json()} if self.live else {}),
                **({"other_multipliers": {name: spec.to_json() for name, spec in self.other_multipliers.items()}}
                   if self.other_multipliers else {})}

    @classmethod
    def read(cls, run: Path) -> Self | None:
        """The lab.json of run directory `run`; None when there is none (a bare log, a run from elsewhere)."""
        path = Path(run) / LAB_JSON
        return cls.from_json(json.loads(path.read_text())) if path.is_file() else None

    def write(self, run: Path) -> Path:
        path = Path(run) / LAB_JSON
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return path

    def other_multiplier_runs(self, run: Path) -> list[Path]:
        """The run directories of the lab's other Multipliers (none with one Multiplier), in the lab file's order."""
        return [Path(run) / spec.dir for spec in self.other_multipliers.values() if spec.dir]

    @classmethod
    def of_multiplier_run(cls, run: Path) -> Self | None:
        """The topology `run`'s records were taken in: its own lab.json, or, for a lab's other Multiplier's
        directory (multipliers/NAME), the lab run's with that Multiplier as `multiplier`."""
        run = Path(run)
        lab = cls.read(lab_run_of(run))
        if lab is None or lab_run_of(run) == run or run.name not in lab.other_multipliers:
            return lab
        return replace(lab, multiplier=lab.other_multipliers[run.name], other_multipliers={})

    def proxies_of_kind(self, kind: str) -> list[str]:
        return [name for name, spec in self.proxies.items() if spec.kind == kind]

    def twins(self) -> dict[str, str]:
        """Prefetching proxy -> its non-prefetching twin."""
        return {name: spec.twin_of for name, spec in self.proxies.items() if spec.twin_of}
