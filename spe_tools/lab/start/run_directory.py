"""A new run directory: where (runs/ or the lab file's runs_dir), named <time>-<lab>, and who may read it."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from spe_tools.lab.definition.model import Lab
from spe_tools.lab.errors import LabError
from spe_tools.rundir import access

ROOT = Path(__file__).resolve().parents[3]


DEFAULT_RUNS = ROOT / "runs"


def make_run_dir(lab: Lab, base: Path | None = None) -> Path:
    """A new run directory under `base`, readable by its owner only (or the lab's share group: access.py),
    that the proxies' own users can pass through."""
    base = Path(base or lab.runs_dir or DEFAULT_RUNS)
    try:
        if lab.share_group:
            access.group_id(lab.share_group)  # before anything is made
    except access.AccessError as e:
        raise LabError(str(e)) from None
    access.make_passable_dirs(base)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        path = base / (f"{stamp}-{lab.name}" + (f"-{n}" if n else ""))
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    else:
        raise LabError(f"cannot create a run directory under {base}")
    # Proxies started as root drop to their own users, who must reach their directories.
    try:
        access.open_for_services(path, lab.share_group)
    except access.AccessError as e:
        raise LabError(str(e)) from None
    if os.geteuid() == 0:
        for ancestor in path.resolve().parents:
            if not ancestor.stat().st_mode & stat.S_IXOTH:
                raise LabError(f"the proxies run as their own users, who cannot reach {path}: {ancestor} is not "
                               "searchable by others (chmod o+x, or choose another runs directory)")
    return path
