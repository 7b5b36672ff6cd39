"""The workload of a lab: the load client, headless Chromium, a replayed recording or the user's own command, all
through the Multiplier, with their arguments, the values a command's {placeholders} stand for, and its end judged."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools.lab.definition.model import Lab, expand_command
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.multipliers import LabMultiplier, lab_multipliers
from spe_tools.lab.start.places import ca_dir, origin_tls_dir
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.process import Child, tail
from spe_tools.rundir import layout
from spe_tools.rundir.layout import RunDir
from spe_tools.workload.client import outcome
from spe_tools.workload.har.archive import replay_format


def workload_argv(lab: Lab, ports: Ports, duration_s: float, rundir: Path | None = None,
                  which: LabMultiplier | None = None) -> list[str] | None:
    """The workload's command line (None for kind "none"): the load client, headless Chromium or the replay, all
    through the `which` Multiplier (default the first), asking the lab's origin by its lab name. Each Multiplier's
    client group draws its own requests: the seed is the lab's plus the Multiplier's place in the file."""
    which = which or lab_multipliers(lab, ports, rundir or Path("."))[0]
    w = replace(lab.workload, seed=lab.workload.seed + which.index)
    proxy = f"{which.host}:{which.ports.listen}"
    origin = f"{lab.origin.host}:{ports.origin}"
    model = ["--model", str(Path(lab.origin.model).resolve())] if lab.origin.model is not None else []
    conformance = ["--conformance", f"{w.conformance:g}"] if w.conformance else []
    tls = workload_tls_args(lab, ports, rundir) if rundir is not None else []
    users = ["--users", str(w.users), "--think-s", f"{w.think_s:g}", "--session-pages", f"{w.session_pages:g}"] \
        if w.users else []
    if w.kind == "load":
        return [sys.executable, "-m", "spe_tools.workload.load", "--via", proxy, "--origin", origin,
                "--rate", f"{w.rate:g}", "--duration", f"{duration_s:g}", "--robots", str(w.clients),
                "--hit-ratio", f"{w.hit_ratio:g}", "--popularity", w.popularity, "--seed", str(w.seed),
                "--json", layout.WORKLOAD_JSON, *conformance, *users, *model, *tls, *w.args]
    if w.kind == "command":
        values = command_values(lab, ports, duration_s, rundir or Path("."), which)
        return [expand_command(word, values) for word in w.command]
    if w.kind == "replay":
        return [sys.executable, "-m", "spe_tools.workload.replay", *(str(Path(f).resolve()) for f in w.files),
                "--via", proxy, "--speed", f"{w.speed:g}", "--duration", f"{duration_s:g}",
                "--json", layout.WORKLOAD_JSON, *replay_origin(lab, origin), *w.args]
    if w.kind == "browse":
        pages = w.pages or max(1, int(duration_s / max(w.think_s, 0.5)))
        return [sys.executable, "-m", "spe_tools.workload.browse", "--via", proxy, "--origin", origin,
                "--pages", str(pages), "--think-s", f"{w.think_s:g}", "--session-pages", f"{w.session_pages:g}",
                "--seed", str(w.seed),
                "--json", layout.WORKLOAD_JSON, *tls, *w.args]
    return None


def replay_origin(lab: Lab, origin: str) -> list[str]:
    """--origin for the replay: HAR files ask the HAR origin (which serves every recorded host), an access log's
    hosts become the synthetic origin's; otherwise the recorded URLs are asked as they are (loopback ones only,
    unless the workload's args allow any host)."""
    wanted = "har" if replay_format(lab.workload.files) == "har" else "synthetic"
    return ["--origin", origin] if lab.origin.kind == wanted else []


def workload_tls_args(lab: Lab, ports: Ports, rundir: Path) -> list[str]:
    """With an HTTPS origin: its address, the share asked over HTTPS, and what the client trusts: SPE's
    CA when the Multiplier intercepts, else the origin's own certificate (the tunnel is opaque)."""
    if not ports.origin_tls:
        return []
    if lab.multiplier.intercept_tls:
        trust = ca_dir(lab) / spe_ca.CERT_NAME
    else:
        trust = origin_tls_dir(rundir) / (spe_ca.ORIGIN_CERT_NAME if lab.workload.kind == "browse" else
                                          spe_ca.ORIGIN_CA_NAME)
    return ["--tls-origin", f"{lab.origin.host}:{ports.origin_tls}", "--https-share", f"{lab.workload.https_share:g}",
            "--ca-cert", str(trust)]


def command_values(lab: Lab, ports: Ports, duration_s: float, rundir: Path,
                   which: LabMultiplier | None = None) -> dict[str, str]:
    """What a `command` workload's {placeholders} stand for; also its SPE_* environment variables. {rundir} is the
    run directory of the Multiplier it goes through."""
    which = which or lab_multipliers(lab, ports, rundir)[0]
    host, port = which.host, which.ports.listen
    values = {"proxy": f"{host}:{port}", "proxy_host": host, "proxy_port": str(port),
              "proxy_url": f"http://{host}:{port}", "duration_s": f"{duration_s:g}", "rundir": str(which.rundir)}
    if lab.origin.kind != "none":
        values |= {"origin": f"{lab.origin.host}:{ports.origin}", "origin_url": origin_url(lab, ports)}
    if ports.origin_tls:
        values["tls_origin"] = f"{lab.origin.host}:{ports.origin_tls}"
    if lab.multiplier.intercept_tls:
        values["ca_cert"] = str(ca_dir(lab) / spe_ca.CERT_NAME)
    return values


def command_env(lab: Lab, ports: Ports, duration_s: float, rundir: Path,
                which: LabMultiplier | None = None) -> dict[str, str]:
    """The run's environment plus SPE_<PLACEHOLDER> for each value, and the usual proxy variables naming
    the Multiplier, so that tools which honour them (curl, wget, k6, Python's urllib) go through it."""
    values = command_values(lab, ports, duration_s, rundir, which)
    proxy_url = values["proxy_url"]
    # The user's PATH: their tool may live anywhere (the lab's own processes get a fixed one).
    return {**lab_env(rundir), "PATH": os.environ.get("PATH", lab_env(rundir)["PATH"]),
            **{f"SPE_{k.upper()}": v for k, v in values.items()},
            "http_proxy": proxy_url, "HTTP_PROXY": proxy_url, "https_proxy": proxy_url, "HTTPS_PROXY": proxy_url}


def start_workloads(run: RunningLab, duration_s: float) -> list[tuple[LabMultiplier, Child]]:
    """One workload per Multiplier (a client group each), in its run directory; none for kind "none"."""
    started = []
    for which in lab_multipliers(run.lab, run.ports, run.rundir):
        argv = workload_argv(run.lab, run.ports, duration_s, run.rundir, which)
        if argv is None:
            return []
        env = command_env(run.lab, run.ports, duration_s, run.rundir, which) if run.lab.workload.kind == "command" \
            else lab_env(which.rundir)
        child = run.group.start(which.process(layout.WORKLOAD), argv, ready=False, env=env, cwd=which.rundir)
        run.record(child)
        started.append((which, child))
    return started


def check_workload(workload: Child, rundir: Path, command: bool = False) -> None:
    """A workload that failed, or never finished, makes the run fail: its numbers are not the run's.
    A user's `command` still running at the duration is stopped: the duration is its end. `rundir`: the run
    directory of the Multiplier it went through (its summary and output are there)."""
    if command and workload.alive():
        workload.stop(deadline_s=10)
        return
    if workload.alive():
        raise LabError(f"the workload did not finish in time (see {workload.log})")
    code = workload.popen.returncode
    if code == outcome.FAILED and (failed := failed_by_summary(rundir)):
        # Requests without a reply are the run's to report, not a reason to throw its records away.
        print(f"spe lab: warning: the workload's {failed}", flush=True)
        return
    if code != 0:
        raise LabError(f"the workload failed with exit code {code} (see {workload.log}):\n{tail(workload.log, 5)}")


def failed_by_summary(rundir: Path) -> str | None:
    """What the workload's JSON summary says failed, when it says some requests got no reply."""
    try:
        summary = json.loads(RunDir(rundir).workload_json.read_text())
    except (OSError, ValueError):
        return None
    return outcome.failure_text(summary) if outcome.failed_requests(summary) else None


def origin_url(lab: Lab, ports: Ports) -> str:
    return f"http://{lab.origin.host}:{ports.origin}"
