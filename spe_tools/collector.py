"""The Collector: render its squid.conf from configs/collector/squid.conf.in and start it.

kind "spe"   = Squid 5.7 with collector-patches/ (build/collector/sbin/squid, built by
               collector-patches/build, which ./spe setup runs)
kind "squid" = Debian's stock /usr/sbin/squid with the same configuration minus the
               collector_* directives: a baseline, and a stand-in where the patched one is missing.

Every proxy under test gets its own Collector port (`http_port ... name=<proxy>`); a name ending
in "@accel" gets an accelerator port (`accel vhost allow-direct`) for proxies that send
origin-form requests (Varnish, nginx), named without the suffix.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from spe_tools.config_template import render_text
from spe_tools.process import Child, ProcessGroup
from spe_tools.rundir.access_log import logformat
from spe_tools.squid import run_squid

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "configs/collector/squid.conf.in"
BINARIES = {"spe": ROOT / "build/collector/sbin/squid", "squid": Path("/usr/sbin/squid")}
ACCEL_SUFFIX = "@accel"


@dataclass(frozen=True)
class CollectorOptions:
    """The knobs a lab file sets (docs/collector.md explains each)."""

    uncacheable_ttl_s: int = 180
    replay_timing: bool = True
    key_cookie: bool = True
    cache_mb: int = 256
    max_object_kb: int = 4096
    allowed_destinations: tuple[str, ...] = ()  # empty: any destination
    origin_ca_files: tuple[str, ...] = ()  # trusted for https origins, beside the system store
    port_limits: tuple[tuple[str, int], ...] = ()  # (proxy port name, KiB/s): a delay pool each
    replay_port: int | None = None  # the Multiplier's --replay-listen port: the proxies' unsafe copies go there
    # Several Multipliers: (--tag-prefix, --replay-listen port) of each; each copy goes to its own Multiplier's
    replay_routes: tuple[tuple[str, int], ...] = ()
    strip_query_terms: bool = False  # log URLs without their query (live traffic: queries hold private data)
    connect_ports: tuple[int, ...] = (443,)  # CONNECT only to these: the Multiplier's --connect-port list
    tag_to_origin: bool = False  # X-SPE-Request reaches the origin (the lab's HAR origin: one reply per tag)
    # Proxies on hosts of their own ([network]): (port name, address) where each one's port listens, the other
    # end of its link; the rest listen on the loopback.
    port_hosts: tuple[tuple[str, str], ...] = ()
    client_networks: tuple[str, ...] = ("127.0.0.0/8",)  # who may use it: the loopback, and those hosts
    hosts: tuple[tuple[str, str], ...] = ()  # (name, address) it resolves by itself: an origin on a host of its own


def binary(kind: str) -> Path:
    if kind not in BINARIES:
        raise ValueError(f"unknown Collector kind {kind!r}: use one of {', '.join(BINARIES)}")
    return BINARIES[kind]


def port_lines(proxy_ports: dict[str, int], port_hosts: tuple[tuple[str, str], ...] = ()) -> str:
    hosts = dict(port_hosts)
    lines = []
    for name, port in proxy_ports.items():
        plain = name.removesuffix(ACCEL_SUFFIX)
        address = f"{hosts.get(plain, '127.0.0.1')}:{port}"
        if name.endswith(ACCEL_SUFFIX):
            lines.append(f"http_port {address} accel vhost allow-direct name={plain}")
        else:
            lines.append(f"http_port {address} name={name}")
    return "".join(line + "\n" for line in lines)


def hosts_file(directory: Path, hosts: tuple[tuple[str, str], ...]) -> str:
    """The Collector's own hosts file, read before any resolver: loopback origins are named "localhost" and listen
    on IPv4 only (Debian's /etc/hosts also names ::1 localhost, where Squid would fetch first and answer 503), and
    the lab may place its origin on a host of its own ([network]: `hosts`, its name and address)."""
    names = {"localhost": "127.0.0.1", **dict(hosts)}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hosts"
    path.write_text("".join(f"{address} {name}\n" for name, address in names.items()))
    return f"hosts_file {path}\n"


def collector_directives(kind: str, options: CollectorOptions) -> str:
    if kind != "spe":
        return "# (stock Squid: no collector_* directives)\n"
    on_off = {True: "on", False: "off"}
    return (f"collector_replay_timing {on_off[options.replay_timing]}\n"
            f"collector_uncacheable_ttl {int(options.uncacheable_ttl_s)} seconds\n"
            f"collector_key_cookie {on_off[options.key_cookie]}\n")


def destination_rules(allowed: tuple[str, ...]) -> str:
    """Refuse destinations outside the lab (e.g. Chromium's own background requests)."""
    if not allowed:
        return ""
    # and never ask the machine's resolver (which is off the loopback) about anything
    return (f"acl spe_destinations dstdomain -n {' '.join(allowed)}\n"
            "http_access deny !spe_destinations\n"
            "dns_nameservers 127.0.0.1\n")


def connect_rules(allowed: tuple[int, ...], own_ports: tuple[int, ...]) -> str:
    """CONNECT only to the ports the Multiplier allows (its --connect-port list) and never to the Collector's own
    ports: Squid's classic `http_access deny CONNECT !SSL_ports`. The Multiplier refuses a target such as
    `127.0.0.1:22:443` (Squid reads port 22 there); this also refuses one that reaches the Collector by
    another way, and a CONNECT sent to it directly."""
    for port in (*allowed, *own_ports):
        if not 0 < int(port) < 65536:
            raise ValueError(f"CONNECT port {port} is not 1-65535")
    lines = ["acl spe_connect method CONNECT"]
    if allowed:
        lines += [f"acl spe_connect_ports port {' '.join(str(int(p)) for p in dict.fromkeys(allowed))}",
                  "http_access deny spe_connect !spe_connect_ports"]
    else:
        lines += ["http_access deny spe_connect"]
    if own_ports:
        lines += [f"acl spe_collector_ports port {' '.join(str(int(p)) for p in dict.fromkeys(own_ports))}",
                  "http_access deny spe_connect spe_collector_ports"]
    return "\n".join(lines) + "\n"


def port_limit_rules(limits: tuple[tuple[str, int], ...]) -> str:
    """One Squid delay pool per limited proxy port: what the Collector sends on that port is paced to its
    KiB/s (a one-second bucket), so a proxy that floods it (a prefetcher) cannot starve the direct port,
    which is never limited. A pool paces the reads from the origin for that port's requests too."""
    if not limits:
        return ""
    lines = [f"delay_pools {len(limits)}"]
    for pool, (name, kib) in enumerate(limits, start=1):
        rate = kib * 1024
        lines += [f"acl spe_limited_{pool} myportname {name}", f"delay_class {pool} 1",
                  f"delay_parameters {pool} {rate}/{rate}", f"delay_access {pool} allow spe_limited_{pool}",
                  f"delay_access {pool} deny all"]
    return "\n".join(lines) + "\n"


def unsafe_replay_rules(replay_port: int | None) -> str:
    """Route every unsafe request on a proxy's port to the Multiplier's replay port, never to the origin.

    The client's own request (on "direct") goes to the origin once; each proxy's copy of it arrives on
    that proxy's port and goes to the replay port (a parent, never direct), which answers it from the
    client's reply, tag and body checked, or refuses it with 502. Safe methods and "direct" always go
    direct: the replay port is never asked for anything else. The tag travels to the replay port only.
    Without a replay port, the Multiplier sends the proxies no unsafe request at all.
    """
    if replay_port is None:
        return "# (no replay port: the Multiplier withholds unsafe requests from the proxies)\n"
    return (
        "acl spe_safe_methods method GET HEAD OPTIONS TRACE\n"
        f"cache_peer 127.0.0.1 parent {int(replay_port)} 0 no-query no-digest no-netdb-exchange "
        "default name=spe_replay\n"
        "cache_peer_access spe_replay deny spe_direct_port\n"
        "cache_peer_access spe_replay deny spe_safe_methods\n"
        "cache_peer_access spe_replay allow all\n"
        "always_direct allow spe_direct_port\n"
        "always_direct allow spe_safe_methods\n"
        "never_direct allow !spe_direct_port !spe_safe_methods\n"
        "request_header_access X-SPE-Request allow !spe_direct_port !spe_safe_methods\n")


def tagged_replay_rules(routes: tuple[tuple[str, int], ...]) -> str:
    """unsafe_replay_rules for a Collector shared by several Multipliers: one replay parent each, chosen by the
    prefix of the request tag (each Multiplier's --tag-prefix), so a proxy's copy of an unsafe request goes to the
    Multiplier that sent it, the one holding its client's reply. A copy with no known prefix has no parent: the
    Collector answers it with an error and the origin never sees it."""
    lines = ["acl spe_safe_methods method GET HEAD OPTIONS TRACE"]
    for prefix, port in routes:
        if not prefix.isalnum():
            raise ValueError(f"tag prefix {prefix!r}: letters and digits only")
        peer = f"spe_replay_{prefix}"
        lines += [f"acl spe_tag_{prefix} req_header X-SPE-Request ^{prefix}\\.",
                  f"cache_peer 127.0.0.1 parent {int(port)} 0 no-query no-digest no-netdb-exchange name={peer}",
                  f"cache_peer_access {peer} deny spe_direct_port", f"cache_peer_access {peer} deny spe_safe_methods",
                  f"cache_peer_access {peer} allow spe_tag_{prefix}", f"cache_peer_access {peer} deny all"]
    lines += ["always_direct allow spe_direct_port", "always_direct allow spe_safe_methods",
              "never_direct allow !spe_direct_port !spe_safe_methods",
              "request_header_access X-SPE-Request allow !spe_direct_port !spe_safe_methods"]
    return "\n".join(lines) + "\n"


def hold_replay_port(port: int) -> socket.socket:
    """A socket listening on the replay port until the Multiplier, started after the Collector, takes it over
    (close it just before). Squid probes each parent once when it starts and sends nothing to one it could
    not reach until it probes again, which only the first request needing it triggers: that request would
    fail (502, no route). Held open, the start-up probe finds the port."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen(16)
    return holder


def tls_outgoing(ca_files: tuple[str, ...]) -> str:
    """How the Collector verifies https origins: the system store plus the lab's CA files.

    A failed verification is never waved through (sslproxy_cert_error's default, deny): the client
    gets the Collector's error reply naming the reason.
    """
    words = ["tls_outgoing_options", "default-ca=on", "min-version=1.2"]
    for path in ca_files:
        if any(c.isspace() for c in str(path)):
            raise ValueError(f"origin CA file {path}: Squid cannot name a path with spaces in tls_outgoing_options")
        words.append(f"cafile={path}")
    return " ".join(words) + "\n"


def collector_config(kind: str, directory: Path, client_port: int, proxy_ports: dict[str, int], *,
                     name: str = "spe-collector", options: CollectorOptions | None = None, **overrides) -> str:
    """squid.conf text for a Collector writing its logs and pid file into `directory`."""
    options = options or CollectorOptions()
    if overrides:
        options = CollectorOptions(**{**options.__dict__, **overrides})
    binary(kind)
    return render_text(TEMPLATE.read_text(), dict(
        name=name, dir=directory, client_port=client_port,
        proxy_ports=port_lines(proxy_ports, tuple(options.port_hosts)),
        client_networks=" ".join(options.client_networks), hosts_file=hosts_file(directory, tuple(options.hosts)),
        connect_rules=connect_rules(tuple(options.connect_ports), (client_port, *proxy_ports.values())),
        cache_mb=options.cache_mb, max_object_kb=options.max_object_kb,
        logformat=logformat(patched=kind == "spe"),
        # the patched build leaves out ICMP and HTCP; Debian's Squid must be told not to use them
        stock_only="" if kind == "spe" else "netdb_filename none\nhtcp_port 0\npinger_enable off\n",
        collector_directives=collector_directives(kind, options),
        tls_outgoing=tls_outgoing(tuple(options.origin_ca_files)),
        port_limits=port_limit_rules(tuple(options.port_limits)),
        unsafe_replay=(tagged_replay_rules(options.replay_routes) if options.replay_routes
                       else unsafe_replay_rules(options.replay_port)),
        tag_to_origin=("request_header_access X-SPE-Request allow all\n" if options.tag_to_origin
                       else "# (the origin is not the lab's: it never sees the tag)\n"),
        strip_query_terms="on" if options.strip_query_terms else "off",
        destination_rules=destination_rules(tuple(options.allowed_destinations))), str(TEMPLATE.relative_to(ROOT)))


def start_collector(group: ProcessGroup, name: str, kind: str, client_port: int, proxy_ports: dict[str, int],
                    **options) -> Child:
    """Render the configuration and the hosts file into group.workdir/name and start the Collector in the
    foreground."""
    exe = binary(kind)
    if not exe.exists():
        hint = "run ./spe setup (it builds the patched Collector)" if kind == "spe" else "install Debian's squid"
        raise FileNotFoundError(f"Collector binary {exe} not found: {hint}")
    conf = collector_config(kind, group.workdir / name, client_port, proxy_ports, name=name, **options)
    return run_squid(group, name, exe, conf, client_port, deadline_s=20)


def missing(kind: str) -> list[str]:
    """Why a Collector of this kind cannot start on this machine (empty if it can)."""
    exe = binary(kind)
    if exe.exists():
        return []
    if kind == "spe":
        return [f"the patched Collector {exe.relative_to(ROOT)} is not built "
                "(use [collector] kind = \"squid\" for Debian's stock Squid meanwhile)"]
    return [f"{exe} is not installed (Debian package squid; ./spe setup installs it)"]


def _build_info(kind: str) -> str:
    """`squid -v`: the version and the configure options."""
    try:
        return subprocess.run([str(binary(kind)), "-v"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def version(kind: str) -> str:
    match = re.search(r"Version (\S+)", _build_info(kind))
    return match.group(1) if match else "unknown"


def has_delay_pools(kind: str) -> bool:
    """Whether this Collector can pace a port (without delay pools Squid ignores delay_pools silently)."""
    return "--enable-delay-pools" in _build_info(kind)


def parse_check(kind: str, conf: Path) -> tuple[int, str]:
    """`squid -k parse` on a configuration: (exit code, output)."""
    result = subprocess.run([str(binary(kind)), "-k", "parse", "-f", str(conf)], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "LC_ALL": "C"})
    return result.returncode, result.stdout + result.stderr
