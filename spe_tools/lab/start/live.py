"""The live scorecard page ([live] enabled): analysis/live.py, started as a program of its own (the lab imports
nothing of the analysis, docs/architecture.md) on a loopback port, after the Multiplier, and stopped first, with
the lab's other processes (spe_tools/lab/start/running_lab.py)."""

from __future__ import annotations

import secrets
import sys

from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.rundir import layout
from spe_tools.rundir.lab_json import LIVE_TOKEN_ENV, LiveOfRun

HOST = "127.0.0.1"  # never another address: the page shows the run's URLs (docs/lab-file.md, [live])


def live_url(port: int, token: str) -> str:
    return f"http://{HOST}:{port}/{token}/"


def live_of_run(run: RunningLab) -> LiveOfRun | None:
    """lab.json's "live": None without a live page."""
    return LiveOfRun(url=run.live_url, port=run.ports.live, every_s=run.lab.live.every) if run.live_url else None


def start_live(run: RunningLab, say=print) -> None:
    """Start the page's server and wait for its port (it serves a "waiting" page until the first records). The
    page is served under a random path, which only the terminal and lab.json (private to the run's readers) show:
    another local user can open the port but not the page."""
    if not run.ports.live:
        return
    token = secrets.token_urlsafe(16)
    argv = [sys.executable, "-m", "analysis.live", str(run.rundir), "--listen", f"{HOST}:{run.ports.live}",
            "--every", f"{run.lab.live.every:g}s"]
    run.record(run.group.start(layout.LIVE, argv, port=run.ports.live, deadline_s=30,
                               env={**lab_env(run.rundir), LIVE_TOKEN_ENV: token}))
    run.live_url = live_url(run.ports.live, token)
    say(f"spe lab: live scorecard on {run.live_url}")
