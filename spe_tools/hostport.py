"""HOST:PORT on the command line of the workloads and the prefetch agent (argparse `type=`), and the workloads'
--via: the HTTP proxy they send through."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def parse_hostport(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def hostport(text: str) -> tuple[str, int]:
    """parse_hostport as an argparse `type=`: a bad value is a usage error naming it."""
    try:
        return parse_hostport(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


class _NotAProxyUnderTest(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option_string: str | None = None):
        parser.error("--proxy names a proxy under test in SPE (the Multiplier's, ./spe repro's, ./spe export's); "
                     "the proxy a client sends through is --via HOST:PORT")


def add_via(parser: argparse.ArgumentParser, help: str, required: bool = False,
            type: Callable[[str], Any] = hostport) -> None:  # noqa: A002 (argparse's own word)
    """--via HOST:PORT (in args.proxy): the HTTP proxy the client sends everything through, the Multiplier in a lab.
    In SPE --proxy always names a proxy under test, so here it is refused with a pointer to --via."""
    parser.add_argument("--via", dest="proxy", metavar="HOST:PORT", type=type, required=required, help=help)
    parser.add_argument("--proxy", nargs="?", action=_NotAProxyUnderTest, help=argparse.SUPPRESS)
