"""The lab's hosts ([network]): each proxy under test, and the origin, in a network namespace of its own when the
lab file says so, made before anything starts (the Collector listens on their links) and removed after
everything stopped (spe_tools/lab/start/running_lab.py)."""

from __future__ import annotations

from pathlib import Path

from spe_tools.lab.definition.model import NAMESPACE, Lab
from spe_tools.lab.network import netns
from spe_tools.lab.network.addresses import Addresses
from spe_tools.rundir import layout


def placed_pieces(lab: Lab) -> list[str]:
    """The pieces that get a host of their own: an external proxy is the user's to place."""
    proxies = [p.name for p in lab.proxies if p.kind != "external"] if lab.network.proxies == NAMESPACE else []
    return [*proxies, *([layout.ORIGIN] if lab.network.origin == NAMESPACE else [])]


def place_hosts(lab: Lab, rundir: Path) -> Addresses:
    pieces = placed_pieces(lab)
    if not pieces:
        return Addresses()
    return Addresses({host.piece: host for host in netns.make_hosts(pieces, lab.network.subnet, rundir)})
