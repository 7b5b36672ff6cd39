"""Bring a lab up: the order in which its pieces start, each from its own module.

Start order: origin, Collector (one named port per proxy under test), proxies under test (each
rendered into runs/<run>/proxies/<name>/ and pointed at its own Collector port), Multiplier, then
(spe_tools/lab/start/workload.py) the workload. Each start waits for the component's port with a deadline;
any failure stops everything already started (spe_tools/lab/start/running_lab.py) and names the component.
`pids.json` in the run directory lists every process as it starts, so `./spe lab down RUNDIR` can stop
them by PID from another shell.
"""

from __future__ import annotations

from pathlib import Path

from spe_tools.lab.definition.kinds import MULTIPLIER
from spe_tools.lab.definition.labfile import write_run_lab_file
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.checks import check
from spe_tools.lab.start.collector import start_collector
from spe_tools.lab.start.live import start_live
from spe_tools.lab.start.multiplier import start_multiplier
from spe_tools.lab.start.network import place_hosts
from spe_tools.lab.start.origin import start_origin
from spe_tools.lab.start.port_plan import assign_ports
from spe_tools.lab.start.prometheus import start_prometheus
from spe_tools.lab.start.proxies import start_proxy
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.lab.start.topology import topology
from spe_tools.ports import port_open
from spe_tools.process import ProcessGroup
from spe_tools.rundir import access
from spe_tools.rundir.layout import RunDir


def bring_up(lab: Lab, rundir: Path, group: ProcessGroup, multiplier: Path = MULTIPLIER,
             say=print) -> RunningLab:
    """Start every component in `rundir` (processes join `group`); raises LabError naming what failed."""
    problems = check(lab, multiplier)
    if problems:
        raise LabError("the lab cannot start:\n  " + "\n  ".join(problems))
    with access.umask(lab.share_group):  # what is written meanwhile, and every process started, is private
        return _bring_up(lab, rundir, group, multiplier, say)


def _bring_up(lab: Lab, rundir: Path, group: ProcessGroup, multiplier: Path, say) -> RunningLab:
    access.open_for_services(rundir, lab.share_group)
    run = RunningLab(lab, rundir, group)
    run.write_pids()
    write_run_lab_file(lab, RunDir(rundir).lab_toml)  # the lab as it runs, which may not be its file
    run.ports = assign_ports(lab)
    run.ports.addresses = place_hosts(lab, rundir)
    RunDir(rundir).proxies.mkdir(exist_ok=True)
    access.open_for_services(RunDir(rundir).proxies, lab.share_group)
    start_origin(run)
    start_collector(run)
    for p in lab.proxies:
        start_proxy(run, p.name)
        say(f"spe lab: {p.name} ({p.kind}) on {run.ports.addresses.of(p.name)}:{run.ports.proxies[p.name]}"
            if p.kind != "external" else f"spe lab: {p.name} (external) at {p.host}:{p.port}, its Collector "
            f"port is 127.0.0.1:{run.ports.collector[p.name]}" + _reachability(p.host, p.port))
    start_multiplier(run, multiplier, say)
    start_prometheus(run)
    start_live(run, say)
    topology(run, multiplier).write(rundir)
    return run


def _reachability(host: str, port: int) -> str:
    return "" if port_open(host, port, timeout=2) else " (NOT answering yet)"
