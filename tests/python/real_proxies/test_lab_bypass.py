"""The trap that made a report lie: with URLs naming 127.0.0.1, Traffic Server fetches straight from the origin
and its Collector port sees nothing, so its hit ratio read 1.00. On a real lab (Traffic Server and Squid
behind the Collector) the status line must mark it BYPASS and the report must name it and print no hit
ratio or bandwidth for it, while Squid, which goes through its Collector port, keeps its figures."""

from __future__ import annotations

import json

from labsupport import ALL_CACHEABLE, lab_session
from parts import require

from analysis.report import build_report, text_report
from analysis.sections import bypass
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.watch.bypass_watch import BypassWatch, CollectorPorts
from spe_tools.lab.watch.status import StatusTracker


def lab_text(workdir) -> str:
    model = workdir / "model.json"
    model.write_text(json.dumps(ALL_CACHEABLE))
    return (f'name = "bypass"\n[collector]\nkind = "squid"\n[origin]\nthink_mean_ms = 0\nmodel = "{model}"\n'
            '[multiplier]\ntimeout_s = 20\n'
            '[[proxy]]\nname = "ats"\nkind = "trafficserver"\ncache_mb = 16\n'
            '[[proxy]]\nname = "squid"\nkind = "squid"\ncache_mb = 16\n')


def test_traffic_server_fetching_127_0_0_1_itself_is_named_not_scored():
    for kind in ("trafficserver", "squid"):
        require(KINDS[kind].missing(), f"the proxy kind {kind}")
    with lab_session(lab_text) as lab:
        lab.origin = lab.origin.replace("localhost", "127.0.0.1")  # the trap
        for i in range(6):
            lab.get(f"/obj/bypass-{i}?size=2000")
        assert len(lab.records("/obj/bypass-", 6)) == 6
        ports = lab.lab_json["collector"]["ports"]
        watch = BypassWatch(CollectorPorts(lab.rundir / "collector/access.log",
                                           {port: name for name, port in ports.items()}))
        tracker = StatusTracker(lab.rundir / "multiplier.jsonl", watch=watch)
        tracker.update()
        tracker.update()  # replies are judged against the access.log one update later
        assert watch.bypassing == {"ats"}, (watch.ports.requests, watch.silent_port_replies)
        rep = build_report(lab.rundir)
    assert set(bypass.of(rep)) == {"ats"}
    rows = {r["name"]: r for r in rep.rows}
    assert rows["ats"]["hit_ratio"] is None and rows["ats"]["rel_bandwidth_received"] is None
    assert rows["squid"]["hit_ratio"] is not None and rows["squid"]["collector_requests"] >= 6
    assert "ats: its Collector port saw no request while it answered 6 requests the Collector fetched" \
        in text_report(rep)
