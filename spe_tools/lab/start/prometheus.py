"""Debian's Prometheus for one run ([multiplier] prometheus = true): started once the Multiplier answers, it
scrapes the Multiplier's /metrics every second into the run directory (prometheus/), so the run's history
can be queried while it goes on and afterwards (its web UI and API on a loopback port, in lab.json as
multiplier.prometheus_url; docs/metrics.md). Stopped with the lab, like every other piece."""

from __future__ import annotations

import json
from pathlib import Path

from spe_tools.lab.errors import LabError
from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.process import ProcessError

PROMETHEUS = "prometheus"  # the process's name in the run (its output: prometheus.out) and its directory
PROGRAM = "/usr/bin/prometheus"  # Debian's package `prometheus`


def prometheus_config(lab_name: str, run_name: str, metrics: str) -> str:
    """The scrape configuration (YAML; JSON is YAML): the Multiplier's /metrics every second."""
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "15s"},
              "scrape_configs": [{"job_name": "spe-multiplier", "metrics_path": "/metrics",
                                  "static_configs": [{"targets": [metrics],
                                                      "labels": {"lab": lab_name, "run": run_name}}]}]}
    return json.dumps(config, indent=2) + "\n"


def prometheus_argv(directory: Path, port: int) -> list[str]:
    return [PROGRAM, f"--config.file={directory / 'prometheus.yml'}", f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]


def start_prometheus(run: RunningLab) -> None:
    metrics = run.lab.multiplier.metrics_address
    if not run.lab.multiplier.prometheus or metrics is None:
        return
    directory = run.rundir / PROMETHEUS
    directory.mkdir(exist_ok=True)
    (directory / "prometheus.yml").write_text(
        prometheus_config(run.lab.name, run.rundir.name, f"{metrics[0]}:{run.ports.metrics}"))
    try:
        child = run.group.start(PROMETHEUS, prometheus_argv(directory, run.ports.prometheus),
                                port=run.ports.prometheus, deadline_s=60, env=lab_env(run.rundir))
    except ProcessError as e:
        raise LabError(f"Prometheus failed to start: {e}") from e
    run.record(child)
