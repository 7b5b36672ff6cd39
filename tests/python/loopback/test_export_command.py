"""`./spe export` through the front door (the `spe` script dispatches it like every command): its --help, a run
written as a HAR, an error as one line and exit 2; and what it writes is a HAR the other side of SPE takes: the HAR
origin serves it (`./spe origin --har`) and the HAR replay sends its requests (`./spe replay`), each reply with the
status the Collector gave in the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ENV, ROOT
from exportsupport import make_export_run
from httpclient import Connection

from spe_tools.process import ProcessGroup, free_port


def spe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), *args], capture_output=True, text=True, timeout=120, env=ENV)


def test_the_front_door_has_export_with_its_help_and_its_errors(tmp_path):
    helped = spe("export", "--help")
    assert helped.returncode == 0 and "usage: ./spe export" in helped.stdout and "--request ID" in helped.stdout
    assert "export RUN --har OUT.har" in spe("--help").stdout
    failed = spe("export", str(tmp_path / "none"), "--har", str(tmp_path / "x.har"))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert failed.stderr == f"spe export: error: no run directory with a multiplier.jsonl at {tmp_path / 'none'}\n"


def test_an_exported_run_is_served_and_replayed_again(tmp_path: Path):
    run, har = make_export_run(tmp_path / "run"), tmp_path / "run.har"
    wrote = spe("export", str(run), "--har", str(har))
    assert wrote.returncode == 0 and "5 entries" in wrote.stdout, wrote.stderr
    port = free_port()
    with ProcessGroup(tmp_path) as group:
        group.start("har-origin", [sys.executable, "-m", "spe_tools.workload.har_origin", "--listen",
                                   f"127.0.0.1:{port}", "--har", str(har)], port=port, env=ENV)
        replayed = spe("replay", str(har), "--via", f"127.0.0.1:{port}", "--origin", f"127.0.0.1:{port}",
                       "--speed", "10", "--json", str(tmp_path / "replay.json"))
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        with Connection(port) as c:
            served = json.loads(c.get(f"http://127.0.0.1:{port}/_stats").body)
    summary = json.loads((tmp_path / "replay.json").read_text())
    # the request the Collector did not answer (status 0) is not replayed; the other four get the run's status
    assert summary["refused"] == {"no response recorded (the browser blocked or cancelled it)": 1}
    assert summary["sent"] == summary["completed"] == 4 and summary["errors"] == 0
    assert summary["status_matched"] == summary["status_compared"] == 4, summary
    assert served["not_in_har"] == 0 and served["by_status"] == {"200": 3, "201": 1}
