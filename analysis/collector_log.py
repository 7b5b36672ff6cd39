"""What the report needs to know about how the run's Collector logged. The log's reader and the per-port counts are
the run directory's contract (spe_tools/rundir/access_log.py and port_usage.py), shared with the lab and the bench."""

from __future__ import annotations

from spe_tools.rundir.lab_json import LabJson


def strips_query_terms(lab_json: LabJson | None) -> bool:
    """Whether the run's Collector logged URLs without their query (lab.json; older runs: no)."""
    return lab_json is not None and lab_json.collector.strips_query_terms()
