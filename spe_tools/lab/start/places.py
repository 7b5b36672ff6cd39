"""Where the pieces of a lab find their files: SPE's CA, the origin's test CA (each Multiplier's address as this
machine reaches it: spe_tools/lab/start/multipliers.py)."""

from __future__ import annotations

from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools.lab.definition.model import Lab
from spe_tools.rundir import layout


def ca_dir(lab: Lab) -> Path:
    """SPE's CA for this lab: the file's ca_dir, else ./spe ca's (resolved here: the Multiplier's HOME is the run)."""
    return Path(lab.multiplier.ca_dir or spe_ca.default_dir()).resolve()


def origin_tls_dir(rundir: Path) -> Path:
    return rundir / layout.ORIGIN_TLS

