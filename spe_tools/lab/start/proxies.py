"""Each proxy under test: rendered into runs/<run>/proxies/<name>/ by its kind, pointed at its own Collector
port, started, and its companions after it (a prefetch agent, a cache cleaner)."""

from __future__ import annotations

from spe_tools.lab.definition.kinds import KINDS, Context
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.running_lab import RunningLab, lab_env
from spe_tools.process import ProcessError
from spe_tools.rundir.layout import RunDir


def proxy_context(run: RunningLab, name: str) -> Context:
    spec = run.lab.proxy(name)
    origin_ports = [port for port in (run.ports.origin, run.ports.origin_tls) if port]
    addresses = run.ports.addresses
    return Context(spec=spec, dir=RunDir(run.rundir).proxy_dir(name), port=run.ports.proxies[name],
                   collector_port=run.ports.collector[name], origin_host=run.lab.origin.host,
                   origin_ports=origin_ports, host=addresses.of(name), gateway=addresses.gateway(name))


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
        in_place = run.ports.addresses.argv  # inside its namespace, when it is a host of its own
        child = run.group.start(name, in_place(name, kind.argv(ctx)), port=ctx.port, ready=False,
                                env=lab_env(ctx.dir), cwd=ctx.dir, umask=kind.umask)
        run.record(child)
        child.wait_ready(host=ctx.host, deadline_s=kind.ready_deadline_s)
        for companion in kind.companions(ctx):
            helper = run.group.start(companion.name, in_place(name, companion.argv), ready=False, env=lab_env(ctx.dir),
                                     cwd=ctx.dir, ready_line=companion.ready_line)
            run.record(helper)
            helper.wait_ready(deadline_s=kind.ready_deadline_s)
    except ProcessError as e:
        raise LabError(f"proxy {name!r} ({spec.kind}) failed to start: {e}") from e
