"""Who may read a run directory: the user who ran the lab, or a team's group too; never every local user.

A run directory holds what the traffic carried: the Multiplier's records (every URL, queries
included), mismatch captures (whole reply headers with Set-Cookie, decrypted HTTPS bodies), the
Collector's and each proxy's access logs. The scheme (docs/robustness.md, "Live traffic"):

- SPE writes its own files under umask 077: files 0600, directories 0700; the processes the lab
  starts (origin, Multiplier, workload) inherit it, so their files are private too.
- The run directory and its `proxies/` are 0711: a proxy started as root drops to its own user
  (`proxy`, `trafficserver`, `www-data`, `varnish`, ...), which must pass through them to reach its
  own directory; others may pass too but list nothing, and every file there is private.
- Each service's directory (the Collector's, each proxy's) is handed to the user it runs as, 0700,
  and whatever it writes stays inside it.
- Shared with a group (`share_group` in the lab file, `--share-group`): umask 027, and the run
  directory belongs to that group with the set-group-ID bit, which every directory made in it
  inherits, so every file created there (the proxies' too) gets the group: directories 2750 (the run
  directory and `proxies/` 2751), files 0640. The group reads everything; others still nothing.
- When the run has stopped, `seal` takes every permission for others away from every file in it and
  leaves directories at most o+x (a service may create files with modes of its own; `./spe repro`
  replays a case inside the run directory, and its proxy must pass through again), and with a group
  gives the group read access to all of it.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from collections.abc import Iterator
from pathlib import Path

PRIVATE_UMASK = 0o077
SHARED_UMASK = 0o027
PASSABLE = 0o711  # the run directory and proxies/: the proxies' own users pass through, nobody lists


class AccessError(ValueError):
    """The run cannot be shared as asked (no such group, or not one of the user's)."""


def group_id(name: str) -> int:
    """The group's id; an AccessError names what is wrong (no such group, the user not in it)."""
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        raise AccessError(f"share_group: there is no group {name!r} on this machine (groupadd {name})") from None
    if os.geteuid() != 0 and entry.gr_gid not in os.getgroups() and entry.gr_gid != os.getegid():
        raise AccessError(f"share_group: you are not a member of group {name!r}, so you cannot give it a run "
                          "(usermod -aG, then log in again)")
    return entry.gr_gid


@contextlib.contextmanager
def umask(shared: str | bool | None) -> Iterator[None]:
    """Files and directories made meanwhile (by this process and the children it starts) are private, or
    with a share group (its name, or True) readable by the group; the previous umask is restored after."""
    old = os.umask(SHARED_UMASK if shared else PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def is_shared(rundir: Path) -> bool:
    """Whether a run directory was given to a group (it is set-group-ID then)."""
    return bool(rundir.stat().st_mode & stat.S_ISGID)


def open_for_services(directory: Path, share_group: str | None) -> None:
    """A directory the services pass through (the run directory, proxies/): 0711, or 2751 with the group."""
    if share_group:
        os.chown(directory, -1, group_id(share_group))
        directory.chmod(stat.S_ISGID | 0o751)
    else:
        directory.chmod(PASSABLE)


def make_passable_dirs(path: Path) -> None:
    """mkdir -p, the directories it makes 0711 (a new runs/ under umask 077 would be 0700, and the
    proxies' users could not reach their run directories); existing ones are left as they are."""
    missing = []
    for directory in [path, *path.parents]:
        if directory.exists():
            break
        missing.append(directory)
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
        directory.chmod(PASSABLE)


def hand_over(directory: Path, user: str, service_group: bool = False) -> None:
    """Started as root, a service runs as `user`: its directory and everything in it become that user's,
    the directory 0700; with `service_group`, 0750 to the user's own group (a service of several users:
    Varnish compiles as `varnish` and serves as `vcache`, both of group `varnish`). In a run shared with a
    group the directory is set-group-ID (inherited from the run directory): it keeps that group, 2750,
    and so does everything the service creates in it; a service that needs its own group keeps it, and
    the share group gets its files when the run is sealed."""
    entry = pwd.getpwnam(user)
    shared = bool(directory.stat().st_mode & stat.S_ISGID) and not service_group
    gid = directory.stat().st_gid if shared else entry.pw_gid
    for path in [directory, *directory.rglob("*")]:
        if not path.is_symlink():
            os.chown(path, entry.pw_uid, gid)
    if service_group:
        directory.chmod(0o750)
    else:
        directory.chmod(stat.S_ISGID | 0o750 if shared else 0o700)


def seal(rundir: Path, share_group: str | None) -> None:
    """Once nothing runs in it: no permission for others on any file in the run directory, at most o+x
    on a directory (passing through); with a group, everything belongs to the group and the group may
    read it (and enter every directory).
    Symbolic links are never followed (a service could have left one pointing anywhere)."""
    gid = group_id(share_group) if share_group else None
    for root, dirs, files in os.walk(rundir):
        for name in [*dirs, *files]:
            _seal_one(Path(root) / name, gid)
    _seal_one(Path(rundir), gid)


def _seal_one(path: Path, gid: int | None) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode) & ~(0o006 if stat.S_ISDIR(info.st_mode) else 0o007)
    regrouped = gid is not None and info.st_gid != gid
    if regrouped:
        os.chown(path, -1, gid, follow_symlinks=False)
    if gid is not None:
        mode |= 0o050 if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR else 0o040
    if regrouped or mode != stat.S_IMODE(info.st_mode):
        path.chmod(mode)  # after chown, which may have cleared set-ID bits
