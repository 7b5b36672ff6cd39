"""The programs the lab starts by the dozen, or on a proxy's machine (the workloads, the prefetch agent), start
without polars or pyarrow: each imported in a Python of its own, and its loaded modules listed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

# Processes the lab starts by the dozen, or on a proxy's machine: a plain Python start, no data frames.
LEAN = ("spe_tools.workload.load", "spe_tools.workload.replay", "spe_tools.workload.browse",
        "spe_tools.workload.origin", "spe_tools.squid_prefetch.agent")


@pytest.mark.parametrize("module", LEAN)
def test_the_workloads_and_the_prefetch_agent_do_not_load_polars(module):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'pyarrow')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
