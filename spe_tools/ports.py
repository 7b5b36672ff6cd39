"""TCP ports on this machine: whether one answers, and the one allocator of free ones (the lab, ./spe repro and
the tests pick ports here, never by hand)."""

from __future__ import annotations

import socket
from collections import deque
from dataclasses import dataclass, field

# The ports free_port handed out lately: whoever asked may not listen on one yet, and the system, which knows
# nothing of that, hands the same one out again now and then (10,000 draws here gave 7,152 distinct ports). A
# test's proxy port came out equal to another proxy's Collector port, which the lab then found taken.
_HANDED_OUT: deque[int] = deque(maxlen=4096)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now, and none this process handed out lately."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.append(port)
            return port


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class FreePorts:
    """Free ports, none handed out twice, nor one of those `taken` (ports fixed elsewhere, not yet listening)."""

    taken: set[int] = field(default_factory=set)

    def pick(self) -> int:
        while True:
            port = free_port()
            if port not in self.taken:
                self.taken.add(port)
                return port

    def get(self, port: int) -> int:
        """`port`, or a free one for 0."""
        return port or self.pick()
