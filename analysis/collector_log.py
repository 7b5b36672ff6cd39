"""What the report needs to know about how the run's Collector logged: the log's reader and the per-port
counts are the run directory's contract (spe_tools/rundir/access_log.py and port_usage.py), shared with the lab."""

from __future__ import annotations

# bench/overhead.py still imports these from here; they are the run directory's contract's (spe_tools/rundir).
from spe_tools.rundir.access_log import SPE_LOGFORMAT as SPE_LOGFORMAT
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.port_usage import PortUsage as PortUsage
from spe_tools.rundir.port_usage import add_access_line as add_access_line


def strips_query_terms(lab_json: LabJson | None) -> bool:
    """Whether the run's Collector logged URLs without their query (lab.json; older runs: no)."""
    return lab_json is not None and lab_json.collector.strips_query_terms()
