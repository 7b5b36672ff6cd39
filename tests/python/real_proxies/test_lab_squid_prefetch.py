"""Lab kind "squid-prefetch": Squid with its link-prefetching agent, beside a plain Squid as its twin, under
browsing users. The report shows, from the Collector's ports alone, that the prefetcher prefetched, that some
of its prefetches were used (precision > 0) ahead of the user (a measured lead time), and what it gained over
its twin; the agent is started with its Squid, listed in pids.json, and stopped with it; an agent that dies
is reported as such while its Squid runs on."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import multiplier_binary
from parts import require

from spe_tools import collector
from spe_tools.lab import cli
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.watch import run_loop

LAB = """
name = "prefetch"
[origin]
think_mean_ms = 150
think_sd_ms = 20
[workload]
kind = "load"
rate = 0                # no robots: users only
users = 4
think_s = 1.5           # time for the agent to act between a page and the next
session_pages = 6
[[proxy]]
name = "linkpf"
kind = "squid-prefetch"
cache_mb = 32
prefetch_depth = 1
prefetch_rate = 200
twin_of = "plain"
[[proxy]]
name = "plain"
kind = "squid"
cache_mb = 32
"""


@pytest.fixture
def runs():
    require(collector.missing("spe"), "the patched Collector")
    require(KINDS["squid"].missing(), "Debian's Squid")
    multiplier_binary()  # skips when it is not built
    directory = Path(tempfile.mkdtemp(prefix="spe-prefetch-"))
    directory.chmod(0o755)  # Squid runs as user proxy when the tests run as root
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_the_link_prefetcher_prefetches_ahead_of_its_users_and_beats_its_twin(runs):
    rc, rundir = run_loop.run_lab(parse_lab(LAB), 30, runs)
    assert rc == 0 and cli.write_report(rundir) == 0
    assert "squid-prefetch: following" in (rundir / "linkpf.agent.out").read_text()
    fetched = [json.loads(line) for line in (rundir / "proxies/linkpf/prefetch.jsonl").read_text().splitlines()]
    assert any(f["depth"] == 1 and f["page"] for f in fetched)  # linked pages, one click ahead
    assert all(f["status"] == 200 for f in fetched), [f for f in fetched if f["status"] != 200][:3]
    proxies = {p["name"]: p for p in json.loads((rundir / "report/summary.json").read_text())["proxies"]}
    pf, plain = proxies["linkpf"], proxies["plain"]
    # The agent's log is evidence only: SPE counts prefetches on the Collector port, and finds at least the
    # agent's fetches that missed its Squid (its pages' second fetch, and repeats, are hits there).
    assert 0 < pf["prefetch_requests"] <= len(fetched) == pf["prefetch_agent_fetches"]
    assert pf["prefetch_precision"] > 0 and pf["prefetch_lead_ms_p50"] is not None
    assert pf["prefetch_bytes"] > 0 and pf["prefetch_wasted_bytes"] < pf["prefetch_bytes"]
    assert plain["prefetch_requests"] == 0
    assert pf["twin_of"] == "plain" and pf["twin_gain_requests"] > 0
    assert pf["twin_gain_ms_mean"] > 0  # a user's page or image that was prefetched comes from the cache
    assert pf["hit_ratio"] > plain["hit_ratio"]  # the users' requests it answered without the Collector
    assert pf["rel_bandwidth_received"] > plain["rel_bandwidth_received"]  # and what that cost
    assert not (rundir / "pids.json").exists()  # everything, the agent too, was stopped


KILL_THE_AGENT = """\
import json, os, signal, sys, time
pids = json.load(open(os.path.join(sys.argv[1], "pids.json")))["processes"]
os.kill(next(p["pid"] for p in pids if p["name"] == "linkpf.agent"), signal.SIGKILL)
time.sleep(4)
"""


def test_an_agent_that_dies_is_reported_and_its_squid_runs_on(runs, capsys):
    workload = ('[workload]\nkind = "command"\ncommand = ' + json.dumps([sys.executable, "-c", KILL_THE_AGENT,
                                                                       "{rundir}"]) + "\n")
    lab = LAB[:LAB.index("[workload]")] + workload + LAB[LAB.index("[[proxy]]"):]
    rc, rundir = run_loop.run_lab(parse_lab(lab), 20, runs)
    out = capsys.readouterr().out
    assert rc == 0
    assert "spe lab: 'linkpf.agent' stopped unexpectedly" in out and "its proxy runs on without it" in out
    assert "proxy 'linkpf' stopped" not in out
