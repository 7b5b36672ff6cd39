"""Which address each piece of a lab has: the loopback for everything, unless [network] puts proxies (and the
origin) on hosts of their own (spe_tools/lab/network/netns.py). Pure: the lab's start code asks it, the templates and
command lines get its answers."""

from __future__ import annotations

from dataclasses import dataclass, field

from spe_tools.lab.network.netns import Host

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Addresses:
    hosts: dict[str, Host] = field(default_factory=dict)  # by piece (a proxy's name, "origin"); none: loopback

    def of(self, piece: str) -> str:
        """Where the piece listens, and where the Multiplier, the Collector and the workload reach it."""
        return self.hosts[piece].address if piece in self.hosts else LOOPBACK

    def gateway(self, piece: str) -> str:
        """The other end of the piece's link: where it reaches the Collector, and the address connections from
        the Multiplier come from."""
        return self.hosts[piece].gateway if piece in self.hosts else LOOPBACK

    def argv(self, piece: str, argv: list[str]) -> list[str]:
        """argv as the piece's process runs it: inside its namespace, if it has one."""
        return self.hosts[piece].argv(argv) if piece in self.hosts else argv

    def client_networks(self) -> tuple[str, ...]:
        """Who may use the Collector: the loopback, and each host of the lab from its own address."""
        return ("127.0.0.0/8", *(f"{h.address}/32" for h in self.hosts.values()))
