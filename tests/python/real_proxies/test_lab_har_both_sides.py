"""A recorded site on both sides of a lab, as a user runs it (`./spe lab run`): the HAR origin serves the recording
(`[origin] kind = "har"`) and the HAR replay sends its requests (`[workload] kind = "replay"`) through the Multiplier
to the patched Collector, a Squid and the dummy. The client gets each recorded status back, every request of the
recording is multiplied, the recorded revalidation is answered 304, and the dummy never differs from the
Collector."""

from __future__ import annotations

from har_site import both_sides, write_site
from labsupport import scratch_dir
from parts import installed_kinds, require

from spe_tools import collector


def test_a_recorded_site_replayed_against_itself_through_every_proxy():
    require(collector.missing("spe"), "the patched Collector")
    from conftest import multiplier_binary
    kinds = installed_kinds(["squid", "trafficserver"], multiplier_binary())
    with scratch_dir("spe-lab-har-both-") as runs:
        write_site(runs / "site.har")
        summary, records = both_sides(runs, "har-both", "site.har", kinds, 30, timeout=180)

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
