"""`./spe repro`'s arguments and exit codes, on a hand-made run (no replay: --no-replay or errors)."""

from __future__ import annotations

import pytest
from reprosupport import ORIGIN_1, T0, leg, make_run, record

from spe_tools.repro.cli import main
from spe_tools.rundir.layout import RunDir

AGE = {"rule": "age", "section": "4", "reason": "r"}


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", [record(1, T0, origin=ORIGIN_1), record(2, T0 + 3, legs=[leg("nginx", [AGE])])])


def test_no_replay_writes_the_case_says_where_and_exits_0(run, capsys):
    assert main([str(run), "--proxy", "nginx", "--request", "2", "--no-replay"]) == 0
    assert (RunDir(run).repro(2, "nginx") / "case.json").exists()
    assert f"nginx's age (4) on request 2, 2 request(s): {run}/repro/2-nginx" in capsys.readouterr().out


def test_a_case_error_is_exit_2_with_the_reason(run, capsys):
    assert main([str(run), "--proxy", "nginx", "--request", "1"]) == 2
    assert "spe repro: error: proxy 'nginx' has no violation on request 1" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--proxy", "nginx"], "both --proxy NAME and --request ID"),
    ([], "has no case.json"),
    (["--request", "x"], "invalid int value"),
])
def test_usage_errors_exit_2(run, capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        main([str(run), *args])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_out_and_no_replay_belong_to_writing(run, capsys):
    assert main([str(run), "--proxy", "nginx", "--request", "2", "--no-replay"]) == 0
    with pytest.raises(SystemExit):
        main([str(RunDir(run).repro(2, "nginx")), "--no-replay"])
    assert "--out and --no-replay go with" in capsys.readouterr().err
