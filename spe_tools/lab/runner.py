"""Bring a lab up, drive it, bring it down: the functions behind `./spe lab up|run|down|check`.

Start order: origin, Collector (one named port per proxy under test), proxies under test (each
rendered into runs/<run>/proxies/<name>/ and pointed at its own Collector port), Multiplier, then
the workload. Each start waits for the component's port with a deadline; any failure stops
everything already started and names the component. `pids.json` in the run directory lists every
process as it starts, so `./spe lab down RUNDIR` can stop them by PID from another shell.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab import access
from spe_tools.lab.kinds import KINDS, MULTIPLIER, Context
from spe_tools.lab.labfile import write_run_lab_file
from spe_tools.lab.model import Lab, expand_command
from spe_tools.lab.noise import noise_pairs
from spe_tools.process import (
    Child,
    ProcessError,
    ProcessGroup,
    alive,
    free_port,
    port_open,
    start_time,
    stop_recorded,
    tail,
)
from spe_tools.rundir import layout
from spe_tools.rundir.lab_json import DIRECT_PORT, CollectorOfRun, LabJson, MultiplierOfRun, OriginOfRun, ProxyOfRun
from spe_tools.rundir.layout import RunDir
from spe_tools.workload import browse, content_model

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RUNS = ROOT / "runs"


class LabError(RuntimeError):
    """The lab cannot start or run; the message names the component and the reason."""


@dataclass
class Ports:
    origin: int
    direct: int  # the Collector port the Multiplier uses
    multiplier: int
    proxies: dict[str, int]  # where each proxy under test listens
    collector: dict[str, int]  # each proxy's Collector port
    origin_tls: int = 0  # the synthetic origin's HTTPS port ([origin] tls)
    replay: int = 0  # the Multiplier's replay port: the Collector's parent for the proxies' unsafe copies


def _pick(taken: set[int]) -> int:
    while True:
        port = free_port()
        if port not in taken:
            taken.add(port)
            return port


def assign_ports(lab: Lab) -> Ports:
    """Fixed ports from the file (which must be free now), free ones for the rest, none twice."""
    taken: set[int] = set()
    fixed = [("[origin].port", lab.origin.port), ("[collector].port", lab.collector.port),
             ("[multiplier].listen", lab.multiplier.port), ("[origin].tls_port", lab.origin.tls_port)]
    fixed += [(f"proxy {p.name!r} port", p.port) for p in lab.proxies if p.kind != "external"]
    fixed += [(f"proxy {p.name!r} collector_port", p.collector_port) for p in lab.proxies]
    for what, port in fixed:
        if port and port_open("127.0.0.1", port):
            raise LabError(f"port clash: {what} {port} is already in use on this machine")
        taken.add(port)

    def get(port: int) -> int:
        return port or _pick(taken)

    return Ports(origin=get(lab.origin.port) if lab.origin.kind != "none" else 0,
                 direct=get(lab.collector.port), multiplier=get(lab.multiplier.port),
                 proxies={p.name: p.port if p.kind == "external" else get(p.port) for p in lab.proxies},
                 collector={p.name: get(p.collector_port) for p in lab.proxies},
                 origin_tls=get(lab.origin.tls_port) if lab.origin.tls else 0, replay=get(0))


def check(lab: Lab, multiplier: Path = MULTIPLIER) -> list[str]:
    """Everything that would stop this lab from starting here, as messages (empty = ready)."""
    problems = [f"[collector] kind {lab.collector.kind!r}: {m}" for m in collector.missing(lab.collector.kind)]
    limited = [p.name for p in lab.proxies if p.collector_limit_kbps]
    if limited and not problems and not collector.has_delay_pools(lab.collector.kind):
        problems.append(f"[[proxy]] {limited[0]!r}.collector_limit_kbps: this Collector was built without delay "
                        "pools (./spe setup rebuilds the patched one with them)")
    if not multiplier.exists():
        problems.append(f"the Multiplier {multiplier} is not built (./spe setup builds it)")
    seen: set[str] = set()
    for p in lab.proxies:
        if p.kind in seen:
            continue
        seen.add(p.kind)
        problems += [f"[[proxy]] {p.name!r} (kind {p.kind}): {m}" for m in KINDS[p.kind].missing(multiplier)]
    problems += _origin_and_workload_problems(lab)
    problems += _https_problems(lab)
    if lab.share_group:
        try:
            access.group_id(lab.share_group)
        except access.AccessError as e:
            problems.append(str(e))
    try:
        assign_ports(lab)
    except LabError as e:
        problems.append(str(e))
    return problems


def _origin_and_workload_problems(lab: Lab) -> list[str]:
    problems = []
    if lab.origin.model is not None:
        try:
            content_model.Model.load(str(lab.origin.model))
        except (OSError, ValueError, TypeError) as e:
            problems.append(f"[origin].model: {lab.origin.model}: {e}")
    if lab.workload.kind == "browse" and not os.access(browse.CHROMIUM, os.X_OK):
        problems.append(f"[workload] kind 'browse' needs Chromium ({browse.CHROMIUM}): apt-get install chromium "
                        "(./spe setup does)")
    return problems


def ca_dir(lab: Lab) -> Path:
    """SPE's CA for this lab: the file's ca_dir, else ./spe ca's (resolved here: the Multiplier's HOME is the run)."""
    return Path(lab.multiplier.ca_dir or spe_ca.default_dir()).resolve()


def _https_problems(lab: Lab) -> list[str]:
    problems = []
    for path in lab.collector.origin_ca_files:
        if not Path(path).is_file():
            problems.append(f"[collector].origin_ca_files: {path} is not a file")
        elif any(c.isspace() for c in str(Path(path).resolve())):  # else a ValueError from collector.tls_outgoing
            problems.append(f"[collector].origin_ca_files: {Path(path).resolve()}: Squid cannot name a file whose "
                            "path has spaces (copy it elsewhere)")
    if lab.multiplier.intercept_tls and (ca_dir(lab) / spe_ca.CERT_NAME).exists():
        try:
            spe_ca.check_spe_ca(spe_ca.CaFiles(ca_dir(lab)))
        except spe_ca.CaError as e:
            problems.append(f"[multiplier].intercept_tls: {e}")
    return problems


def origin_tls_dir(rundir: Path) -> Path:
    return rundir / layout.ORIGIN_TLS


def make_run_dir(lab: Lab, base: Path | None = None) -> Path:
    """A new run directory under `base`, readable by its owner only (or the lab's share group: access.py),
    that the proxies' own users can pass through."""
    base = Path(base or lab.runs_dir or DEFAULT_RUNS)
    try:
        if lab.share_group:
            access.group_id(lab.share_group)  # before anything is made
    except access.AccessError as e:
        raise LabError(str(e)) from None
    access.make_passable_dirs(base)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        path = base / (f"{stamp}-{lab.name}" + (f"-{n}" if n else ""))
        try:
            path.mkdir(mode=0o700)
            break
        except FileExistsError:
            continue
    else:
        raise LabError(f"cannot create a run directory under {base}")
    # Proxies started as root drop to their own users, who must reach their directories.
    try:
        access.open_for_services(path, lab.share_group)
    except access.AccessError as e:
        raise LabError(str(e)) from None
    if os.geteuid() == 0:
        for ancestor in path.resolve().parents:
            if not ancestor.stat().st_mode & stat.S_IXOTH:
                raise LabError(f"the proxies run as their own users, who cannot reach {path}: {ancestor} is not "
                               "searchable by others (chmod o+x, or choose another runs directory)")
    return path


@dataclass
class RunningLab:
    """A lab being brought up in `rundir`: the processes started so far and where everything is."""

    lab: Lab
    rundir: Path
    group: ProcessGroup
    ports: Ports | None = None
    multiplier: Child | None = None
    pids: list[dict] = field(default_factory=list)
    replay_holder: socket.socket | None = None  # the replay port, held until the Multiplier takes it

    def record(self, child: Child) -> None:
        """Add a started process to pids.json (written at once: `down` may run any time)."""
        self.pids.append(
            {"name": child.name, "pid": child.pid, "start": start_time(child.pid), "signal": int(signal.SIGTERM)}
        )
        self._write_pids()

    def _write_pids(self) -> None:
        runner = {"name": layout.LAB, "pid": os.getpid(), "start": start_time(os.getpid()),
                  "signal": int(signal.SIGTERM)}
        pids = RunDir(self.rundir).pids
        tmp = pids.with_name(pids.name + ".tmp")
        tmp.write_text(json.dumps({"runner": runner, "processes": self.pids}, indent=2))
        tmp.replace(pids)

    def stop(self) -> list[int]:
        """Stop every process in reverse start order (the Multiplier first, so it flushes its log), each
        with whatever it forked (its session). pids.json goes only once none of them is left, so that
        `./spe lab down` can still find a survivor; returns the survivors' PIDs."""
        listed = {entry["pid"] for entry in self.pids}
        for child in self.group.children:  # started but not yet listed (it failed before it was ready)
            if child.pid not in listed:
                self.record(child)
        self.group.stop_all()
        left = sorted({pid for child in self.group.children for pid in [child.pid, *child.members()] if alive(pid)})
        if not left:
            RunDir(self.rundir).pids.unlink(missing_ok=True)
            access.seal(self.rundir, self.lab.share_group)  # nothing runs in it any more
        return left


def _env(home: Path) -> dict[str, str]:
    """A small, fixed environment: no proxy variables leak in, temporary files stay in the run directory."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8",
            "PYTHONPATH": str(ROOT)}


def start_origin(run: RunningLab) -> None:
    if run.lab.origin.kind == "none":
        return
    if run.lab.origin.tls:
        spe_ca.test_origin_tls(origin_tls_dir(run.rundir), [run.lab.origin.host, "localhost", "127.0.0.1"])
    child = run.group.start(layout.ORIGIN, origin_argv(run.lab, run.ports, run.rundir), port=run.ports.origin,
                            deadline_s=20, env=_env(run.rundir))
    run.record(child)
    end = time.monotonic() + 20  # the HTTPS port opens right after the HTTP one
    while run.ports.origin_tls and not port_open("127.0.0.1", run.ports.origin_tls):
        if time.monotonic() > end or not child.alive():
            raise LabError(f"the origin did not serve HTTPS on 127.0.0.1:{run.ports.origin_tls}:\n{tail(child.log)}")
        time.sleep(0.05)


def origin_argv(lab: Lab, ports: Ports, rundir: Path) -> list[str]:
    """The synthetic origin (spe_tools.workload.origin) on the loopback, the lab file's model and think time,
    and with [origin] tls its HTTPS port, with a test CA made for this run (handed to the Collector)."""
    o = lab.origin
    argv = [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{ports.origin}",
            "--seed", str(o.seed)]
    if ports.origin_tls:
        argv += ["--tls", f"127.0.0.1:{ports.origin_tls}", "--tls-dir", str(origin_tls_dir(rundir))]
    if o.model is not None:
        argv += ["--model", str(Path(o.model).resolve())]
    if o.think_mean_ms is not None:
        argv += ["--think-mean-ms", f"{o.think_mean_ms:g}"]
    if o.think_sd_ms is not None:
        argv += ["--think-sd-ms", f"{o.think_sd_ms:g}"]
    return argv


def collector_port_names(lab: Lab, ports: Ports) -> dict[str, int]:
    """The proxy_ports argument of the Collector: '<name>@accel' for proxies that speak origin-form."""
    return {(f"{p.name}@accel" if KINDS[p.kind].accel else p.name): ports.collector[p.name] for p in lab.proxies}


def lab_destinations(lab: Lab) -> tuple[str, ...]:
    """Where the Collector may fetch from: with the synthetic origin, only the lab itself (Chromium's
    own background requests are refused there); with live traffic (origin "none"), anywhere."""
    if lab.origin.kind == "none":
        return ()
    return tuple(dict.fromkeys((lab.origin.host, "localhost", "127.0.0.1")))


def strip_query_terms(lab: Lab) -> bool:
    """Whether the Collector's access.log leaves out URLs' queries: on with live traffic (origin "none": real
    users' queries carry search terms, session ids, tokens), off with the synthetic origin (its queries are
    the lab's own: think, size, cc...)."""
    return lab.origin.kind == "none"


def connect_ports(lab: Lab, ports: Ports) -> tuple[int, ...]:
    """The ports CONNECT may reach, the Multiplier's --connect-port list (multiplier_argv): 443, with
    interception also the HTTPS origin's port, and any --connect-port in [multiplier] extra_args (which
    replaces the default 443 when it is the only one). The Collector refuses CONNECT to any other."""
    listed = [443, ports.origin_tls or 443] if lab.multiplier.intercept_tls else []
    args = list(lab.multiplier.extra_args)
    for i, arg in enumerate(args):
        value = args[i + 1] if arg == "--connect-port" and i + 1 < len(args) else \
            arg.partition("=")[2] if arg.startswith("--connect-port=") else ""
        if value.isdigit():
            listed.append(int(value))
    return tuple(dict.fromkeys(listed or [443]))


def start_collector(run: RunningLab) -> None:
    run.replay_holder = collector.hold_replay_port(run.ports.replay)
    try:
        spec = run.lab.collector
        # the patched Collector only refuses destinations outside the lab; stock Squid keeps its own rules
        child = collector.start_collector(
            run.group, layout.COLLECTOR, spec.kind, run.ports.direct, collector_port_names(run.lab, run.ports),
            uncacheable_ttl_s=spec.uncacheable_ttl_s, replay_timing=spec.replay_timing, cache_mb=spec.cache_mb,
            allowed_destinations=lab_destinations(run.lab) if spec.kind == "spe" else (),
            origin_ca_files=origin_ca_files(run), strip_query_terms=strip_query_terms(run.lab),
            replay_port=run.ports.replay, connect_ports=connect_ports(run.lab, run.ports),
            port_limits=tuple((p.name, p.collector_limit_kbps) for p in run.lab.proxies if p.collector_limit_kbps))
    except (ProcessError, OSError) as e:
        raise LabError(f"the Collector ({run.lab.collector.kind}) failed to start: {e}") from e
    run.record(child)


def origin_ca_files(run: RunningLab) -> tuple[str, ...]:
    """The lab's CA files for https origins, and the synthetic origin's test CA when it serves HTTPS."""
    files = [str(Path(path).resolve()) for path in run.lab.collector.origin_ca_files]
    if run.ports.origin_tls:
        files.append(str(origin_tls_dir(run.rundir) / spe_ca.ORIGIN_CA_NAME))
    return tuple(files)


def proxy_context(run: RunningLab, name: str) -> Context:
    spec = run.lab.proxy(name)
    origin_ports = [port for port in (run.ports.origin, run.ports.origin_tls) if port]
    return Context(spec=spec, dir=RunDir(run.rundir).proxy_dir(name), port=run.ports.proxies[name],
                   collector_port=run.ports.collector[name], origin_host=run.lab.origin.host,
                   origin_ports=origin_ports)


def start_proxy(run: RunningLab, name: str) -> None:
    spec = run.lab.proxy(name)
    kind = KINDS[spec.kind]
    ctx = proxy_context(run, name)
    if spec.kind == "external":
        return  # the user runs it; `up` reports whether it answers
    ctx.dir.mkdir(parents=True, exist_ok=True)
    kind.render(ctx)
    kind.prepare(ctx)
    try:
        child = run.group.start(name, kind.argv(ctx), port=ctx.port, ready=False, env=_env(ctx.dir), cwd=ctx.dir,
                                umask=kind.umask)
        run.record(child)
        child.wait_ready(deadline_s=kind.ready_deadline_s)
        for companion in kind.companions(ctx):
            helper = run.group.start(companion.name, companion.argv, ready=False, env=_env(ctx.dir), cwd=ctx.dir,
                                     ready_line=companion.ready_line)
            run.record(helper)
            helper.wait_ready(deadline_s=kind.ready_deadline_s)
    except ProcessError as e:
        raise LabError(f"proxy {name!r} ({spec.kind}) failed to start: {e}") from e


def multiplier_argv(lab: Lab, ports: Ports, rundir: Path, multiplier: Path = MULTIPLIER) -> list[str]:
    m = lab.multiplier
    argv = [str(multiplier), "--listen", f"{m.host}:{ports.multiplier}", "--collector", f"127.0.0.1:{ports.direct}",
            "--mode", m.mode, "--legs", m.legs, "--timeout", f"{m.timeout_s:g}", "--threads", str(m.threads),
            "--fanout-threads", str(m.fanout_threads), "--replay-listen", f"127.0.0.1:{ports.replay}",
            "--log", str(RunDir(rundir).multiplier_log), "--rope-log", str(RunDir(rundir).rope_log),
            "--capture-dir", str(RunDir(rundir).captures)]
    for p in lab.proxies:
        argv += ["--proxy", f"{p.name}={p.host}:{ports.proxies[p.name]}"]
    for h in m.compare_headers:
        argv += ["--compare-header", h]
    # The synthetic origin numbers its fetches of each path (X-Origin-Count, a diagnostic): a proxy's
    # copy from an earlier fetch differs there and nowhere else, which is not a caching error.
    synthetic = ("X-Origin-Count",) if lab.origin.kind == "synthetic" else ()
    for h in (*synthetic, *m.ignore_headers):
        argv += ["--ignore-header", h]
    if m.intercept_tls:
        argv += ["--intercept-tls", "--ca-dir", str(ca_dir(lab))]
        for port in dict.fromkeys((443, ports.origin_tls or 443)):
            argv += ["--connect-port", str(port)]
        for pattern in m.no_intercept:
            argv += ["--no-intercept", pattern]
    return [*argv, *m.extra_args]


def multiplier_host(lab: Lab) -> str:
    """Where this machine reaches the Multiplier: its listen address, which may not be the loopback,
    or the loopback when it listens on every address."""
    return "127.0.0.1" if lab.multiplier.host == "0.0.0.0" else lab.multiplier.host


def start_multiplier(run: RunningLab, multiplier: Path = MULTIPLIER, say=print) -> None:
    if run.lab.multiplier.intercept_tls:
        files, created = spe_ca.create_spe_ca(ca_dir(run.lab))
        if created:
            say(f"spe lab: created SPE's CA for HTTPS interception in {files.directory} (./spe ca says how to "
                "trust it)")
    argv = multiplier_argv(run.lab, run.ports, run.rundir, multiplier)
    if run.replay_holder is not None:
        run.replay_holder.close()  # the Collector has found its parent there: the Multiplier listens now
        run.replay_holder = None
    try:
        child = run.group.start(layout.MULTIPLIER, argv, port=run.ports.multiplier, ready=False, env=_env(run.rundir))
        run.record(child)
        child.wait_ready(host=multiplier_host(run.lab))
    except ProcessError as e:
        raise LabError(f"the Multiplier failed to start: {e}") from e
    run.multiplier = child


def _version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"


def topology(run: RunningLab, multiplier: Path = MULTIPLIER) -> LabJson:
    """lab.json: names, kinds, versions, ports and log paths (relative to the run directory)."""
    lab, ports = run.lab, run.ports
    versions = {kind: KINDS[kind].version() for kind in {p.kind for p in lab.proxies}}
    return LabJson(
        name=lab.name, lab_file=layout.LAB_TOML, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        collector=CollectorOfRun(
            kind=lab.collector.kind, version=collector.version(lab.collector.kind),
            ports={DIRECT_PORT: ports.direct, **ports.collector},
            accel=[p.name for p in lab.proxies if KINDS[p.kind].accel],
            access_log=layout.ACCESS_LOG, cache_log=layout.CACHE_LOG,
            uncacheable_ttl_s=lab.collector.uncacheable_ttl_s, replay_timing=lab.collector.replay_timing,
            cache_mb=lab.collector.cache_mb,
            # paths as strings (a Path is no JSON value), absolute: lab.json is read from the run directory
            origin_ca_files=[str(Path(path).resolve()) for path in lab.collector.origin_ca_files],
            strip_query_terms=strip_query_terms(lab)),
        proxies={p.name: ProxyOfRun(
            kind=p.kind, version=versions[p.kind], host=p.host, port=ports.proxies[p.name],
            collector_port=ports.collector[p.name], caches=KINDS[p.kind].caches, accel=KINDS[p.kind].accel,
            twin_of=p.twin_of or None, collector_limit_kbps=p.collector_limit_kbps or None,
            prefetch=p.prefetch if p.kind == "trafficserver" else None,
            dir=layout.proxy_dir(p.name), stdout=layout.output_of(p.name)) for p in lab.proxies},
        multiplier=MultiplierOfRun(
            host=lab.multiplier.host, port=ports.multiplier, mode=lab.multiplier.mode, legs=lab.multiplier.legs,
            replay_port=ports.replay, version=_version([str(multiplier), "--version"]), log=layout.MULTIPLIER_LOG,
            intercept_tls=lab.multiplier.intercept_tls,
            ca_cert=str(ca_dir(lab) / spe_ca.CERT_NAME) if lab.multiplier.intercept_tls else None,
            rope_log=layout.ROPE_LOG, captures=layout.CAPTURES),
        origin=OriginOfRun(
            kind=lab.origin.kind, host=lab.origin.host, port=ports.origin,
            model=str(lab.origin.model) if lab.origin.model else None, think_mean_ms=lab.origin.think_mean_ms,
            think_sd_ms=lab.origin.think_sd_ms, seed=lab.origin.seed, stdout=layout.output_of(layout.ORIGIN),
            tls_port=ports.origin_tls or None,
            tls_ca=f"{layout.ORIGIN_TLS}/{spe_ca.ORIGIN_CA_NAME}" if ports.origin_tls else None),
        workload=asdict(lab.workload),
        noise_pairs=noise_pairs(lab))  # identical proxies (analysis/noise.py)


def origin_url(lab: Lab, ports: Ports) -> str:
    return f"http://{lab.origin.host}:{ports.origin}"


def bring_up(lab: Lab, rundir: Path, group: ProcessGroup, multiplier: Path = MULTIPLIER,
             say=print) -> RunningLab:
    """Start every component in `rundir` (processes join `group`); raises LabError naming what failed."""
    problems = check(lab, multiplier)
    if problems:
        raise LabError("the lab cannot start:\n  " + "\n  ".join(problems))
    with access.umask(lab.share_group):  # what is written meanwhile, and every process started, is private
        return _bring_up(lab, rundir, group, multiplier, say)


def _bring_up(lab: Lab, rundir: Path, group: ProcessGroup, multiplier: Path, say) -> RunningLab:
    access.open_for_services(rundir, lab.share_group)
    run = RunningLab(lab, rundir, group)
    run._write_pids()
    write_run_lab_file(lab, RunDir(rundir).lab_toml)  # the lab as it runs, which may not be its file
    run.ports = assign_ports(lab)
    RunDir(rundir).proxies.mkdir(exist_ok=True)
    access.open_for_services(RunDir(rundir).proxies, lab.share_group)
    start_origin(run)
    start_collector(run)
    for p in lab.proxies:
        start_proxy(run, p.name)
        say(f"spe lab: {p.name} ({p.kind}) on 127.0.0.1:{run.ports.proxies[p.name]}"
            if p.kind != "external" else f"spe lab: {p.name} (external) at {p.host}:{p.port}, its Collector "
            f"port is 127.0.0.1:{run.ports.collector[p.name]}" + _reachability(p.host, p.port))
    start_multiplier(run, multiplier, say)
    topology(run, multiplier).write(rundir)
    return run


def _reachability(host: str, port: int) -> str:
    return "" if port_open(host, port, timeout=2) else " (NOT answering yet)"


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


def command_values(lab: Lab, ports: Ports, duration_s: float, rundir: Path) -> dict[str, str]:
    """What a `command` workload's {placeholders} stand for; also its SPE_* environment variables."""
    host = multiplier_host(lab)
    values = {"proxy": f"{host}:{ports.multiplier}", "proxy_host": host, "proxy_port": str(ports.multiplier),
              "proxy_url": f"http://{host}:{ports.multiplier}", "duration_s": f"{duration_s:g}", "rundir": str(rundir)}
    if lab.origin.kind != "none":
        values |= {"origin": f"{lab.origin.host}:{ports.origin}", "origin_url": origin_url(lab, ports)}
    if ports.origin_tls:
        values["tls_origin"] = f"{lab.origin.host}:{ports.origin_tls}"
    if lab.multiplier.intercept_tls:
        values["ca_cert"] = str(ca_dir(lab) / spe_ca.CERT_NAME)
    return values


def command_env(lab: Lab, ports: Ports, duration_s: float, rundir: Path) -> dict[str, str]:
    """The run's environment plus SPE_<PLACEHOLDER> for each value, and the usual proxy variables naming
    the Multiplier, so that tools which honour them (curl, wget, k6, Python's urllib) go through it."""
    values = command_values(lab, ports, duration_s, rundir)
    proxy_url = values["proxy_url"]
    # The user's PATH: their tool may live anywhere (the lab's own processes get a fixed one).
    return {**_env(rundir), "PATH": os.environ.get("PATH", _env(rundir)["PATH"]),
            **{f"SPE_{k.upper()}": v for k, v in values.items()},
            "http_proxy": proxy_url, "HTTP_PROXY": proxy_url, "https_proxy": proxy_url, "HTTPS_PROXY": proxy_url}


def workload_argv(lab: Lab, ports: Ports, duration_s: float, rundir: Path | None = None) -> list[str] | None:
    """The workload's command line (None for kind "none"): the load client or headless Chromium,
    both through the Multiplier, both asking the synthetic origin by its lab name."""
    w = lab.workload
    proxy = f"{multiplier_host(lab)}:{ports.multiplier}"
    origin = f"{lab.origin.host}:{ports.origin}"
    model = ["--model", str(Path(lab.origin.model).resolve())] if lab.origin.model is not None else []
    conformance = ["--conformance", f"{w.conformance:g}"] if w.conformance else []
    tls = workload_tls_args(lab, ports, rundir) if rundir is not None else []
    users = ["--users", str(w.users), "--think-s", f"{w.think_s:g}", "--session-pages", f"{w.session_pages:g}"] \
        if w.users else []
    if w.kind == "load":
        return [sys.executable, "-m", "spe_tools.workload.load", "--proxy", proxy, "--origin", origin,
                "--rate", f"{w.rate:g}", "--duration", f"{duration_s:g}", "--robots", str(w.clients),
                "--hit-ratio", f"{w.hit_ratio:g}", "--popularity", w.popularity, "--seed", str(w.seed),
                "--json", layout.WORKLOAD_JSON, *conformance, *users, *model, *tls, *w.args]
    if w.kind == "command":
        values = command_values(lab, ports, duration_s, rundir or Path("."))
        return [expand_command(word, values) for word in w.command]
    if w.kind == "browse":
        pages = w.pages or max(1, int(duration_s / max(w.think_s, 0.5)))
        return [sys.executable, "-m", "spe_tools.workload.browse", "--proxy", proxy, "--origin", origin,
                "--pages", str(pages), "--think-s", f"{w.think_s:g}", "--session-pages", f"{w.session_pages:g}",
                "--seed", str(w.seed),
                "--json", layout.WORKLOAD_JSON, *tls, *w.args]
    return None


def start_workload(run: RunningLab, duration_s: float) -> Child | None:
    argv = workload_argv(run.lab, run.ports, duration_s, run.rundir)
    if argv is None:
        return None
    env = command_env(run.lab, run.ports, duration_s, run.rundir) if run.lab.workload.kind == "command" \
        else _env(run.rundir)
    child = run.group.start(layout.WORKLOAD, argv, ready=False, env=env)
    run.record(child)
    return child


def check_workload(workload: Child, rundir: Path, command: bool = False) -> None:
    """A workload that failed, or never finished, makes the run fail: its numbers are not the run's.
    A user's `command` still running at the duration is stopped: the duration is its end."""
    if command and workload.alive():
        workload.stop(deadline_s=10)
        return
    if workload.alive():
        raise LabError(f"the workload did not finish in time (see {RunDir(rundir).output(layout.WORKLOAD)})")
    code = workload.popen.returncode
    if code != 0:
        raise LabError(f"the workload failed with exit code {code} (see {RunDir(rundir).output(layout.WORKLOAD)}):\n"
                       f"{tail(workload.log, 5)}")


def down(rundir: Path, deadline_s: float = 60.0) -> list[str]:
    """Stop a lab started in rundir (by `up` or `run` in another process); returns what was stopped."""
    pid_file = RunDir(rundir).pids
    if not pid_file.exists():
        return []
    state = json.loads(pid_file.read_text())
    # The runner first: it stops its components in order and flushes the Multiplier's log.
    stopped = stop_recorded([state["runner"]], deadline_s=deadline_s, by_group=False) if state.get("runner") else []
    stopped += stop_recorded(list(reversed(state.get("processes", []))))
    pid_file.unlink(missing_ok=True)
    return stopped
