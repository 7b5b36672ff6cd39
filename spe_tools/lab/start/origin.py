"""The origin of a lab: the synthetic one (spe_tools.workload.origin) or the HAR origin
(spe_tools.workload.har_origin), its command line, and its start (with [origin] tls its HTTPS port too, and a
test CA made for the run)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.places import origin_tls_dir
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.ports import port_open
from spe_tools.process import tail
from spe_tools.rundir import layout

START_S = 20  # how long an origin may take to listen
HAR_MB_PER_S = 30  # what the HAR origin reads at least, with room: 468 MB took 7.4 s here (docs/benchmarks.md)


def ready_deadline_s(lab: Lab) -> float:
    """How long the origin may take to listen: the HAR origin reads its recordings first."""
    if lab.origin.kind != "har":
        return START_S
    size = sum(Path(path).stat().st_size for path in lab.origin.har if Path(path).is_file())
    return START_S + size / 2**20 / HAR_MB_PER_S


def start_origin(run: RunningLab) -> None:
    if run.lab.origin.kind == "none":
        return
    address = run.ports.addresses.of(layout.ORIGIN)  # the loopback, or its own host's ([network] origin)
    if run.lab.origin.tls:
        spe_ca.test_origin_tls(origin_tls_dir(run.rundir), [run.lab.origin.host, "localhost", "127.0.0.1", address])
    argv = run.ports.addresses.argv(layout.ORIGIN, origin_argv(run.lab, run.ports, run.rundir))
    child = run.group.start(layout.ORIGIN, argv, port=run.ports.origin, ready=False, env=lab_env(run.rundir))
    run.record(child)
    child.wait_ready(host=address, deadline_s=ready_deadline_s(run.lab))
    end = time.monotonic() + START_S  # the HTTPS port opens right after the HTTP one
    while run.ports.origin_tls and not port_open(address, run.ports.origin_tls):
        if time.monotonic() > end or not child.alive():
            raise LabError(f"the origin did not serve HTTPS on {address}:{run.ports.origin_tls}:\n{tail(child.log)}")
        time.sleep(0.05)


def origin_argv(lab: Lab, ports: Ports, rundir: Path) -> list[str]:
    """The synthetic origin (spe_tools.workload.origin) on the loopback, the lab file's model and think time,
    and with [origin] tls its HTTPS port, with a test CA made for this run (handed to the Collector); or the HAR
    origin."""
    o = lab.origin
    if o.kind == "har":
        return har_origin_argv(lab, ports)
    address = ports.addresses.of(layout.ORIGIN)
    argv = [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"{address}:{ports.origin}",
            "--seed", str(o.seed)]
    if ports.origin_tls:
        argv += ["--tls", f"{address}:{ports.origin_tls}", "--tls-dir", str(origin_tls_dir(rundir))]
    if o.model is not None:
        argv += ["--model", str(Path(o.model).resolve())]
    if o.think_mean_ms is not None:
        argv += ["--think-mean-ms", f"{o.think_mean_ms:g}"]
    if o.think_sd_ms is not None:
        argv += ["--think-sd-ms", f"{o.think_sd_ms:g}"]
    return argv


def har_origin_argv(lab: Lab, ports: Ports) -> list[str]:
    """The HAR origin on the loopback, serving the lab file's recordings (absolute: it runs in the run directory)."""
    o = lab.origin
    argv = [sys.executable, "-m", "spe_tools.workload.har_origin", "--listen",
            f"{ports.addresses.of(layout.ORIGIN)}:{ports.origin}",
            *(str(Path(path).resolve()) for path in o.har)]
    if o.think_scale is not None:
        argv += ["--think-scale", f"{o.think_scale:g}"]
    return argv
