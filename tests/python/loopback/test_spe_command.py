"""The front door's conventions (./spe itself, before any Python command runs): `--version` prints the checkout's
commit, a command used wrongly exits 2 with what was wrong, before it installs or builds anything, and a workload
client whose requests got no reply exits 1, saying how many."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from spe_tools.process import ProcessGroup, free_port
from spe_tools.version import describe


def spe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), *args], capture_output=True, text=True, timeout=60)


def test_version_prints_the_commit():
    done = spe("--version")
    assert done.returncode == 0 and done.stdout == f"spe {describe()}\n"


@pytest.mark.parametrize(("args", "said"), [
    (("setup", "--fast"), "setup takes no arguments, got '--fast'"),
    (("lint", "all"), "lint takes no arguments, got 'all'"),
    (("build", "--debug"), "build: unknown argument '--debug'"),
    (("test", "--layr", "unit"), "test: unknown argument '--layr'"),
    (("test", "--layer", "units"), "no test layer 'units'"),
    (("bench",), "usage: ./spe bench NAME"),
    (("nope",), "unknown command 'nope'"),
    (("--version", "x"), "--version takes no arguments"),
])
def test_a_usage_error_exits_2_and_says_what(args, said):
    done = spe(*args)
    assert done.returncode == 2, (args, done.stderr)
    assert said in done.stderr


@pytest.mark.parametrize("command", [("demo",), ("origin",), ("origin", "--har", "x.har"), ("load",), ("replay",),
                                     ("browse",), ("report",), ("logs",), ("lab",), ("ca",), ("repro",),
                                     ("export",), ("bench", "soak")])
def test_help_names_the_command_as_typed(command):
    """`./spe X --help` says `./spe X`, not the module behind it, and prints at once (no set-up first)."""
    done = spe(*command, "--help")
    name = " ".join(c for c in command if not c.startswith("-") and not c.endswith(".har"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: ./spe {name} "), done.stdout[:200]
    assert "python -m" not in done.stdout and "building" not in done.stderr


def test_a_load_whose_requests_all_fail_exits_1_and_says_how_many(tmp_path):
    """A client that got no reply is a failed run (exit 1), the summary still printed and written."""
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens there: every connection is refused
    summary = tmp_path / "load.json"
    done = spe("load", "--via", nobody, "--origin", "127.0.0.1:9", "--rate", "20", "--duration", "1s",
               "--timeout", "2s", "--seed", "1", "--json", str(summary))
    assert done.returncode == 1, done.stdout + done.stderr
    sent = json.loads(summary.read_text())["sent"]
    assert sent > 0 and f"load: error: {sent} of {sent} requests got no reply (" in done.stderr


def test_a_replay_whose_requests_all_fail_exits_1(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("".join(f"{1700000000 + i}.000 5 127.0.0.1 TCP_MISS/200 100 GET http://127.0.0.1:9/x{i} - "
                           "HIER_DIRECT/127.0.0.1 text/plain\n" for i in range(3)))
    done = spe("replay", str(log), "--via", f"127.0.0.1:{free_port()}", "--timeout", "2s")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "replay: error: 3 of 3 requests got no reply (" in done.stderr


def test_a_load_that_got_every_reply_exits_0(tmp_path):
    with ProcessGroup(tmp_path) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "0", "--think-sd-ms", "0"], port=port,
                    env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        done = spe("load", "--origin", f"127.0.0.1:{port}", "--rate", "20", "--duration", "1s", "--seed", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 errors" in done.stdout and "error:" not in done.stderr


def test_a_reply_the_origin_cuts_on_purpose_is_no_failure(tmp_path):
    """The conformance case cut-once has the origin end its first fetch of a URL halfway through the body (a
    cache must not keep it). The client's truncated reply is what the case asks for, counted apart, not a
    request that failed: before, every ./spe demo's load ended in exit 1 with a warning about it."""
    summary = tmp_path / "load.json"
    with ProcessGroup(tmp_path) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "0", "--think-sd-ms", "0"], port=port,
                    env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        # Conformance sequences only, enough for the first round's (one per case, cut-once among them).
        done = spe("load", "--origin", f"127.0.0.1:{port}", "--rate", "100", "--duration", "3s", "--seed", "1",
                   "--conformance", "1", "--ims", "0", "--reload", "0", "--head", "0", "--post", "0", "--page", "0",
                   "--seq", "0", "--hit-ratio", "0", "--json", str(summary))
    result = json.loads(summary.read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert result["errors"] == 0 and result["cut_on_purpose"] >= 1
    assert f"{result['cut_on_purpose']} cut by the origin on purpose" in done.stdout
