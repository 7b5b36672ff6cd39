"""Everything that would stop a lab from starting here (`./spe lab check`, and `up`/`run` before they start
anything): missing programs and users, unusable files, a share group that does not exist, a port clash."""

from __future__ import annotations

import os
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS, MULTIPLIER
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.network import netns
from spe_tools.lab.start.places import ca_dir
from spe_tools.lab.start.port_plan import assign_ports
from spe_tools.lab.start.prometheus import PROGRAM as PROMETHEUS_PROGRAM
from spe_tools.rundir import access
from spe_tools.workload import browse
from spe_tools.workload.content import model as content_model
from spe_tools.workload.har import archive as har
from spe_tools.workload.har import read as har_read


def check(lab: Lab, multiplier: Path = MULTIPLIER) -> list[str]:
    """Everything that would stop this lab from starting here, as messages (empty = ready)."""
    problems = [f"[collector] kind {lab.collector.kind!r}: {m}" for m in collector.missing(lab.collector.kind)]
    limited = [p.name for p in lab.proxies if p.collector_limit_kbps]
    if limited and not problems and not collector.has_delay_pools(lab.collector.kind):
        problems.append(f"[[proxy]] {limited[0]!r}.collector_limit_kbps: this Collector was built without delay "
                        "pools (./spe setup rebuilds the patched one with them)")
    if not multiplier.exists():
        problems.append(f"the Multiplier {multiplier} is not built (./spe setup builds it)")
    seen: set[str] = set()
    for p in lab.proxies:
        if p.kind in seen:
            continue
        seen.add(p.kind)
        problems += [f"[[proxy]] {p.name!r} (kind {p.kind}): {m}" for m in KINDS[p.kind].missing(multiplier)]
    problems += _origin_and_workload_problems(lab)
    problems += _https_problems(lab)
    if lab.multiplier.prometheus and not Path(PROMETHEUS_PROGRAM).exists():
        problems.append(f"[multiplier] prometheus = true: {PROMETHEUS_PROGRAM} is missing (Debian's package "
                        "prometheus; ./spe setup installs it)")
    if lab.network.isolated and (why := netns.missing_privilege()):
        problems.append(f"[network]: {why}")
    if lab.share_group:
        try:
            access.group_id(lab.share_group)
        except access.AccessError as e:
            problems.append(str(e))
    try:
        assign_ports(lab)
    except LabError as e:
        problems.append(str(e))
    return problems


def _origin_and_workload_problems(lab: Lab) -> list[str]:
    problems = []
    if lab.origin.model is not None:
        try:
            content_model.Model.load(str(lab.origin.model))
        except (OSError, ValueError, TypeError) as e:
            problems.append(f"[origin].model: {lab.origin.model}: {e}")
    problems += _recording_problems("[origin].har", lab.origin.har, all_har=True)
    if lab.workload.kind == "browse" and not os.access(browse.CHROMIUM, os.X_OK):
        problems.append(f"[workload] kind 'browse' needs Chromium ({browse.CHROMIUM}): apt-get install chromium "
                        "(./spe setup does)")
    return problems + _recording_problems("[workload].files", lab.workload.files, all_har=False)


def _recording_problems(where: str, paths: tuple[Path, ...], all_har: bool) -> list[str]:
    """The recordings a lab reads: there, and each HAR readable as one (a HAR origin's all are; an access log's
    bad lines are only counted when it runs): a file that is no HAR stops the lab."""
    problems = []
    for path in paths:
        if not Path(path).is_file():
            problems.append(f"{where}: {path} is not a file")
        elif all_har or har.is_har_file(path):
            try:
                har_read.read_har(path, bodies="drop")
            except har.HarError as e:
                problems.append(f"{where}: {e}")
    return problems


def _https_problems(lab: Lab) -> list[str]:
    problems = []
    for path in lab.collector.origin_ca_files:
        if not Path(path).is_file():
            problems.append(f"[collector].origin_ca_files: {path} is not a file")
        elif any(c.isspace() for c in str(Path(path).resolve())):  # else a ValueError from collector.tls_outgoing
            problems.append(f"[collector].origin_ca_files: {Path(path).resolve()}: Squid cannot name a file whose "
                            "path has spaces (copy it elsewhere)")
    if lab.multiplier.intercept_tls and (ca_dir(lab) / spe_ca.CERT_NAME).exists():
        try:
            spe_ca.check_spe_ca(spe_ca.CaFiles(ca_dir(lab)))
        except spe_ca.CaError as e:
            problems.append(f"[multiplier].intercept_tls: {e}")
    return problems
