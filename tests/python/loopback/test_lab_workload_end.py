"""How a lab judges its workload's end (spe_tools/lab/start_workload.check_workload), with real child processes:
a client that exits 1 because some requests got no reply keeps the run (the lab says how many failed), while any
other failure of the workload fails the run."""

from __future__ import annotations

import json
import sys

import pytest

from spe_tools.lab.errors import LabError
from spe_tools.lab.start.workload import check_workload
from spe_tools.process import ProcessGroup
from spe_tools.rundir.layout import RunDir

FAILED_SOME = {"sent": 10, "errors": 3, "lost": 1, "error_kinds": {"timeout": 3}}


def ended(rundir, code: int, summary: dict | None):
    if summary is not None:
        RunDir(rundir).workload_json.write_text(json.dumps(summary))
    group = ProcessGroup(rundir)
    child = group.start("workload", [sys.executable, "-c", f"import sys; sys.exit({code})"], ready=False)
    child.popen.wait(timeout=30)
    return child


def test_requests_without_a_reply_keep_the_run_and_are_said(tmp_path, capsys):
    check_workload(ended(tmp_path, 1, FAILED_SOME), tmp_path)
    assert "the workload's 4 of 10 requests got no reply (timeout 3; 1 still out at the end)" in capsys.readouterr().out


@pytest.mark.parametrize(("code", "summary"), [(1, None), (1, {"sent": 10, "errors": 0, "lost": 0}), (2, FAILED_SOME)])
def test_any_other_failure_fails_the_run(tmp_path, code, summary):
    with pytest.raises(LabError, match=f"the workload failed with exit code {code}"):
        check_workload(ended(tmp_path, code, summary), tmp_path)
