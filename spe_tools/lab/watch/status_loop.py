"""The lab's second-by-second watch while it runs: a status line, the proxies seen bypassing their Collector
port, and the liveness of every piece (spe_tools/lab/watch/liveness.py), also written to status.json for the live
page; and what each proxy costs (spe_tools/lab/watch/proxy_costs.py), written to proxy-costs.json."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from spe_tools.lab.start.collector import strip_query_terms
from spe_tools.lab.start.multipliers import lab_multipliers
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.lab.watch.bypass_watch import BypassWatch, CollectorPorts
from spe_tools.lab.watch.liveness import check_liveness, component_states
from spe_tools.lab.watch.proxy_costs import CostSampler, lab_sampler
from spe_tools.lab.watch.status import StatusTracker, format_status
from spe_tools.process import Child
from spe_tools.rundir.lab_json import DIRECT_PORT
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.status_json import LabStatus


def bypass_watch(run: RunningLab) -> BypassWatch:
    """Watches the Collector's access.log per port, named as in lab.json."""
    names = {run.ports.direct: DIRECT_PORT, **{port: name for name, port in run.ports.collector.items()}}
    return BypassWatch(CollectorPorts(RunDir(run.rundir).access_log, names,
                                      strip_query_terms=strip_query_terms(run.lab)))


def status_loop(run: RunningLab, until: float | None, say: Callable[[str], None],
                workloads: Sequence[Child] = ()) -> None:
    """One status line per second (every Multiplier's requests) until `until` (monotonic), the workloads end, or a
    signal; raises LabError when a core piece dies. However it ends, the costs are written a last time, while
    everything still runs."""
    costs = lab_sampler(run)
    try:
        _watch(run, until, say, workloads, costs)
    finally:
        costs.finish()


def _watch(run: RunningLab, until: float | None, say: Callable[[str], None], workloads: Sequence[Child],
           costs: CostSampler) -> None:
    others = tuple(RunDir(m.rundir).multiplier_log for m in lab_multipliers(run.lab, run.ports, run.rundir)[1:])
    tracker = StatusTracker(RunDir(run.rundir).multiplier_log, watch=bypass_watch(run), more_logs=others)
    names = [p.name for p in run.lab.proxies]
    started = time.monotonic()
    previous = 0
    down: set[str] = set()
    bypass: set[str] = set()
    while until is None or time.monotonic() < until:
        time.sleep(1)
        tracker.update()
        elapsed = time.monotonic() - started
        say(format_status(elapsed, tracker.requests, previous, tracker.results, names, down,
                          tracker.watch.bypassing))
        for name in sorted(tracker.watch.bypassing - bypass):
            say(f"spe lab: proxy {name!r} BYPASS: its replies do not come through its Collector port; its hit "
                "ratio and bandwidth will not be computed (docs/report.md)")
        bypass = tracker.watch.bypassing
        previous = tracker.requests
        LabStatus(elapsed, tracker.requests, component_states(run)).write(run.rundir)  # for the live page
        costs.tick()
        check_liveness(run, elapsed, down, say)
        if workloads and not any(w.alive() for w in workloads):
            return
