"""A recorded site on both sides of a lab, as a user runs it (`./spe lab run`): the HAR origin serves the recording
(`[origin] kind = "har"`) and the HAR replay sends its requests (`[workload] kind = "replay"`) through the Multiplier
to the patched Collector, a Squid and the dummy. The client gets each recorded status back, every request of the
recording is multiplied, the recorded revalidation is answered 304, and the dummy never differs from the
Collector."""

from __future__ import annotations

import json

from har_site import write_site
from labsupport import lab_cli, scratch_dir
from parts import installed_kinds, require

from spe_tools import collector

LAB = """name = "har-both"
[collector]
kind = "spe"
[origin]
kind = "har"
har = ["site.har"]
[multiplier]
timeout_s = 20
[workload]
kind = "replay"
files = ["site.har"]
duration_s = 30
{proxies}[[proxy]]
name = "dummy"
kind = "dummy"
"""


def test_a_recorded_site_replayed_against_itself_through_every_proxy():
    require(collector.missing("spe"), "the patched Collector")
    from conftest import multiplier_binary
    kinds = installed_kinds(["squid", "trafficserver"], multiplier_binary())
    proxies = "".join(f'[[proxy]]\nname = "{k}"\nkind = "{k}"\ncache_mb = 16\n' for k in kinds)
    with scratch_dir("spe-lab-har-both-") as runs:
        write_site(runs / "site.har")
        (runs / "lab.toml").write_text(LAB.format(proxies=proxies))
        result = lab_cli("run", str(runs / "lab.toml"), "--runs-dir", str(runs), "--no-report", timeout=180)
        assert result.returncode == 0, result.stdout + result.stderr
        (rundir,) = runs.glob("*-har-both")
        summary = json.loads((rundir / "workload.json").read_text())
        records = [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()]

    assert summary["format"] == "har" and summary["errors"] == 0, summary
    # The request the browser blocked was never answered: not replayed (the origin has nothing for it either).
    assert summary["refused"] == {"no response recorded (the browser blocked or cancelled it)": 1}, summary
    assert summary["status_matched"] == summary["status_compared"] > 0, summary
    assert len(records) == summary["sent"], (len(records), summary["sent"])
    for record in records:
        assert {p["name"] for p in record["proxies"]} == {*kinds, "dummy"}, record
        dummy = next(p for p in record["proxies"] if p["name"] == "dummy")
        assert dummy["result"] == "OK", (record["url"], dummy)
    css = [r for r in records if r["url"].endswith("/static/site.css")]
    assert len(css) == 2 and css[1]["collector"]["status"] == 304  # the recorded revalidation, answered 304
