"""[multiplier] metrics_listen in a lab: the Multiplier serves /metrics on the port lab.json names, and in a
short run its counters, read by Prometheus's own text-format parser, equal the records written."""

from __future__ import annotations

import json
import sys

from test_lab_command_workload import command, runs  # noqa: F401 (runs: the fixture of a run directory)

from spe_tools.lab import run_loop
from spe_tools.lab.model import parse_lab

# Run as the lab's command workload: eight requests through the Multiplier (urllib honours http_proxy), the
# records written, then one scrape straight to the metrics port (http.client: no proxy), both printed.
CLIENT = """\
import http.client, json, sys, time, urllib.parse, urllib.request
from prometheus_client.parser import text_string_to_metric_families
origin, rundir = sys.argv[1], sys.argv[2]
for i in range(8):
    with urllib.request.urlopen("%s/obj/m-%d?size=500" % (origin, i % 3), timeout=20) as reply:
        assert reply.status == 200
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


def test_a_labs_metrics_equal_the_records_it_wrote(runs):  # noqa: F811 (the imported fixture)
    lab = parse_lab('[multiplier]\nmetrics_listen = "127.0.0.1:0"\n'
                    '[[proxy]]\nname = "dummy"\nkind = "dummy"\n[origin]\nthink_mean_ms = 0\n'
                    + command(sys.executable, "-c", literal(CLIENT), "{origin_url}", "{rundir}"))
    rc, rundir = run_loop.run_lab(lab, 60, runs)
    out = (rundir / "workload.out").read_text()
    assert rc == 0, out
    result = json.loads(out.split("RESULT ", 1)[1])
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
