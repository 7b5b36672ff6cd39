"""The Multiplier of a lab: its command line (every proxy, the Collector, the logs in the run directory,
interception) and its start, last, once everything it sends to answers."""

from __future__ import annotations

from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools.duration import DurationError, parse_duration
from spe_tools.lab.definition.kinds import MULTIPLIER
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.definition.multiplier_args import option_values
from spe_tools.lab.definition.multiplier_spec import MultiplierSpec, multiplier_flags
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.multipliers import LabMultiplier, lab_multipliers
from spe_tools.lab.start.places import ca_dir
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.process import Child, ProcessError
from spe_tools.rundir import layout
from spe_tools.rundir.layout import RunDir


def multiplier_argv(lab: Lab, ports: Ports, rundir: Path, multiplier: Path = MULTIPLIER,
                    which: LabMultiplier | None = None) -> list[str]:
    """The command line of the lab's `which` Multiplier (default: its first, the run's own)."""
    which = which or lab_multipliers(lab, ports, rundir)[0]
    m, own = which.spec, RunDir(which.rundir)
    argv = [str(multiplier), "--listen", f"{m.host}:{which.ports.listen}", "--collector", f"127.0.0.1:{ports.direct}",
            "--replay-listen", f"127.0.0.1:{which.ports.replay}",
            "--log", str(own.multiplier_log), "--rope-log", str(own.rope_log), "--capture-dir", str(own.captures)]
    argv += [*(["--name", m.name] if m.name else []), *(["--tag-prefix", which.tag_prefix] if which.tag_prefix else [])]
    argv += multiplier_flags(m)  # the keys that declare their flag (definition/multiplier_spec.py)
    for p in lab.proxies:
        host = p.host if p.kind == "external" else ports.addresses.of(p.name)
        argv += ["--proxy", f"{p.name}={host}:{ports.proxies[p.name]}"]
    if metrics := m.metrics_address:
        argv += ["--metrics-listen", f"{metrics[0]}:{which.ports.metrics}"]
    # The synthetic origin numbers its fetches of each path (X-Origin-Count, a diagnostic): a proxy's
    # copy from an earlier fetch differs there and nowhere else, which is not a caching error.
    synthetic = ("X-Origin-Count",) if lab.origin.kind == "synthetic" else ()
    for h in (*synthetic, *m.ignore_headers):
        argv += ["--ignore-header", h]
    if m.intercept_tls:
        argv += ["--intercept-tls", "--ca-dir", str(ca_dir(lab))]
        for port in dict.fromkeys((443, ports.origin_tls or 443)):
            argv += ["--connect-port", str(port)]
        for pattern in m.no_intercept:
            argv += ["--no-intercept", pattern]
    return [*argv, *m.extra_args]


# How long the Multiplier may take to listen: it listens within a second on an idle machine, but an ASan build
# on two cores shared with a lab's proxies starting beside it once took more than 10 s (a failure exits at once).
START_DEADLINE_S = 30.0
DRAIN_S = 10.0  # the Multiplier's default --drain-timeout
ABORT_S = 5.0  # after its drain, what it takes to abort what is left and write the last records (about 1 s)


def drain_s(m: MultiplierSpec) -> float:
    """The Multiplier's --drain-timeout: its default, or what [multiplier] extra_args (or its --config) give."""
    given = option_values(m.extra_args, "drain-timeout")
    try:
        return parse_duration(given[-1]) if given else DRAIN_S
    except DurationError:
        return DRAIN_S  # the Multiplier refuses it and says why


def start_multiplier(run: RunningLab, multiplier: Path = MULTIPLIER, say=print) -> None:
    """Start every Multiplier of the lab, the run's own first; each listens before the next starts."""
    if run.lab.multiplier.intercept_tls:
        files, created = spe_ca.create_spe_ca(ca_dir(run.lab))
        if created:
            say(f"spe lab: created SPE's CA for HTTPS interception in {files.directory} (./spe ca says how to "
                "trust it)")
    if run.replay_holders:
        for holder in run.replay_holders:
            holder.close()  # the Collector has found its parents there: the Multipliers listen now
        run.replay_holders = []
    for which in lab_multipliers(run.lab, run.ports, run.rundir):
        which.rundir.mkdir(parents=True, exist_ok=True)
        child = _start_one(run, which, multiplier_argv(run.lab, run.ports, run.rundir, multiplier, which))
        if which.index == 0:
            run.multiplier = child


def _start_one(run: RunningLab, which: LabMultiplier, argv: list[str]) -> Child:
    name = which.process(layout.MULTIPLIER)
    try:
        child = run.group.start(name, argv, port=which.ports.listen, ready=False, env=lab_env(which.rundir))
        # Stopped first, it finishes its last fan-outs (its --drain-timeout) before the proxies and the Collector
        # are stopped: a leg sent to a proxy already gone would be recorded against the proxy (refused).
        child.drain_s = drain_s(which.spec) + ABORT_S
        run.record(child)
        child.wait_ready(host=which.host, deadline_s=START_DEADLINE_S)
    except ProcessError as e:
        raise LabError(f"the Multiplier{f' {which.spec.name!r}' if which.index else ''} failed to start: {e}") from e
    return child
