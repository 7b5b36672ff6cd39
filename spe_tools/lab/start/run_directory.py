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
# Where the demo puts its runs when runs/ is out of the proxies' reach: a checkout in root's home (0700 on Debian)
# is one, and a first run should not end in "chmod o+x" after its builds. World-passable on every Debian.
PASSABLE_RUNS = Path("/var/tmp/spe-runs")


def blocking_ancestor(path: Path) -> Path | None:
    """The first existing directory above `path` that other users cannot pass through, or None: a proxy started
    as root drops to its own user, who must reach its directory under the run directory."""
    for ancestor in path.resolve().parents:
        if ancestor.exists() and not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def demo_runs_dir(explicit: Path | None, lab: Lab, as_root: bool) -> tuple[Path | None, str | None]:
    """The runs directory the demo uses and a note saying why it is not runs/, if it is not: the one asked for
    (--runs-dir or the lab file's) as it is, else runs/ unless a proxy's user could not reach it."""
    if explicit is not None or lab.runs_dir is not None or not as_root:
        return explicit, None
    blocked = blocking_ancestor(DEFAULT_RUNS / "run")
    if blocked is None:
        return None, None
    return PASSABLE_RUNS, (f"the proxies' own users cannot pass {blocked}, so this run goes to {PASSABLE_RUNS}"
                           " (--runs-dir to choose)")


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
    blocked = blocking_ancestor(path) if os.geteuid() == 0 else None
    if blocked is not None:
        raise LabError(f"the proxies run as their own users, who cannot reach {path}: {blocked} is not "
                       "searchable by others (chmod o+x, or choose another runs directory)")
    return path
