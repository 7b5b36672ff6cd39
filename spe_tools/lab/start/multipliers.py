"""A lab's Multipliers, each a client group: where it listens, where it writes, what its processes are called.

The first is the run's own: its log is the run directory's, its processes are "multiplier" and "workload". Each
other one (a further [[multiplier]] table) shares the Collector and the proxies under test but writes a run
directory of its own inside the run's, multipliers/NAME/ (rundir.layout.multiplier_dir), where its processes'
output goes too: `./spe report RUN` reads them all as one evaluation, and each reads as a run on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spe_tools.lab.definition.model import Lab, MultiplierSpec, tag_prefix
from spe_tools.lab.start.port_plan import MultiplierPorts, Ports
from spe_tools.rundir import layout


@dataclass(frozen=True)
class LabMultiplier:
    index: int  # in lab.multipliers
    spec: MultiplierSpec
    ports: MultiplierPorts
    rundir: Path  # its run directory: the run's, or the run's multipliers/NAME
    tag_prefix: str | None  # with several: what the Collector routes its proxies' unsafe copies by

    @property
    def host(self) -> str:
        """Where this machine reaches it: its listen address, or the loopback when it listens on every address."""
        return "127.0.0.1" if self.spec.host == "0.0.0.0" else self.spec.host

    def process(self, name: str) -> str:
        """The name of its `name` process (layout.MULTIPLIER, layout.WORKLOAD) in the lab's process group: its
        output is <name>.out in the run directory, so the other Multipliers' go to their own directories."""
        return name if self.index == 0 else f"{layout.multiplier_dir(str(self.spec.name))}/{name}"


def lab_multipliers(lab: Lab, ports: Ports, rundir: Path) -> list[LabMultiplier]:
    return [LabMultiplier(i, m, ports.of_multiplier(i, lab),
                          rundir if i == 0 else rundir / layout.multiplier_dir(str(m.name)), tag_prefix(lab, i))
            for i, m in enumerate(lab.multipliers)]


def is_multiplier(process: str) -> bool:
    return process.rsplit("/", 1)[-1] == layout.MULTIPLIER


def is_workload(process: str) -> bool:
    return process.rsplit("/", 1)[-1] == layout.WORKLOAD
