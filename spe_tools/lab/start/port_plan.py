"""Which port each piece of a lab gets: the lab file's fixed ones (checked free), free ones for the rest, none
twice (spe_tools/ports.py picks them); and, once the lab has made them, the addresses of the pieces on hosts of
their own ([network], spe_tools/lab/network/addresses.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from spe_tools.lab.definition.model import Lab, MultiplierSpec, multiplier_table
from spe_tools.lab.errors import LabError
from spe_tools.lab.network.addresses import Addresses
from spe_tools.ports import FreePorts, port_open


@dataclass
class MultiplierPorts:
    """An other Multiplier's ports (the first's are Ports' own multiplier, replay and metrics)."""

    listen: int
    replay: int
    metrics: int = 0


@dataclass
class Ports:
    origin: int
    direct: int  # the Collector port the Multiplier uses
    multiplier: int
    proxies: dict[str, int]  # where each proxy under test listens
    collector: dict[str, int]  # each proxy's Collector port
    origin_tls: int = 0  # the synthetic origin's HTTPS port ([origin] tls)
    replay: int = 0  # the Multiplier's replay port: the Collector's parent for the proxies' unsafe copies
    metrics: int = 0  # the Multiplier's /metrics ([multiplier] metrics_listen); 0: off
    prometheus: int = 0  # Prometheus's web UI and API ([multiplier] prometheus); 0: off
    live: int = 0  # the live scorecard page's ([live] enabled)
    others: dict[str, MultiplierPorts] = field(default_factory=dict)  # the other Multipliers', by name
    addresses: Addresses = field(default_factory=Addresses)  # where each piece is: the loopback, or its own host

    def of_multiplier(self, index: int, lab: Lab) -> MultiplierPorts:
        """The `index`th Multiplier's ports (lab.multipliers' order)."""
        if index == 0:
            return MultiplierPorts(self.multiplier, self.replay, self.metrics)
        return self.others[lab.multipliers[index].name]


def assign_ports(lab: Lab) -> Ports:
    """Fixed ports from the file (which must be free now), free ones for the rest, none twice."""
    free = FreePorts()
    fixed = [("[origin].port", lab.origin.port), ("[collector].port", lab.collector.port),
             ("[origin].tls_port", lab.origin.tls_port)]
    for m in lab.multipliers:
        fixed += [(f"{multiplier_table(lab, m)}.listen", m.port),
                  (f"{multiplier_table(lab, m)}.metrics_listen", _metrics_port(m))]
    fixed += [(f"proxy {p.name!r} port", p.port) for p in lab.proxies if p.kind != "external"]
    fixed += [(f"proxy {p.name!r} collector_port", p.collector_port) for p in lab.proxies]
    for what, port in fixed:
        if port and port_open("127.0.0.1", port):
            raise LabError(f"port clash: {what} {port} is already in use on this machine")
        free.taken.add(port)
    return Ports(origin=free.get(lab.origin.port) if lab.origin.kind != "none" else 0,
                 direct=free.get(lab.collector.port), multiplier=free.get(lab.multiplier.port),
                 proxies={p.name: p.port if p.kind == "external" else free.get(p.port) for p in lab.proxies},
                 collector={p.name: free.get(p.collector_port) for p in lab.proxies},
                 origin_tls=free.get(lab.origin.tls_port) if lab.origin.tls else 0, replay=free.get(0),
                 metrics=free.get(_metrics_port(lab.multiplier)) if lab.multiplier.metrics_address else 0,
                 prometheus=free.get(0) if lab.multiplier.prometheus else 0,
                 live=free.pick() if lab.live.enabled else 0,
                 others={m.name: MultiplierPorts(free.get(m.port), free.get(0), free.get(_metrics_port(m)) if
                                                 m.metrics_address else 0)
                         for m in lab.other_multipliers if m.name})


def _metrics_port(m: MultiplierSpec) -> int:
    return metrics[1] if (metrics := m.metrics_address) else 0
