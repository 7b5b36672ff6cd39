"""In SPE `--proxy` names a proxy under test (the Multiplier's NAME=HOST:PORT, ./spe repro's and ./spe export's
NAME); the proxy a workload sends through is `--via HOST:PORT`. A workload given --proxy says so (a usage error,
exit 2), never takes it for the other meaning."""

from __future__ import annotations

import pytest

from spe_tools.workload import browse, load, replay

PARSERS = {"load": (load.build_parser, ["--origin", "127.0.0.1:2", "--rate", "1", "--duration", "1s"]),
           "replay": (replay.build_parser, ["access.log"]),
           "browse": (browse.build_parser, ["http://localhost/"])}


@pytest.mark.parametrize("command", PARSERS)
def test_a_workload_sends_via_its_proxy_and_refuses_proxy_with_the_word_to_use(command, capsys):
    build, rest = PARSERS[command]
    args = build().parse_args([*rest, "--via", "127.0.0.1:3128"])
    assert args.proxy in (("127.0.0.1", 3128), "127.0.0.1:3128")
    with pytest.raises(SystemExit) as refused:
        build().parse_args([*rest, "--proxy", "127.0.0.1:3128"])
    assert refused.value.code == 2 and "the proxy a client sends through is --via HOST:PORT" in capsys.readouterr().err
