"""The one duration syntax of every command's duration option (README.md, "A 5-minute tour").

`500ms`, `2s`, `10m`, `1h`, or a bare number of seconds (`2.5`); the Multiplier's
--timeout, --client-timeout and --drain-timeout take the same forms (multiplier/src/core/config.cpp).
"""

from __future__ import annotations

import argparse
import re

UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "": 1}
DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|)")


class DurationError(argparse.ArgumentTypeError, ValueError):
    """Not a duration; argparse prints the message as is (a ValueError for everyone else)."""


def parse_duration(text: str) -> float:
    """Seconds from '250ms', '90s', '5m', '1h' or '90' (argparse `type=`)."""
    match = DURATION_RE.fullmatch(str(text).strip())
    if not match:
        raise DurationError(f"expected a duration: 500ms, 2s, 10m, 1h or a number of seconds, got {text!r}")
    return float(match.group(1)) * UNIT_SECONDS[match.group(2)]
