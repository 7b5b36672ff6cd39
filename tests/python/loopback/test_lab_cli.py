"""./spe lab up/run/down/check end to end: the run directory, clear errors, and no process left (by PID)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import lab_cli, scratch_dir
from parts import require

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import load_lab, parse_lab
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.bring_up import bring_up
from spe_tools.lab.start.running_lab import down
from spe_tools.process import Child, ProcessGroup, alive, kill_session, session_members, stop_recorded

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SMALL = """
name = "cli"
[collector]
kind = "squid"
[workload]
kind = "load"
duration_s = 3
rate = 10
clients = 2
[[proxy]]
name = "sq"
kind = "squid"
cache_mb = 16
[[proxy]]
name = "dummy"
kind = "dummy"
"""


@pytest.fixture
def runs():
    with scratch_dir("spe-lab-cli-") as path:  # Squid drops to user proxy
        yield path


def write_lab(runs: Path, text: str, name: str = "lab.toml") -> Path:
    path = runs / name
    path.write_text(text)
    return path


def wait_for(predicate, deadline_s: float = 60, what: str = "condition"):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def lab_pids(rundir: Path) -> set[int]:
    """Every process of every component that pids.json lists, forked helpers included."""
    try:
        state = json.loads((rundir / "pids.json").read_text())
    except (OSError, ValueError):
        return set()
    pids = set()
    for entry in state["processes"]:
        pids |= {entry["pid"], *session_members(entry["pid"])}
    return pids


def needs(*kinds: str) -> None:
    multiplier_binary()
    for kind in kinds:
        require(KINDS[kind].missing(), f"the proxy kind {kind}")


def start_up(runs: Path) -> subprocess.Popen:
    """`./spe lab up` of the SMALL lab, in a session of its own, its output captured."""
    lab = write_lab(runs, SMALL)
    return subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "up", str(lab), "--runs-dir", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV, cwd=ROOT,
                            start_new_session=True)


def stop_lab_process(process: subprocess.Popen, runs: Path) -> None:
    """However a test ends: the lab process stops its components (SIGTERM); whatever it could not
    stop, or left behind if it was killed, is stopped by PID from pids.json, as `./spe lab down` does."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for rundir in runs.glob("*-cli"):
        down(rundir)


def wait_for_run_dir(runs: Path) -> Path:
    """The run directory, once the lab is up (lab.json is written last)."""
    return wait_for(lambda: next((p for p in runs.glob("*-cli") if (p / "lab.json").exists()), None),
                    what="lab.json")


def test_up_then_down_from_another_process(runs):
    needs("squid")
    up = start_up(runs)
    try:
        rundir = wait_for_run_dir(runs)
        topo = json.loads((rundir / "lab.json").read_text())
        pids = wait_for(lambda: lab_pids(rundir) if len(lab_pids(rundir)) >= 5 else None, what="pids")
        # The Multiplier answers through the Collector.
        with socket.create_connection(("127.0.0.1", topo["multiplier"]["port"]), timeout=10) as s:
            s.sendall(f"GET http://localhost:{topo['origin']['port']}/obj/1?think=0 HTTP/1.1\r\nHost: x\r\n"
                      "Connection: close\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 200")
        time.sleep(2.5)  # a status line or two
        down = lab_cli("down", str(rundir))
        assert down.returncode == 0, down.stderr
        assert "stopped lab" in down.stdout
        assert up.wait(timeout=60) == 0
    finally:
        stop_lab_process(up, runs)
    out = up.stdout.read()
    assert " | requests " in out and "spe lab: stopped; logs in" in out
    # how each component ended: the Multiplier flushed its log and exited 0 on SIGTERM
    assert re.search(r"spe lab: how they ended: .*multiplier exit 0 after SIGTERM", out), out
    left = [p for p in pids if alive(p)]
    assert not left, f"processes survived down: {left}"
    assert not (rundir / "pids.json").exists()
    assert lab_cli("down", str(rundir)).stdout.strip() == "spe lab down: nothing was running"


def test_run_keeps_every_log_and_leaves_nothing_running(runs):
    needs("squid")
    lab = write_lab(runs, SMALL)
    run = subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "run", str(lab), "--runs-dir", str(runs),
                            "--duration", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=ENV, cwd=ROOT, start_new_session=True)
    seen: set[int] = set()
    try:
        while run.poll() is None:  # collect every PID the lab lists while it runs
            for rundir in runs.glob("*-cli"):
                seen |= lab_pids(rundir)
            time.sleep(0.2)
            if len(seen) > 50:
                break
        assert run.wait(timeout=120) == 0, run.stdout.read()
    finally:
        stop_lab_process(run, runs)
    out = run.stdout.read()
    (rundir,) = runs.glob("*-cli")
    assert len(seen) >= 5
    assert not [p for p in seen if alive(p)], "processes survived the run"
    for name in ("lab.toml", "lab.json", "multiplier.jsonl", "multiplier.rope.log", "multiplier.out", "origin.out",
                 "collector.out", "collector/access.log", "collector/cache.log", "collector/squid.conf",
                 "proxies/sq/squid.conf", "proxies/sq/access.log", "proxies/sq/cache.log", "sq.out", "dummy.out",
                 "workload.out", "workload.json", "report/report.html"):
        assert (rundir / name).exists(), name
    assert not (rundir / "pids.json").exists()
    records = (rundir / "multiplier.jsonl").read_text().splitlines()
    assert len(records) >= 10
    summary = json.loads((rundir / "workload.json").read_text())  # the load client's own account
    assert summary["completed"] == len(records) and summary["errors"] == 0
    assert "Collector (direct)" in out and "report.html" in out


def test_check_accepts_a_good_lab(runs):
    needs("squid")
    result = lab_cli("check", str(write_lab(runs, SMALL)))
    assert result.returncode == 0, result.stderr
    assert "lab 'cli' is ready" in result.stdout and "sq (squid), dummy (dummy)" in result.stdout


def test_unknown_kind_is_named_and_nothing_starts(runs):
    lab = write_lab(runs, SMALL.replace('kind = "dummy"', 'kind = "polipo"'))
    for command in ("check", "up", "run"):
        result = lab_cli(command, str(lab), *(["--runs-dir", str(runs)] if command != "check" else []))
        assert result.returncode == 2
        assert "[[proxy]] 'dummy'.kind: unknown kind 'polipo'" in result.stderr
    assert not list(runs.glob("*-cli")), "a bad file must not create a run directory"


def test_port_in_use_is_a_clash(runs):
    needs("squid")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        lab = write_lab(runs, SMALL.replace('cache_mb = 16', f'cache_mb = 16\nport = {port}'))
        check = lab_cli("check", str(lab))
        assert check.returncode == 1
        assert f"port clash: proxy 'sq' port {port} is already in use on this machine" in check.stderr
        up = lab_cli("up", str(lab), "--runs-dir", str(runs))
        assert up.returncode == 1 and f"port {port} is already in use" in up.stderr
    (rundir,) = runs.glob("*-cli")
    assert not (rundir / "pids.json").exists() and not (rundir / "origin.out").exists()


def test_a_proxy_that_fails_to_start_is_named_and_everything_stops(runs, monkeypatch):
    needs("squid")
    squid = type(KINDS["squid"])
    original = squid.render

    def broken(self, ctx):
        files = original(self, ctx)
        with open(files[0], "a") as f:
            f.write("this_is_not_a_directive on\n")
        return files

    monkeypatch.setattr(squid, "render", broken)
    lab = parse_lab(SMALL)
    rundir = runs / "run"
    rundir.mkdir()
    rundir.chmod(0o755)
    group = ProcessGroup(rundir)
    pids: set[int] = set()
    try:
        with pytest.raises(LabError, match=r"proxy 'sq' \(squid\) failed to start: sq exited with"):
            bring_up(lab, rundir, group, multiplier=multiplier_binary(), say=lambda _: None)
        pids = lab_pids(rundir)
        assert len(pids) >= 3  # origin, Collector and the failed Squid were recorded
    finally:
        for child in reversed(group.children):
            child.stop()
    assert not [p for p in pids if alive(p)]


def component_pid(rundir: Path, name: str) -> int:
    state = json.loads((rundir / "pids.json").read_text())
    return next(e["pid"] for e in state["processes"] if e["name"] == name)


def get_through(port: int, url: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return b"".join(iter(lambda: s.recv(65536), b""))


def test_a_dead_proxy_is_reported_and_measured_a_dead_collector_stops_the_lab(runs):
    needs("squid")
    up = start_up(runs)
    pids: set[int] = set()
    try:
        rundir = wait_for_run_dir(runs)
        topo = json.loads((rundir / "lab.json").read_text())
        port, origin = topo["multiplier"]["port"], f"http://localhost:{topo['origin']['port']}"
        pids = lab_pids(rundir)
        os.kill(component_pid(rundir, "sq"), signal.SIGKILL)  # a proxy under test crashes
        time.sleep(2.5)  # the lab notices within a second and goes on
        assert up.poll() is None
        assert get_through(port, f"{origin}/obj/after-crash?think=0").startswith(b"HTTP/1.1 200")
        # The fan-out follows the client's reply: let it finish before the Collector goes.
        wait_for(lambda: (rundir / "multiplier.jsonl").exists() and (rundir / "multiplier.jsonl").read_text(),
                 what="the request's record")
        os.kill(component_pid(rundir, "collector"), signal.SIGKILL)
        assert up.wait(timeout=60) == 1
    finally:
        stop_lab_process(up, runs)
    out = up.stdout.read()
    assert "proxy 'sq' stopped unexpectedly" in out and "sq ok 0 none 1 DOWN" in out
    assert "collector stopped unexpectedly" in out and "collector/cache.log" in out
    # how each ended, as the supervisor saw it
    assert re.search(r"proxy 'sq' stopped unexpectedly after \d+ s \(killed by SIGKILL\)", out), out
    assert re.search(r"collector stopped unexpectedly after \d+ s \(collector killed by SIGKILL\)", out), out
    record = json.loads((rundir / "multiplier.jsonl").read_text().splitlines()[0])
    assert {p["name"]: p["result"] for p in record["proxies"]} == {"sq": "NO_RESPONSE", "dummy": "OK"}
    assert not [p for p in pids if alive(p)], "processes survived the lab"


FAILING = """
name = "cli"
[collector]
kind = "squid"
[[proxy]]
name = "helper"
kind = "dummy"
[[proxy]]
name = "gone"
kind = "squid"
[[proxy]]
name = "late"
kind = "dummy"
port = {port}
"""


def with_forked_helper(monkeypatch) -> None:
    """Each dummy proxy forks a helper that outlives its main process's SIGTERM (as a proxy's own helper
    may): stopping only the main PID leaves it running."""
    dummy = type(KINDS["dummy"])
    original = dummy.argv
    monkeypatch.setattr(dummy, "argv", lambda self, ctx: ["/bin/sh", "-c", 'sleep 600 & exec "$@"', "sh",
                                                           *original(self, ctx)])


@pytest.fixture
def sessions():
    """Session ids of the lab components a test starts in this process; whatever is left in them is
    killed when the test ends, however it ends."""
    sids: set[int] = set()
    yield sids
    for sid in sids:
        kill_session(sid)


def failing_bring_up(runs: Path, monkeypatch, capsys, sessions: set[int]) -> tuple[int, Path, str]:
    """Run a lab whose last proxy cannot bind its port (taken, not listening: no clash at check time),
    the lab adapted on the way as `./spe demo` does (proxy 'gone' left out). Returns the exit code, the
    run directory and stderr; `sessions` gets every component's session id."""
    from spe_tools.lab.start import bring_up as runner
    from spe_tools.lab.watch.run_loop import run_lab

    original = ProcessGroup.start

    def start(group, name, argv, **kw):
        child = original(group, name, argv, **kw)
        sessions.add(child.pid)
        return child

    monkeypatch.setattr(ProcessGroup, "start", start)
    monkeypatch.setattr(runner, "MULTIPLIER", multiplier_binary())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        lab = load_lab(write_lab(runs, FAILING.format(port=taken.getsockname()[1])))
        adapted = replace(lab, proxies=tuple(p for p in lab.proxies if p.name != "gone"))
        rc, rundir = run_lab(adapted, None, runs)
    return rc, rundir, capsys.readouterr().err


def test_a_failed_bring_up_stops_forked_helpers_and_records_the_lab_that_ran(runs, monkeypatch, capsys, sessions):
    needs("squid")
    with_forked_helper(monkeypatch)
    rc, rundir, err = failing_bring_up(runs, monkeypatch, capsys, sessions)
    assert rc == 1 and "proxy 'late' (dummy) failed to start" in err
    assert len(sessions) >= 3  # origin, Collector, helper, late
    left = {sid: session_members(sid) for sid in sessions if session_members(sid)}
    assert not left, f"processes survived the failed bring-up: {left}"
    assert not (rundir / "pids.json").exists()  # removed: nothing is left to stop
    # The run directory describes the lab that ran, not the file it was adapted from.
    assert [p.name for p in load_lab(rundir / "lab.toml").proxies] == ["helper", "late"]


def test_a_process_the_lab_could_not_stop_stays_in_pids_json_for_down(runs, monkeypatch, capsys, sessions):
    needs("squid")
    with_forked_helper(monkeypatch)
    stop, signal_stop = Child.stop, Child.signal_stop  # a process that does not stop when told
    monkeypatch.setattr(Child, "stop", lambda child, **kw: None if child.name == "helper" else stop(child, **kw))
    monkeypatch.setattr(Child, "signal_stop",
                        lambda child, *a: None if child.name == "helper" else signal_stop(child, *a))
    rc, rundir, err = failing_bring_up(runs, monkeypatch, capsys, sessions)
    assert rc == 1
    state = json.loads((rundir / "pids.json").read_text())  # kept: the helper is still running
    helper = next(e["pid"] for e in state["processes"] if e["name"] == "helper")
    assert len(session_members(helper)) == 2  # the dummy and its forked sleep
    # What `./spe lab down` does once the lab process is gone (here the runner is this test: not signalled).
    assert "helper" in stop_recorded(list(reversed(state["processes"])))
    assert not session_members(helper), "pids.json did not lead to every process of the helper"


def test_a_failed_workload_fails_the_run(runs):
    needs("squid")
    text = SMALL.replace("clients = 2", 'clients = 2\nargs = ["--max-conns", "many"]')
    result = lab_cli("run", str(write_lab(runs, text)), "--runs-dir", str(runs), "--duration", "3")
    (rundir,) = runs.glob("*-cli")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the workload failed with exit code 2" in result.stderr
    assert "--max-conns: invalid int value: 'many'" in result.stderr  # its own error, named
    assert not (rundir / "report").exists()
