"""The Collector of a lab: its named ports (one per proxy under test), what it may fetch and from where, which
CA files it trusts, and its start (spe_tools/collector.py renders and starts it)."""

from __future__ import annotations

from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.definition.multiplier_args import option_values
from spe_tools.lab.errors import LabError
from spe_tools.lab.start.multipliers import lab_multipliers
from spe_tools.lab.start.places import origin_tls_dir
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.process import ProcessError
from spe_tools.rundir import layout


def start_collector(run: RunningLab) -> None:
    multipliers = lab_multipliers(run.lab, run.ports, run.rundir)
    run.replay_holders = [collector.hold_replay_port(m.ports.replay) for m in multipliers]
    try:
        spec = run.lab.collector
        # the patched Collector only refuses destinations outside the lab; stock Squid keeps its own rules
        child = collector.start_collector(
            run.group, layout.COLLECTOR, spec.kind, run.ports.direct, collector_port_names(run.lab, run.ports),
            uncacheable_ttl_s=spec.uncacheable_ttl_s, replay_timing=spec.replay_timing, cache_mb=spec.cache_mb,
            allowed_destinations=lab_destinations(run.lab) if spec.kind == "spe" else (),
            origin_ca_files=origin_ca_files(run), strip_query_terms=strip_query_terms(run.lab),
            replay_port=None if run.lab.other_multipliers else run.ports.replay,
            replay_routes=tuple((m.tag_prefix, m.ports.replay) for m in multipliers if m.tag_prefix),
            connect_ports=connect_ports(run.lab, run.ports),
            tag_to_origin=run.lab.origin.kind == "har",
            port_limits=tuple((p.name, p.collector_limit_kbps) for p in run.lab.proxies if p.collector_limit_kbps),
            **placed_options(run.lab, run.ports))
    except (ProcessError, OSError) as e:
        raise LabError(f"the Collector ({run.lab.collector.kind}) failed to start: {e}") from e
    run.record(child)


def collector_port_names(lab: Lab, ports: Ports) -> dict[str, int]:
    """The proxy_ports argument of the Collector: '<name>@accel' for proxies that speak origin-form."""
    return {(f"{p.name}@accel" if KINDS[p.kind].accel else p.name): ports.collector[p.name] for p in lab.proxies}


def placed_options(lab: Lab, ports: Ports) -> dict:
    """Where the Collector meets the pieces on hosts of their own ([network]): each such proxy's port on the other
    end of its link, those hosts among its clients, and the origin's name resolved to its host's address."""
    addresses = ports.addresses
    return {"port_hosts": tuple((name, host.gateway) for name, host in addresses.hosts.items()
                                if name != layout.ORIGIN),
            "client_networks": addresses.client_networks(),
            "hosts": ((lab.origin.host, addresses.of(layout.ORIGIN)),) if layout.ORIGIN in addresses.hosts else ()}


def lab_destinations(lab: Lab) -> tuple[str, ...]:
    """Where the Collector may fetch from: with the lab's own origin (synthetic or HAR), only the lab itself
    (Chromium's own background requests are refused there); with live traffic (origin "none"), anywhere."""
    if lab.origin.kind == "none":
        return ()
    return tuple(dict.fromkeys((lab.origin.host, "localhost", "127.0.0.1")))


def strip_query_terms(lab: Lab) -> bool:
    """Whether the Collector's access.log leaves out URLs' queries: on with live traffic (origin "none": real
    users' queries carry search terms, session ids, tokens), off with the lab's own origin (the synthetic one's
    queries are the lab's: think, size, cc...; a HAR origin's are those of a recording the user chose)."""
    return lab.origin.kind == "none"


def connect_ports(lab: Lab, ports: Ports) -> tuple[int, ...]:
    """The ports CONNECT may reach, the Multipliers' --connect-port lists (multiplier_argv): 443, with
    interception also the HTTPS origin's port, and any --connect-port in a [multiplier]'s extra_args (which
    replaces the default 443 when it is the only one), or else in the --config file it names. The Collector
    refuses CONNECT to any other."""
    # The lab's own flags first (multiplier_argv's): with them, as with any flag, a --config file's lines do not count.
    tls = [f"--connect-port={port}" for port in (443, ports.origin_tls or 443)] if lab.multiplier.intercept_tls else []
    given = [arg for m in lab.multipliers for arg in m.extra_args]
    listed = [int(v) for v in option_values([*tls, *given], "connect-port") if v.isdigit()]
    return tuple(dict.fromkeys(listed or [443]))


def origin_ca_files(run: RunningLab) -> tuple[str, ...]:
    """The lab's CA files for https origins, and the synthetic origin's test CA when it serves HTTPS."""
    files = [str(Path(path).resolve()) for path in run.lab.collector.origin_ca_files]
    if run.ports.origin_tls:
        files.append(str(origin_tls_dir(run.rundir) / spe_ca.ORIGIN_CA_NAME))
    return tuple(files)
