"""`./spe repro` end to end on a real Debian proxy's real violation: nginx never sends Age on a reply
it reuses, so a copy served 2.5 s after it was fetched breaks RFC 9111 section 4 (rule "age"). A small
run shows it; the case written from that run, replayed against a fresh nginx behind the stand-in
origin, must show it again.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ENV, ROOT, multiplier_binary
from labsupport import lab_session
from parts import require

from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.start.running_lab import down
from spe_tools.process import ProcessGroup, alive, free_port

PATH = "/age?cc=max-age%3D600"


def unavailable() -> list[str]:
    return KINDS["nginx"].missing(multiplier_binary()) + collector.missing("spe")


@pytest.fixture(scope="module")
def nginx_run():
    """A run directory (its log and lab files) where nginx broke the age rule; yields (run, request id)."""
    if problems := unavailable():
        require(problems, "nginx behind the patched Collector")
    origin_port = free_port()

    def text(_workdir: Path) -> str:
        return ('name = "age"\n[collector]\nkind = "spe"\n[origin]\nkind = "none"\n[multiplier]\ntimeout_s = 20\n'
                '[[proxy]]\nname = "nginx"\nkind = "nginx"\ncache_mb = 16\n')

    def origin(group: ProcessGroup) -> None:
        group.start("origin", [sys.executable, str(ROOT / "tests/fixtures/cache_origin.py"), str(origin_port)],
                    port=origin_port)

    keep = Path(tempfile.mkdtemp(prefix="spe-repro-test-"))
    keep.chmod(0o755)  # the replayed proxy drops to its own user and must reach its directory
    run = keep / "run"
    run.mkdir(mode=0o755)
    with lab_session(text, origin) as lab:
        url = f"http://localhost:{origin_port}{PATH}"
        lab.conn.request("GET", url)
        lab.conn.getresponse().read()
        time.sleep(2.5)
        lab.conn.request("GET", url)
        lab.conn.getresponse().read()
        records = lab.records(PATH, 2)
        for name in ("multiplier.jsonl", "lab.json", "lab.toml"):
            shutil.copy(lab.rundir / name, run / name)
    second = max(records, key=lambda r: r["id"])
    rules = [v["rule"] for v in second["proxies"][0]["cache"]["violations"]]
    # nginx also writes its own Date on the copy it reuses ("date", judged by the Collector's X-SPE-Parent)
    assert sorted(rules) == ["age", "date"], f"the recorded run did not show nginx's violations: {second['proxies'][0]}"
    yield run, second["id"]
    shutil.rmtree(keep, ignore_errors=True)


def spe_repro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), "repro", *args], capture_output=True, text=True, timeout=300,
                          env=ENV)


def test_the_age_violation_is_written_as_a_case_and_reproduced(nginx_run):
    run, request = nginx_run
    done = spe_repro(str(run), "--proxy", "nginx", "--request", str(request))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reproduced: age (4, 5.1)" in done.stdout
    case = run / "repro" / f"{request}-nginx"
    assert (case / "case.json").exists() and (case / "README.txt").exists()
    replays = list((case / "replay").iterdir())
    assert len(replays) == 1 and (replays[0] / "multiplier.jsonl").exists()
    assert not (replays[0] / "pids.json").exists()  # every process of the replay stopped


def test_a_written_case_replays_on_its_own(nginx_run):
    run, request = nginx_run
    out = run.parent / "case"  # not under pytest's tmp_path: nginx's user could not enter it
    written = spe_repro(str(run), "--proxy", "nginx", "--request", str(request), "--out", str(out), "--no-replay")
    assert written.returncode == 0, written.stdout + written.stderr
    assert not (out / "replay").exists()
    replayed = spe_repro(str(out))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "reproduced: age (4, 5.1)" in replayed.stdout


def edited_case(nginx_run, name: str, edit) -> Path:
    """The run's case written to a directory of its own, then changed by `edit(case)`."""
    run, request = nginx_run
    out = run.parent / name
    assert spe_repro(str(run), "--proxy", "nginx", "--request", str(request), "--out", str(out),
                     "--no-replay").returncode == 0
    case = json.loads((out / "case.json").read_text())
    edit(case)
    (out / "case.json").write_text(json.dumps(case))
    return out


def test_a_rule_the_proxy_does_not_break_again_is_not_reproduced_with_exit_1(nginx_run):
    def expect_no_store(case: dict) -> None:  # nginx honours no-store
        case["expected"] = [{"rule": "no-store", "section": "5.2.2.5", "reason": "as if"}]

    out = edited_case(nginx_run, "edited", expect_no_store)
    done = spe_repro(str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not reproduced: no-store: the proxy's reply was judged OK (status 200), a reused copy, violations: " \
           "age (4, 5.1)" in done.stdout


def test_a_replay_stopped_by_sigterm_stops_every_process(nginx_run):
    def last_request_late(case: dict) -> None:  # the replay is still waiting to send it when stopped
        case["steps"][-1]["offset_s"] = 300

    out = edited_case(nginx_run, "stopped", last_request_late)
    proc = subprocess.Popen([str(ROOT / "spe"), "repro", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV)
    rundir = None
    try:
        end = time.monotonic() + 60
        while rundir is None and time.monotonic() < end and proc.poll() is None:
            up = list(out.glob("replay/*/lab.json"))  # written once the whole lab is up
            rundir = up[0].parent if up else None
            time.sleep(0.1)
        assert rundir is not None, proc.communicate(timeout=30)
        members = [p["pid"] for p in json.loads((rundir / "pids.json").read_text())["processes"]]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 2 and "SIGTERM" in stderr, stdout + stderr
        assert not (rundir / "pids.json").exists()
        assert {"origin", "collector", "nginx", "multiplier"} <= {p.stem for p in rundir.glob("*.out")}  # started
        assert not [pid for pid in members if alive(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if rundir is not None:
            down(rundir)  # whatever the replay left running


def test_a_request_without_a_violation_is_refused_with_exit_2(nginx_run):
    run, request = nginx_run
    done = spe_repro(str(run), "--proxy", "nginx", "--request", str(request - 1))
    assert done.returncode == 2
    assert f"proxy 'nginx' has no violation on request {request - 1}" in done.stderr
    assert f"request {request} (age, date)" in done.stderr
