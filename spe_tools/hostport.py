"""HOST:PORT on the command line of the workloads and the prefetch agent (argparse `type=`)."""

from __future__ import annotations


def parse_hostport(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)
