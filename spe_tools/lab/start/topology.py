"""lab.json as the lab writes it once everything is up (spe_tools/rundir/lab_json.py is the file's contract)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS, MULTIPLIER
from spe_tools.lab.definition.model import Lab, tag_prefix
from spe_tools.lab.definition.noise_pairs import noise_pairs
from spe_tools.lab.start.collector import strip_query_terms
from spe_tools.lab.start.live import live_of_run
from spe_tools.lab.start.multipliers import lab_multipliers
from spe_tools.lab.start.places import ca_dir
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.rundir import layout
from spe_tools.rundir.lab_json import DIRECT_PORT, CollectorOfRun, LabJson, MultiplierOfRun, OriginOfRun, ProxyOfRun
from spe_tools.version import describe


def topology(run: RunningLab, multiplier: Path = MULTIPLIER) -> LabJson:
    """lab.json: names, kinds, versions, ports and log paths (relative to the run directory)."""
    lab = run.lab
    return LabJson(name=lab.name, lab_file=layout.LAB_TOML, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                   spe_version=describe(), collector=_collector(lab, run.ports), proxies=_proxies(lab, run.ports),
                   multiplier=_multiplier(lab, run.ports, multiplier), origin=_origin(lab, run.ports),
                   workload=_workload(lab),
                   noise_pairs=noise_pairs(lab),  # identical proxies (analysis/sections/noise.py)
                   live=live_of_run(run), other_multipliers=_other_multipliers(run, multiplier))


def _workload(lab: Lab) -> dict:
    """The [workload] table, every key; the replay's files as absolute paths (lab.json is read from the run
    directory, and a Path is no JSON value)."""
    return {**asdict(lab.workload), "files": [str(Path(path).resolve()) for path in lab.workload.files]}


def _collector(lab: Lab, ports: Ports) -> CollectorOfRun:
    return CollectorOfRun(
        kind=lab.collector.kind, version=collector.version(lab.collector.kind),
        ports={DIRECT_PORT: ports.direct, **ports.collector},
        accel=[p.name for p in lab.proxies if KINDS[p.kind].accel],
        access_log=layout.ACCESS_LOG, cache_log=layout.CACHE_LOG,
        uncacheable_ttl_s=lab.collector.uncacheable_ttl_s, replay_timing=lab.collector.replay_timing,
        cache_mb=lab.collector.cache_mb,
        # paths as strings (a Path is no JSON value), absolute: lab.json is read from the run directory
        origin_ca_files=[str(Path(path).resolve()) for path in lab.collector.origin_ca_files],
        strip_query_terms=strip_query_terms(lab))


def _proxies(lab: Lab, ports: Ports) -> dict[str, ProxyOfRun]:
    versions = {kind: KINDS[kind].version() for kind in {p.kind for p in lab.proxies}}
    return {p.name: ProxyOfRun(
        kind=p.kind, version=versions[p.kind], port=ports.proxies[p.name],
        host=p.host if p.kind == "external" else ports.addresses.of(p.name),
        collector_port=ports.collector[p.name], caches=KINDS[p.kind].caches, accel=KINDS[p.kind].accel,
        twin_of=p.twin_of or None, collector_limit_kbps=p.collector_limit_kbps or None,
        prefetch=p.prefetch if p.kind == "trafficserver" else None,
        dir=layout.proxy_dir(p.name), stdout=layout.output_of(p.name)) for p in lab.proxies}


def _multiplier(lab: Lab, ports: Ports, multiplier: Path) -> MultiplierOfRun:
    m = lab.multiplier
    return MultiplierOfRun(
        name=m.name, tag_prefix=tag_prefix(lab, 0),
        host=m.host, port=ports.multiplier, mode=m.mode, legs=m.legs, replay_port=ports.replay,
        version=_version([str(multiplier), "--version"]), log=layout.MULTIPLIER_LOG, intercept_tls=m.intercept_tls,
        ca_cert=str(ca_dir(lab) / spe_ca.CERT_NAME) if m.intercept_tls else None,
        rope_log=layout.ROPE_LOG, captures=layout.CAPTURES,
        metrics_url=f"http://{metrics[0]}:{ports.metrics}/metrics" if (metrics := m.metrics_address) else None,
        prometheus_url=f"http://127.0.0.1:{ports.prometheus}" if ports.prometheus else None)


def _other_multipliers(run: RunningLab, multiplier: Path) -> dict[str, MultiplierOfRun]:
    """The lab's other Multipliers: each one's run directory (relative to the run's) and its paths in it."""
    version = _version([str(multiplier), "--version"]) if run.lab.other_multipliers else None
    return {str(m.spec.name): MultiplierOfRun(
        name=m.spec.name, host=m.spec.host, port=m.ports.listen, mode=m.spec.mode, legs=m.spec.legs,
        replay_port=m.ports.replay, version=version, log=layout.MULTIPLIER_LOG, intercept_tls=m.spec.intercept_tls,
        rope_log=layout.ROPE_LOG, captures=layout.CAPTURES, tag_prefix=m.tag_prefix,
        dir=str(m.rundir.relative_to(run.rundir)),
        metrics_url=f"http://{metrics[0]}:{m.ports.metrics}/metrics" if (metrics := m.spec.metrics_address) else None)
        for m in lab_multipliers(run.lab, run.ports, run.rundir)[1:]}


def _origin(lab: Lab, ports: Ports) -> OriginOfRun:
    o = lab.origin
    return OriginOfRun(
        kind=o.kind, host=o.host, port=ports.origin, model=str(o.model) if o.model else None,
        think_mean_ms=o.think_mean_ms, think_sd_ms=o.think_sd_ms, seed=o.seed,
        stdout=layout.output_of(layout.ORIGIN), tls_port=ports.origin_tls or None,
        tls_ca=f"{layout.ORIGIN_TLS}/{spe_ca.ORIGIN_CA_NAME}" if ports.origin_tls else None,
        har=[str(Path(path).resolve()) for path in o.har] or None, think_scale=o.think_scale)


def _version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"
