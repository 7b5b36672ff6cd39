"""The no-cache baseline never differs: behind the patched Collector, every request of the dummy (the
Multiplier with no cache) caused by a client request is answered from the client's own fetch, on every kind
of traffic the conformance mix sends: statuses a cache may or may not store (201 to 599, fresh, stale on
arrival, heuristic), Range requests, conditional requests, no-store requests, HEADs that update a stored
reply, invalidations naming Location and Content-Location, Vary: *, a fast or slow Date, an origin that
cuts its first reply short and one whose every fetch is new.

One `./spe lab run` of the conformance mix (every request in a sequence) with the dummy only, idle and with
both cores busy. For each GET or HEAD the dummy's reply must name the client's fetch (its `X-SPE-Fetch`
stamp, the same status and body), and the report's noise floor must be 0: a Collector that fetched again
for the dummy shows in the stamps even when the origin's bytes happen to be the same.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import multiplier_binary
from labsupport import CpuHogs, run_lab_file, scratch_dir
from parts import require

from spe_tools import collector
from spe_tools.workload.content import conformance as cf

LAB = """
name = "dummy-fetch"
[collector]
kind = "spe"
[origin]
kind = "synthetic"
host = "localhost"
think_mean_ms = 50
[multiplier]
timeout_s = 30
[workload]
kind = "load"
duration_s = 75
rate = 20
clients = 4
conformance = 1.0
[[proxy]]
name = "dummy"
kind = "dummy"
"""


def stamp(reply: dict) -> str:
    """The fetch a reply names (the stamp without its time); '' when it names none (a 304 made by Squid)."""
    return (reply.get("fetch") or "").split(";")[0]


def case_of(url: str) -> str:
    return url.split(cf.PREFIX, 1)[1].rsplit("/", 1)[0] if cf.PREFIX in url else url


@pytest.fixture(scope="module", params=["idle", "loaded"])
def run(request):
    multiplier_binary()
    require(collector.missing("spe"), "the patched Collector")
    with scratch_dir("spe-dummy-fetch-") as runs, CpuHogs(2 if request.param == "loaded" else 0):
        done = run_lab_file(runs, "dummy-fetch", LAB)
        assert done.returncode == 0, done.stdout[-3000:]
        (rundir,) = runs.glob("*-dummy-fetch")
        records = [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()]
        yield {"out": done.stdout, "records": records,
               "summary": json.loads((rundir / "report/summary.json").read_text())}


def test_every_kind_of_traffic_was_sent(run):
    cases = Counter(case_of(r["url"]) for r in run["records"])
    for name in ("status=201", "status=400,stale", "status=503,heuristic", "status=599", "vary=*", "date-slow",
                 "date-fast", "cut-once", "no-cache,changing"):
        assert cases[name] > 0, name
    methods = Counter(r["method"] for r in run["records"])
    assert methods["HEAD"] > 0 and methods["PUT"] + methods["POST"] + methods["DELETE"] > 0, methods
    statuses = Counter(r["collector"].get("status") for r in run["records"])
    assert statuses[206] > 0 and statuses[304] > 0 and statuses[502] > 0, statuses


def test_a_reply_cut_short_is_never_multiplied(run):
    """The origin's first reply of a cut-once URL breaks off mid-body: the client's reply breaks off too (the
    Collector passes it on as it comes) and no proxy is sent the request; every other record has its dummy leg."""
    unsent = [r for r in run["records"] if not r["proxies"]]
    assert all(case_of(r["url"]) == "cut-once" and r["collector"]["error"] == "truncated" for r in unsent), unsent[:3]
    assert len(unsent) <= Counter(case_of(r["url"]) for r in run["records"])["cut-once"]


def test_the_dummy_gets_the_clients_own_fetch_for_every_safe_request(run):
    other = []
    for r in run["records"]:
        if r["method"] not in ("GET", "HEAD") or not r["proxies"]:
            continue  # the replay port answers the unsafe ones from the client's reply (the noise floor below)
        (dummy,) = r["proxies"]
        ref = r["collector"]
        if (stamp(dummy), dummy.get("status"), dummy.get("md5")) != (stamp(ref), ref.get("status"), ref.get("md5")):
            other.append((case_of(r["url"]), r["method"], ref.get("status"), dummy.get("status"), r["id"]))
    by_case = Counter(o[0] for o in other).most_common(10)
    assert not other, f"{len(other)} of {len(run['records'])}: {by_case} {other[:5]}"


def test_the_noise_floor_is_zero(run):
    floor = run["summary"]["noise_floor"]
    assert floor["measured"] and floor["zero"] and floor["floor_pct"] == 0, (
        [line for line in run["out"].splitlines() if line.startswith("Noise floor")],
        run["summary"]["mismatches"])
