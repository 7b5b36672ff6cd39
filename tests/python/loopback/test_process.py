"""The supervisor every lab process, test fixture and benchmark server goes through (spe_tools/process.py):
readiness by port or by a logged line, stopping by process group with a deadline, how a process ended."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from spe_tools.process import ProcessError, ProcessGroup, alive, start_time, stop_recorded

PYTHON = sys.executable

# A process that forks a helper which, on SIGTERM, leaves a mark and exits (as a proxy's helper
# flushing its state would), then waits.
WITH_HELPER = """
import subprocess, sys
helper = '''
import signal, sys, time
from pathlib import Path
def done(*_):
    Path(sys.argv[1]).write_text("TERM")
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("helper ready", flush=True)
time.sleep(600)
'''
subprocess.Popen([sys.executable, "-c", helper, sys.argv[1]])
import time
time.sleep(600)
"""


def start_with_helper(group: ProcessGroup, mark: Path):
    return group.start("main", [PYTHON, "-c", WITH_HELPER, str(mark)], ready_line="helper ready")


def test_stop_sends_sigterm_to_every_process_of_the_group(tmp_path):
    mark = tmp_path / "helper-got-term"
    with ProcessGroup(tmp_path) as group:
        child = start_with_helper(group, mark)
        assert len(child.members()) == 2
        assert child.stop() == -signal.SIGTERM
        assert child.ending == "stopped by SIGTERM"
    assert mark.read_text() == "TERM"  # the helper got a chance to finish, not only SIGKILL
    assert not child.members()


def test_what_a_draining_child_uses_is_stopped_only_once_it_has_exited(tmp_path):
    """The Multiplier, stopped first, still sends its last legs to the proxies while it drains: each process
    started before it gets the stop signal only after it exited (up to its drain_s), not half a second in."""
    draining = ("import signal, sys, time\n"
                "def drain(*_):\n    time.sleep(1.5)\n    print('drained', time.monotonic(), flush=True)\n"
                "    sys.exit(0)\n"
                "signal.signal(signal.SIGTERM, drain)\nprint('up', flush=True)\ntime.sleep(600)\n")
    used = ("import signal, sys, time\n"
            "def stop(*_):\n    print('stopped', time.monotonic(), flush=True)\n    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, stop)\nprint('up', flush=True)\ntime.sleep(600)\n")
    group = ProcessGroup(tmp_path)
    try:
        proxy = group.start("proxy", [PYTHON, "-c", used], ready_line="up")
        multiplier = group.start("multiplier", [PYTHON, "-c", draining], ready_line="up")
        multiplier.drain_s = 5.0
    finally:
        group.stop_all()
    drained = float(multiplier.log.read_text().split("drained ")[1].split()[0])
    stopped = float(proxy.log.read_text().split("stopped ")[1].split()[0])
    assert stopped >= drained, "the proxy was stopped while the Multiplier still drained"
    assert multiplier.ending == "exit 0 after SIGTERM" and proxy.ending == "exit 0 after SIGTERM"


def test_lab_down_gives_a_recorded_process_its_own_deadline(tmp_path):
    """`./spe lab down` has only pids.json: the Multiplier's entry carries its drain, so it is not killed while it
    finishes its last records (1.5 s here, past the default deadline given)."""
    slow = ("import signal, sys, time\n"
            "def drain(*_):\n    time.sleep(1.5)\n    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, drain)\nprint('up', flush=True)\ntime.sleep(600)\n")
    with ProcessGroup(tmp_path) as group:
        child = group.start("multiplier", [PYTHON, "-c", slow], ready_line="up")
        entry = {"name": "multiplier", "pid": child.pid, "start": start_time(child.pid),
                 "signal": int(signal.SIGTERM), "deadline_s": 10.0}
        assert stop_recorded([entry], deadline_s=0.5) == ["multiplier"]
        assert child.popen.wait(timeout=5) == 0  # it exited by itself, not by SIGKILL


def test_a_process_that_ignores_sigterm_is_killed_at_the_deadline_and_says_so(tmp_path):
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); " \
             "time.sleep(600)"
    with ProcessGroup(tmp_path) as group:
        child = group.start("stubborn", [PYTHON, "-c", script], ready_line="up")
        assert child.stop(deadline_s=0.5) == -signal.SIGKILL
        assert child.ending == "killed by SIGKILL after the 0.5 s deadline"
        assert not child.alive() and not child.members()


def test_ending_of_a_process_that_exited_by_itself(tmp_path):
    with ProcessGroup(tmp_path) as group:
        child = group.start("brief", [PYTHON, "-c", "import sys; sys.exit(3)"], ready=False)
        child.popen.wait(timeout=30)
        assert child.stop() == 3
        assert child.ending == "exit 3 before it was stopped"


def test_readiness_by_a_line_that_never_comes_fails_with_the_log(tmp_path):
    script = "import time; print('starting', flush=True); time.sleep(600)"
    with ProcessGroup(tmp_path) as group, pytest.raises(ProcessError, match=r"(?s)did not log 'ready'.*starting"):
        group.start("silent", [PYTHON, "-c", script], ready_line="ready", deadline_s=0.5)
    assert not group.children[0].alive()


def test_stop_recorded_stops_the_whole_group_from_its_pid_and_start_time(tmp_path):
    """What `./spe lab down` does from another shell: it has only pids.json."""
    mark = tmp_path / "helper-got-term"
    with ProcessGroup(tmp_path) as group:
        child = start_with_helper(group, mark)
        entry = {"name": "main", "pid": child.pid, "start": start_time(child.pid), "signal": int(signal.SIGTERM)}
        assert stop_recorded([{**entry, "start": entry["start"] + 1}]) == []  # another process by that PID
        assert stop_recorded([entry]) == ["main"]
        assert not alive(child.pid) and not child.members()
    assert mark.read_text() == "TERM"
