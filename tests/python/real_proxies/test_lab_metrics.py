"""[multiplier] metrics_listen in a lab: the Multiplier serves /metrics on the port lab.json names, and in a
short run its counters, read by Prometheus's own text-format parser, equal the records written; with
[multiplier] prometheus, Debian's Prometheus scrapes it for the run and answers a query with that count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from parts import require
from test_lab_command_workload import command, runs  # noqa: F401 (runs: the fixture of a run directory)

from spe_tools.lab.definition.model import parse_lab
from spe_tools.lab.start.prometheus import PROGRAM as PROMETHEUS_PROGRAM
from spe_tools.lab.watch import run_loop

# The start of each lab's command workload: eight requests through the Multiplier (urllib honours http_proxy).
REQUESTS = """\
import http.client, json, sys, time, urllib.parse, urllib.request
origin, rundir = sys.argv[1], sys.argv[2]
for i in range(8):
    with urllib.request.urlopen("%s/obj/m-%d?size=500" % (origin, i % 3), timeout=20) as reply:
        assert reply.status == 200
"""

# Then the records written, and one scrape straight to the metrics port (http.client: no proxy), both printed.
CLIENT = REQUESTS + """\
from prometheus_client.parser import text_string_to_metric_families
url = urllib.parse.urlsplit(json.load(open(rundir + "/lab.json"))["multiplier"]["metrics_url"])
time.sleep(1.5)  # the writer thread writes every 100 ms, the log is flushed with it
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
conn.request("GET", url.path)
page = conn.getresponse().read().decode()
samples = {}
for family in text_string_to_metric_families(page):
    for s in family.samples:
        samples[s.name + json.dumps(s.labels, sort_keys=True)] = s.value
written = len(open(rundir + "/multiplier.jsonl").read().splitlines())
print("RESULT", json.dumps({"written": written, "samples": samples}), flush=True)
"""


def literal(text: str) -> str:
    """Text as a lab command's word: its braces doubled (a single one starts a placeholder)."""
    return text.replace("{", "{{").replace("}", "}}")


def run_with_client(runs_dir: Path, multiplier_keys: str, client: str, name: str = "lab") -> tuple[Path, dict]:
    """A one-dummy lab whose workload is `client` (Python); its run directory and the JSON it printed."""
    lab = parse_lab(f'name = "{name}"\n[multiplier]\n{multiplier_keys}'
                    '[[proxy]]\nname = "dummy"\nkind = "dummy"\n[origin]\nthink_mean_ms = 0\n'
                    + command(sys.executable, "-c", literal(client), "{origin_url}", "{rundir}"))
    rc, rundir = run_loop.run_lab(lab, 90, runs_dir)
    out = (rundir / "workload.out").read_text()
    assert rc == 0, out
    return rundir, json.loads(out.split("RESULT ", 1)[1])


def test_a_labs_metrics_equal_the_records_it_wrote(runs):  # noqa: F811 (the imported fixture)
    rundir, result = run_with_client(runs, 'metrics_listen = "127.0.0.1:0"\n', CLIENT)
    samples = result["samples"]

    def value(name: str, **labels: str) -> float:
        return samples[name + json.dumps(labels, sort_keys=True)]

    assert result["written"] == 8
    assert value("spe_records_written_total") == 8
    assert value("spe_requests_total", proxy="collector") == 8
    assert value("spe_requests_total", proxy="dummy") == 8
    assert value("spe_results_total", proxy="dummy", **{"class": "OK"}) == 8
    assert value("spe_first_byte_seconds_count", proxy="dummy") == 8
    metrics_url = json.loads((rundir / "lab.json").read_text())["multiplier"]["metrics_url"]
    assert metrics_url.startswith("http://127.0.0.1:") and metrics_url.endswith("/metrics")


# With [multiplier] prometheus: then the run's Prometheus asked (its HTTP API, straight, no proxy) until it
# has scraped the count of records written, or 30 s.
QUERY = REQUESTS + """\
prometheus = urllib.parse.urlsplit(json.load(open(rundir + "/lab.json"))["multiplier"]["prometheus_url"])
query = urllib.parse.urlencode({"query": 'spe_requests_total{proxy="collector"}'})
answer = None
for _ in range(60):
    conn = http.client.HTTPConnection(prometheus.hostname, prometheus.port, timeout=10)
    conn.request("GET", "/api/v1/query?" + query)
    answer = json.loads(conn.getresponse().read())
    found = answer["data"]["result"]
    if found and found[0]["value"][1] == "8":
        break
    time.sleep(0.5)
print("RESULT", json.dumps(answer), flush=True)
"""


def test_the_runs_prometheus_scrapes_the_multiplier_and_answers_a_query(runs):  # noqa: F811 (the fixture)
    require([] if Path(PROMETHEUS_PROGRAM).exists() else [f"{PROMETHEUS_PROGRAM} is missing"], "Prometheus")
    rundir, answer = run_with_client(runs, 'metrics_listen = "127.0.0.1:0"\nprometheus = true\n', QUERY, "prom")
    assert answer["status"] == "success"
    (series,) = answer["data"]["result"]
    assert series["value"][1] == "8"
    assert series["metric"]["job"] == "spe-multiplier" and series["metric"]["lab"] == "prom"
    assert series["metric"]["run"] == rundir.name
    assert (rundir / "prometheus" / "data").is_dir()
