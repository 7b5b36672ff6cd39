"""What the death of a piece of a running lab means. A proxy under test that dies is reported once and the
run goes on: the Multiplier measures its failures, which is what an evaluation should record (ROPE lost a
proxy mid-run too); a companion (a prefetch agent, a cache cleaner) likewise, its proxy runs on without it.
If the origin, the Collector or the Multiplier dies, the run measures nothing: the lab stops with an error
naming it."""

from __future__ import annotations

from collections.abc import Callable

from spe_tools.lab.errors import LabError
from spe_tools.lab.start.multipliers import is_multiplier, is_workload
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.process import describe_exit
from spe_tools.rundir import layout
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.status_json import DEAD, ENDED, UP, ComponentStatus

# Without these the run measures nothing: the lab stops when one of them dies (or any of its Multipliers).
CORE = (layout.ORIGIN, layout.COLLECTOR, layout.MULTIPLIER)


def is_core(process: str) -> bool:
    return process in CORE or is_multiplier(process)


def dead_pieces(run: RunningLab) -> dict[str, str]:
    """Each process of the lab that has ended (the workload aside: its end is the run's), and how it ended,
    e.g. "killed by SIGKILL"."""
    return {c.name: describe_exit(c.popen.returncode) for c in run.group.children
            if not is_workload(c.name) and not c.alive()}


def component_states(run: RunningLab) -> list[ComponentStatus]:
    """Every process of the lab in start order, up or dead (how it ended), for status.json. The lab restarts
    nothing: a process that died stays dead."""
    states = []
    for c in run.group.children:
        if c.alive():
            states.append(ComponentStatus(c.name, UP))
        else:
            states.append(ComponentStatus(c.name, ENDED if is_workload(c.name) else DEAD,
                                          describe_exit(c.popen.returncode)))
    return states


def check_liveness(run: RunningLab, elapsed: float, down: set[str], say: Callable[[str], None]) -> None:
    """Raises LabError when a core piece has died; says once of each other piece that died (added to `down`)."""
    files = RunDir(run.rundir)
    dead = dead_pieces(run)
    core = [name for name in dead if is_core(name)]
    if core:
        ended = "; ".join(f"{name} {dead[name]}" for name in core)
        raise LabError(f"{', '.join(core)} stopped unexpectedly after {elapsed:.0f} s ({ended}); the lab stops "
                       f"(see {files.output(core[0])}" + (f" and {files.cache_log}"
                                                          if layout.COLLECTOR in core else "") + ")")
    proxies = {p.name for p in run.lab.proxies}
    for name in sorted(set(dead) - down):
        if name in proxies:
            say(f"spe lab: proxy {name!r} stopped unexpectedly after {elapsed:.0f} s ({dead[name]}); the run goes "
                f"on and counts its requests as failures (see {files.output(name)})")
        elif name == layout.LIVE:  # analysis/live.py: only the page is lost
            say(f"spe lab: the live page stopped unexpectedly after {elapsed:.0f} s ({dead[name]}); the run goes on "
                f"(see {files.output(name)})")
        else:  # a companion (kinds.Companion: a prefetch agent, a cache cleaner): its proxy runs on without it
            say(f"spe lab: {name!r} stopped unexpectedly after {elapsed:.0f} s ({dead[name]}); its proxy runs on "
                f"without it (see {files.output(name)})")
        down.add(name)
