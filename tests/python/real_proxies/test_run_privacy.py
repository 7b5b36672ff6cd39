"""A run directory holds what the traffic carried (URLs with their queries, reply headers with Set-Cookie,
decrypted HTTPS bodies, access logs): no other local user may read any of it, while the lab runs or
after; with a share group (`share_group`, `--share-group`) that group reads all of it, and still nobody
else. Every proxy kind keeps working although each drops to its own user (spe_tools/rundir/access.py).
Through the real `./spe lab up|down|run`, as root: the proxies run as their own users."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import lab_up
from parts import environment_skip, installed_kinds

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import PROXY_KINDS
from spe_tools.lab.start.running_lab import down

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
GROUP = "users"  # Debian's group 100: any existing group does


def lab_text() -> str:
    """Every proxy kind installed here (each drops to a user of its own), the load client."""
    kinds = installed_kinds([k for k in PROXY_KINDS if k != "external"], multiplier_binary())
    text = ('name = "private"\n[collector]\nkind = "squid"\n[origin]\nthink_mean_ms = 0\n'
            '[workload]\nkind = "load"\nduration_s = 4\nrate = 10\nclients = 2\n')
    for kind in kinds:
        text += f'[[proxy]]\nname = "p-{kind}"\nkind = "{kind}"\n'
        if "cache_mb" in KINDS[kind].keys:
            text += "cache_mb = 16\n"
    return text


@pytest.fixture
def runs():
    if os.geteuid() != 0:
        environment_skip("the proxies drop to their own users only when the lab runs as root")
    multiplier_binary()
    path = Path(tempfile.mkdtemp(prefix="spe-privacy-"))
    path.chmod(0o755)  # as a shared runs/ directory may be
    (path / "lab.toml").write_text(lab_text())
    yield path
    for rundir in path.glob("*-private"):
        down(rundir)
    shutil.rmtree(path, ignore_errors=True)


def tree(rundir: Path) -> list[tuple[Path, os.stat_result]]:
    """Every file and directory in the run directory (itself included), as they are now."""
    found = [(rundir, rundir.lstat())]
    for root, dirs, files in os.walk(rundir):
        for name in [*dirs, *files]:
            path = Path(root) / name
            try:
                found.append((path, path.lstat()))
            except FileNotFoundError:  # a running service removed it meanwhile
                continue
    return found


def open_to_others(rundir: Path) -> list[str]:
    """What another local user could do there: list or change a directory, or read or change a file
    that it can reach (every directory on the way searchable by others)."""
    modes = dict(tree(rundir))
    problems = []
    for path, info in modes.items():
        on_the_way = [path.parent, *path.parent.parents] if path != rundir else []
        reachable = all(modes[d].st_mode & stat.S_IXOTH for d in on_the_way if d in modes)
        others = stat.S_IMODE(info.st_mode) & 0o007
        if reachable and others & 0o006:
            problems.append(f"{stat.filemode(info.st_mode)} {path.relative_to(rundir.parent)}")
    return problems


def others_bits(rundir: Path) -> list[str]:
    """Files with any permission for others, directories with more than o+x (passing through)."""
    return [f"{stat.filemode(info.st_mode)} {path.relative_to(rundir.parent)}" for path, info in tree(rundir)
            if stat.S_IMODE(info.st_mode) & (0o006 if stat.S_ISDIR(info.st_mode) else 0o007)]


def records(rundir: Path) -> list[dict]:
    log = rundir / "multiplier.jsonl"
    return [json.loads(line) for line in log.read_text().split("\n")[:-1]] if log.exists() else []


def every_proxy_answered(rundir: Path) -> None:
    """Each proxy under test answered every GET (none was kept out of its own files); unsafe methods may
    be kept from the proxies by the Multiplier."""
    found = [r for r in records(rundir) if r["method"] in ("GET", "HEAD")]
    assert found
    for record in found:
        for leg in record["proxies"]:
            assert leg.get("status") is not None and not leg.get("error"), (leg["name"], record["url"], leg)


def test_a_run_is_private_while_it_runs_and_after(runs):
    with lab_up(runs / "lab.toml", runs) as lab:
        rundir = lab.rundir
        topo = json.loads((rundir / "lab.json").read_text())
        proxy = f"http://127.0.0.1:{topo['multiplier']['port']}"
        origin = f"http://localhost:{topo['origin']['port']}"
        for path in ("/page/1.html?session=secret", "/obj/2?think=0&token=secret"):
            result = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy,
                                     origin + path], capture_output=True, text=True, timeout=30)
            assert result.stdout == "200", result
        end = time.monotonic() + 30
        while len(records(rundir)) < 2 and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(1.5)  # the Collector and the proxies write their access logs
        # While it runs: the run directory and proxies/ let the proxies' users pass (o+x), nothing more,
        # and nothing in reach of another user is readable or writable by it.
        assert stat.S_IMODE(rundir.stat().st_mode) == 0o711
        assert stat.S_IMODE((rundir / "proxies").stat().st_mode) == 0o711
        assert not open_to_others(rundir), open_to_others(rundir)
        # SPE's own files, and the Multiplier's (its umask is the lab's), are its user's only
        for name in ("lab.json", "lab.toml", "pids.json", "multiplier.jsonl", "multiplier.rope.log", "multiplier.out",
                     "origin.out", "collector.out", "captures"):
            mode = stat.S_IMODE((rundir / name).stat().st_mode)
            assert mode & 0o077 == 0, (name, oct(mode))
        # each service's directory is its own (it writes there), out of reach of everyone else
        collector_dir = (rundir / "collector").stat()
        assert collector_dir.st_uid == pwd.getpwnam("proxy").pw_uid and stat.S_IMODE(collector_dir.st_mode) == 0o700
        lab.down()
    out = lab.output
    every_proxy_answered(rundir)
    # After the run: no file with any permission for others, no directory with more than o+x.
    assert not others_bits(rundir), others_bits(rundir)
    assert (rundir / "collector/access.log").read_text(), out


def test_a_run_shared_with_a_group_is_readable_by_it_and_no_one_else(runs):
    try:
        gid = grp.getgrnam(GROUP).gr_gid
    except KeyError:
        environment_skip(f"no group {GROUP!r} here")
    result = subprocess.run([sys.executable, "-m", "spe_tools.lab", "run", str(runs / "lab.toml"), "--runs-dir",
                             str(runs), "--share-group", GROUP], capture_output=True, text=True, env=ENV, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    (rundir,) = runs.glob("*-private")
    every_proxy_answered(rundir)
    assert (rundir / "report/report.html").exists()
    entries = tree(rundir)
    assert len(entries) > 30
    for path, info in entries:
        if stat.S_ISLNK(info.st_mode):
            continue
        mode = stat.S_IMODE(info.st_mode)
        where = f"{stat.filemode(info.st_mode)} {path.relative_to(rundir)}"
        assert info.st_gid == gid, where  # the group's, whoever wrote it (the proxies' users too)
        assert mode & 0o040, where  # the group reads it
        if stat.S_ISDIR(info.st_mode):
            assert mode & 0o010, where  # and enters every directory
    assert not others_bits(rundir), others_bits(rundir)


def test_a_share_group_that_cannot_be_used_is_named(runs):
    text = (runs / "lab.toml").read_text()
    (runs / "lab.toml").write_text('share_group = "no-such-group-spe"\n' + text)
    check = subprocess.run([sys.executable, "-m", "spe_tools.lab", "check", str(runs / "lab.toml")],
                           capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60)
    assert check.returncode == 1 and "share_group: there is no group 'no-such-group-spe'" in check.stderr
    up = subprocess.run([sys.executable, "-m", "spe_tools.lab", "up", str(runs / "lab.toml"), "--runs-dir", str(runs)],
                        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60)
    assert up.returncode == 1 and "no group 'no-such-group-spe'" in up.stderr, up.stderr
    (runs / "lab.toml").write_text('share_group = "no such"\n' + text)
    bad = subprocess.run([sys.executable, "-m", "spe_tools.lab", "check", str(runs / "lab.toml")],
                         capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and "share_group: 'no such' is not a group name" in bad.stderr
