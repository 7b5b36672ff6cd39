"""A lab with two Multipliers ([[multiplier]], two client groups) sharing the patched Collector, a Squid and the
no-cache dummy. Each Multiplier writes its own records, named after it; each proxy's copy of an unsafe request is
answered by the replay port of the Multiplier whose client sent it (the Collector routes it by the tag's prefix:
a copy sent to the other Multiplier would be refused, REPLAY_REFUSED); `./spe report RUN` is one evaluation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import multiplier_binary
from labsupport import scratch_dir
from parts import require

from analysis.report import build_report
from analysis.sections import per_multiplier
from spe_tools import collector
from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.watch import run_loop
from spe_tools.logs import main as logs_main

# Each client group: PUTs (the patched Collector keeps no copy of one, so each proxy's copy reaches a replay port)
# and GETs, on paths of its own (its run directory's name), through its own Multiplier.
CLIENT = """\
import http.client, os, sys
host, port = sys.argv[1].rsplit(":", 1)
origin, group = sys.argv[2], os.path.basename(sys.argv[3])
conn = http.client.HTTPConnection(host, int(port), timeout=20)
for i in range(8):
    for method, path in (("PUT", "/unsafe/%s-%d?status=201" % (group, i)), ("GET", "/obj/%s-%d?size=300" % (group, i))):
        conn.request(method, origin + path, body=b"put body %d" % i if method == "PUT" else None)
        reply = conn.getresponse()
        reply.read()
        assert reply.status == (201 if method == "PUT" else 200), (method, path, reply.status)
print("done", group, flush=True)
"""

LAB = f"""name = "groups"
[[multiplier]]
name = "east"
[[multiplier]]
name = "west"
[origin]
think_mean_ms = 0
[workload]
kind = "command"
command = {json.dumps([sys.executable, "-c", CLIENT, "{proxy}", "{origin_url}", "{rundir}"])}
[[proxy]]
name = "squid"
kind = "squid"
[[proxy]]
name = "dummy"
kind = "dummy"
"""


@pytest.fixture
def runs():
    require(collector.missing("spe"), "the patched Collector")
    multiplier_binary()  # skips when it is not built
    with scratch_dir("spe-multipliers-") as path:
        yield path


def records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_two_client_groups_each_measured_by_its_own_multiplier_in_one_evaluation(runs):
    rc, rundir = run_loop.run_lab(parse_lab(LAB), 60, runs)
    assert rc == 0
    east, west = records(rundir / "multiplier.jsonl"), records(rundir / "multipliers/west/multiplier.jsonl")
    assert east and west
    assert {r["multiplier"] for r in east} == {"east"} and {r["multiplier"] for r in west} == {"west"}
    assert "done west" in (rundir / "multipliers/west/workload.out").read_text()
    puts = [r for r in east + west if r["method"] == "PUT"]
    assert len(puts) == 16
    wrong = [(r["multiplier"], r["id"], p["name"], p["status"], p["result"], p.get("error_detail"))
             for r in puts for p in r["proxies"] if p["result"] != "OK" or p["status"] != 201]
    assert not wrong  # every copy answered from its own client's reply

    rep = build_report(rundir)
    assert rep.requests == len(east) + len(west)
    assert list(per_multiplier.of(rep)) == ["east", "west"]
    rows = {row["name"]: row for row in rep.rows}
    assert rows["squid"]["hit_ratio"] is not None  # the one shared Collector's usage, read once
    assert rows["squid"]["collector_requests"] <= rows["squid"]["requests"]

    assert logs_main(["compact", str(rundir)]) == 0  # every Multiplier's log, for the report on Parquet
    assert (rundir / "multipliers/west/parquet").is_dir()
    assert build_report(rundir).rows == rep.rows
