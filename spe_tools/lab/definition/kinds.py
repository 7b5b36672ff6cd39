"""Proxy kinds: how each proxy under test is configured, started, stopped and named.

One `Kind` per proxy: the lab-file keys it takes (`options`, each with its default and range), the
programs it needs (and the Debian package that has them), its config files rendered from
configs/proxies/<kind>/, its command line, the user it runs as when the lab
runs as root, and whether it talks origin-form to its parent (then its Collector port is an
accelerator port). Measured behaviour and traps of each: the team's proxy-lab notes.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools.config_template import render_file, render_text
from spe_tools.lab.definition.options import Option
from spe_tools.lab.definition.proxy_spec import (
    ADDRESS,
    CACHE_MB,
    CACHE_PORTS,
    HAPROXY_CACHE_MB,
    MAX_AGE_S,
    PORT,
    PREFETCH,
    PREFETCH_BUDGET_KB,
    PREFETCH_COUNT,
    PREFETCH_DEPTH,
    PREFETCH_PATTERN,
    PREFETCH_RATE,
    TS_CACHE_MB,
    ProxySpec,
)
from spe_tools.lab.network.addresses import LOOPBACK
from spe_tools.rundir.access import hand_over
from spe_tools.rundir.layout import PREFETCH_AGENT_LOG
from spe_tools.squid import service_name
from spe_tools.squid_prefetch.logline import LOGFORMAT

ROOT = Path(__file__).resolve().parents[3]
# SPE_MULTIPLIER picks another build (./spe test runs the lab tests on the ASan one).
MULTIPLIER = ROOT / os.environ.get("SPE_MULTIPLIER", "build/release/multiplier/spe-multiplier")

@dataclass(frozen=True)
class Companion:
    """A second process of a kind (started once the proxy answers, stopped before it): its name in the run
    (its output is <name>.out), its command line, and the line it logs when ready."""

    name: str
    argv: list[str]
    ready_line: str


@dataclass
class Context:
    """What one proxy's config needs to know about this run."""

    spec: ProxySpec
    dir: Path  # the proxy's own directory in the run directory
    port: int
    collector_port: int
    origin_host: str
    origin_ports: list[int] = field(default_factory=list)
    # Where it listens, and the other end of its link: where it reaches its Collector port and where the
    # Multiplier's connections come from. Both the loopback unless it is a host of its own ([network]).
    host: str = LOOPBACK
    gateway: str = LOOPBACK
    as_root: bool = field(default_factory=lambda: os.geteuid() == 0)
    multiplier: Path = MULTIPLIER

    def values(self, **extra: object) -> dict[str, object]:
        s = self.spec
        return {"name": s.name, "dir": self.dir, "host": self.host, "port": self.port, "gateway": self.gateway,
                "collector_port": self.collector_port,
                "cache_mb": s.cache_mb, "origin_host": self.origin_host,
                "origin_port": self.origin_ports[0] if self.origin_ports else 80, **extra}


class Kind:
    """Base: a proxy that runs from one rendered config file in its directory."""

    name = ""
    options: tuple[Option, ...] = (PORT, CACHE_MB)  # its [[proxy]] keys besides name, kind and collector_port
    package: str | None = None
    programs: tuple[str, ...] = ()
    accel = False  # forwards origin-form requests: needs an accelerator port on the Collector
    caches = True
    # Its disk cache, relative to its directory (as its config template names it): the report's disk cost
    # (spe_tools/lab/watch/proxy_costs.py). None: it caches in RAM only, or not at all.
    cache_dir: str | None = None
    user: str | None = None  # the Debian user it runs as when the lab runs as root
    version_args: tuple[str, ...] = ("-v",)
    version_re = r"(\d+\.\d+(?:\.\d+)?)"
    ready_deadline_s = 30.0
    umask: int | None = None  # its own, where the lab's (077, spe_tools/rundir/access.py) would stop it

    @property
    def keys(self) -> set[str]:
        return {option.key for option in self.options}

    def run_user(self, ctx: Context) -> str | None:
        return self.user if ctx.as_root else None

    def render(self, ctx: Context) -> list[Path]:
        raise NotImplementedError

    def argv(self, ctx: Context) -> list[str]:
        raise NotImplementedError

    def prepare(self, ctx: Context) -> None:
        """Hand the directory to the user the proxy drops to (root only): its own, 0700 (access.py)."""
        user = self.run_user(ctx)
        if user is None:
            return
        hand_over(ctx.dir, user)

    def missing(self, multiplier: Path = MULTIPLIER) -> list[str]:
        """Programs (or users) this kind needs that are not on this machine, as messages."""
        problems = [f"{p} is not installed" + (f" (Debian package {self.package}; ./spe setup installs it)"
                                                if self.package else "")
                    for p in self.programs if not Path(p).exists()]
        if self.user and os.geteuid() == 0 and not problems:
            try:
                pwd.getpwnam(self.user)
            except KeyError:
                problems.append(f"user {self.user!r} does not exist (the {self.package} package creates it)")
        return problems

    def version(self) -> str:
        if not self.programs or not Path(self.programs[0]).exists():
            return "unknown"
        try:
            out = subprocess.run([self.programs[0], *self.version_args], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        match = re.search(self.version_re, out.stdout + out.stderr)
        return match.group(1) if match else "unknown"

    def companions(self, ctx: Context) -> list[Companion]:
        """Processes the proxy needs beside its own (a cache cleaner, a prefetch agent)."""
        return []


def _user_line(ctx: Context, user: str | None, template: str) -> str:
    return render_text(template, {"user": user}) if user and ctx.as_root else "# runs as the invoking user"


class Squid(Kind):
    name, package, programs, user = "squid", "squid", ("/usr/sbin/squid",), "proxy"

    def clients(self, ctx: Context) -> tuple[str, ...]:
        return (f"{ctx.gateway}/32",)  # the Multiplier

    def render(self, ctx: Context) -> list[Path]:
        line = _user_line(ctx, self.user, "cache_effective_user {{user}}")
        values = ctx.values(user_line=line, client_addresses=" ".join(self.clients(ctx)),
                            access_log=self.access_log(ctx))
        return [render_file("squid", "squid.conf", ctx.dir / "squid.conf", values)]

    def access_log(self, ctx: Context) -> str:
        return f"access_log stdio:{ctx.dir}/access.log squid"

    def argv(self, ctx: Context) -> list[str]:
        return [self.programs[0], "-n", service_name(ctx.spec.name), "-N", "-d1", "-f", str(ctx.dir / "squid.conf")]


class SquidPrefetch(Squid):
    """Squid and a link-prefetching agent that follows its access log and warms it with what client pages
    embed and link to (spe_tools/squid_prefetch): the design of Debian's former squid-prefetch package."""

    name = "squid-prefetch"
    options = (PORT, CACHE_MB, PREFETCH_DEPTH, PREFETCH_RATE, PREFETCH_BUDGET_KB)
    agent_address = "127.0.0.2"  # the agent fetches from here: the access log tells its lines from the clients'

    def clients(self, ctx: Context) -> tuple[str, ...]:
        return (*super().clients(ctx), f"{self.agent_address}/32")

    def access_log(self, ctx: Context) -> str:
        return f"logformat prefetch_agent {LOGFORMAT}\naccess_log stdio:{ctx.dir}/access.log prefetch_agent"

    def companions(self, ctx: Context) -> list[Companion]:
        s = ctx.spec
        argv = [sys.executable, "-m", "spe_tools.squid_prefetch", "--proxy", f"{ctx.host}:{ctx.port}",
                "--access-log", str(ctx.dir / "access.log"), "--source-address", self.agent_address,
                "--depth", str(s.prefetch_depth), "--rate", f"{s.prefetch_rate:g}",
                "--budget-kb", str(s.prefetch_budget_kb), "--log", str(ctx.dir / PREFETCH_AGENT_LOG)]
        return [Companion(f"{s.name}.agent", argv, "squid-prefetch: following")]


class TrafficServer(Kind):
    name, package, programs, user = "trafficserver", "trafficserver", ("/usr/bin/traffic_server",), "trafficserver"
    options = (PORT, TS_CACHE_MB, PREFETCH, PREFETCH_COUNT, PREFETCH_PATTERN)
    version_args = ("-V",)
    cache_dir = "rr/cache"  # storage.config: one file of cache_mb
    EMPTY = ("cache.config", "hosting.config", "volume.config", "socks.config", "splitdns.config", "sni.yaml",
             "ssl_multicert.config", "strategies.yaml")

    def render(self, ctx: Context) -> list[Path]:
        etc = ctx.dir / "rr" / "etc"
        for sub in ("etc", "run", "log", "cache", "var"):
            (ctx.dir / "rr" / sub).mkdir(parents=True, exist_ok=True)
        user = self.run_user(ctx) or "#-1"  # "#-1": keep the invoking user
        values = ctx.values(user=user, ram_cache_bytes=ctx.spec.cache_mb * 1024 * 1024,
                            prefetch_pattern=ctx.spec.prefetch_pattern, prefetch_count=ctx.spec.prefetch_count)
        files = [render_file("trafficserver", "runroot.yaml", ctx.dir / "rr" / "runroot.yaml", values)]
        for name in ("records.config", "parent.config", "storage.config", "logging.yaml", "plugin.config",
                     "ip_allow.yaml"):
            files.append(render_file("trafficserver", name, etc / name, values))
        remap = "remap-prefetch.config" if ctx.spec.prefetch else "remap.config"
        files.append(render_file("trafficserver", remap, etc / "remap.config", values))
        for name in self.EMPTY:
            (etc / name).write_text("")
        return files

    def argv(self, ctx: Context) -> list[str]:
        return [self.programs[0], f"--run-root={ctx.dir / 'rr' / 'runroot.yaml'}"]

    def prepare(self, ctx: Context) -> None:
        (ctx.dir / "rr" / "run" / "records.snap").unlink(missing_ok=True)  # a stale "parent down" lives there
        super().prepare(ctx)


class Varnish(Kind):
    name, package, programs, user = "varnish", "varnish", ("/usr/sbin/varnishd",), "varnish"
    accel = True
    version_args = ("-V",)
    # its users share their files through group varnish (the compiler writes, vcache loads): group-readable
    umask = 0o027

    def render(self, ctx: Context) -> list[Path]:
        return [render_file("varnish", "default.vcl", ctx.dir / "default.vcl", ctx.values())]

    def argv(self, ctx: Context) -> list[str]:
        # -T with port 0: the management port is not needed, but a fixed default (6082) could clash.
        argv = [self.programs[0], "-F", "-a", f"{ctx.host}:{ctx.port}", "-T", "127.0.0.1:0",
                "-f", str(ctx.dir / "default.vcl"), "-n", str(ctx.dir / "work"),
                "-s", f"malloc,{ctx.spec.cache_mb}m", "-P", str(ctx.dir / "varnishd.pid")]
        return argv if ctx.as_root else [*argv, "-j", "none"]

    def prepare(self, ctx: Context) -> None:
        """As root, varnishd runs its own jail and sets up -n itself: its compiler (user varnish) reads the
        VCL here, its worker (vcache, group varnish) uses the work directory: theirs, 0750 to group varnish."""
        user = self.run_user(ctx)
        if user is not None:
            hand_over(ctx.dir, user, service_group=True)


class Apache(Kind):
    """mod_cache_disk has no size limit of its own: Apache's htcacheclean keeps the disk cache under cache_mb,
    run every CLEAN_EVERY_S as a companion (as an operator runs it from cron or with -d)."""

    name, package, programs, user = "apache", "apache2", ("/usr/sbin/apache2", "/usr/bin/htcacheclean"), "www-data"
    options = (PORT, CACHE_MB, CACHE_PORTS)
    cache_dir = "cache"  # httpd.conf's CacheRoot
    CLEAN_EVERY_S = 5

    def render(self, ctx: Context) -> list[Path]:
        for sub in ("run", "logs", "cache"):
            (ctx.dir / sub).mkdir(parents=True, exist_ok=True)
        ports = sorted(set(ctx.origin_ports) | set(ctx.spec.cache_ports))
        enable = "\n".join(f"CacheEnable disk http://:{p}/" for p in ports)
        line = _user_line(ctx, self.user, "User {{user}}\nGroup {{user}}")
        return [render_file("apache", "httpd.conf", ctx.dir / "httpd.conf",
                            ctx.values(user_line=line, cache_enable=enable, parent_lines=self.parent_lines(ctx)))]

    def parent_lines(self, ctx: Context) -> str:
        """A forward proxy: every request, absolute-form, to its Collector port as its parent proxy."""
        return f"ProxyRequests On\nProxyRemote * http://{ctx.gateway}:{ctx.collector_port}"

    def argv(self, ctx: Context) -> list[str]:
        return [self.programs[0], "-f", str(ctx.dir / "httpd.conf"), "-DFOREGROUND"]

    def companions(self, ctx: Context) -> list[Companion]:
        # -t: empty directories go too; without -d it runs once, so the loop is ours and stops with the lab
        clean = shlex.join([self.programs[1], "-t", "-p", str(ctx.dir / "cache"), "-l", f"{ctx.spec.cache_mb}M"])
        every = self.CLEAN_EVERY_S
        script = f"echo 'htcacheclean: every {every} s'; while :; do {clean}; sleep {every}; done"
        return [Companion(f"{ctx.spec.name}.htcacheclean", ["/bin/sh", "-c", script], "htcacheclean: every")]


class ApacheGateway(Apache):
    """Apache as a gateway (a reverse proxy in front of the origin, as it is most often deployed), the same
    mod_cache_disk: the request-target's authority names the origin, the path goes to its Collector port
    (an accelerator port) with the client's Host. A gateway's cache answers before mod_proxy marks the
    request as proxied, so Apache writes a Date of its own on every reuse (RFC 9110 6.6.1 has a cache keep
    the stored one): a behaviour the forward kind does not show."""

    name = "apache-gateway"
    accel = True

    def parent_lines(self, ctx: Context) -> str:
        # UseCanonicalName Off: the cache key's port is the one the request names (each origin port its own
        # copies), not the port Apache listens on.
        return (f"ProxyPass / http://{ctx.gateway}:{ctx.collector_port}/\nProxyPreserveHost On\n"
                "UseCanonicalName Off")


class Nginx(Kind):
    name, package, programs, user = "nginx", "nginx-light", ("/usr/sbin/nginx",), "www-data"
    accel = True
    cache_dir = "cache"  # nginx.conf's proxy_cache_path

    def render(self, ctx: Context) -> list[Path]:
        for sub in ("tmp", "cache"):
            (ctx.dir / sub).mkdir(parents=True, exist_ok=True)
        line = _user_line(ctx, self.user, "user {{user}};")
        return [render_file("nginx", "nginx.conf", ctx.dir / "nginx.conf", ctx.values(user_line=line))]

    def argv(self, ctx: Context) -> list[str]:
        # -e: without it nginx opens its compiled-in /var/log/nginx/error.log before reading the config.
        return [self.programs[0], "-p", str(ctx.dir), "-c", str(ctx.dir / "nginx.conf"),
                "-e", str(ctx.dir / "error.log"), "-g", "daemon off;"]


class HAProxy(Kind):
    """HAProxy's built-in cache (a `cache` section, in RAM) in front of one server, its Collector port. It
    forwards an absolute-form request line as received, so that port is an ordinary proxy port."""

    name, package, programs, user = "haproxy", "haproxy", ("/usr/sbin/haproxy",), "haproxy"
    options = (PORT, HAPROXY_CACHE_MB, MAX_AGE_S)
    MAX_OBJECT_BYTES = 4 * 1024 * 1024  # as Squid's maximum_object_size_in_memory in the lab

    def render(self, ctx: Context) -> list[Path]:
        line = _user_line(ctx, self.user, "user {{user}}\n    group {{user}}")
        # HAProxy refuses a max-object-size above half the cache
        max_object = min(self.MAX_OBJECT_BYTES, ctx.spec.cache_mb * 1024 * 1024 // 2)
        values = ctx.values(user_line=line, max_object_bytes=max_object, max_age_s=ctx.spec.max_age_s)
        return [render_file("haproxy", "haproxy.cfg", ctx.dir / "haproxy.cfg", values)]

    def argv(self, ctx: Context) -> list[str]:
        # -db: in the foreground, one process (no daemon, no master): the lab's process group supervises it
        return [self.programs[0], "-db", "-f", str(ctx.dir / "haproxy.cfg")]


class Tinyproxy(Kind):
    name, package, programs, user = "tinyproxy", "tinyproxy", ("/usr/bin/tinyproxy",), "tinyproxy"
    options, caches = (PORT,), False

    def render(self, ctx: Context) -> list[Path]:
        line = _user_line(ctx, self.user, "User {{user}}\nGroup {{user}}")
        return [render_file("tinyproxy", "tinyproxy.conf", ctx.dir / "tinyproxy.conf", ctx.values(user_line=line))]

    def argv(self, ctx: Context) -> list[str]:
        return [self.programs[0], "-d", "-c", str(ctx.dir / "tinyproxy.conf")]


class Privoxy(Kind):
    name, package, programs, user = "privoxy", "privoxy", ("/usr/sbin/privoxy",), "privoxy"
    options, caches = (PORT,), False
    version_args = ("--version",)

    def render(self, ctx: Context) -> list[Path]:
        return [render_file("privoxy", "privoxy.conf", ctx.dir / "privoxy.conf", ctx.values())]

    def argv(self, ctx: Context) -> list[str]:
        user = self.run_user(ctx)
        return [self.programs[0], "--no-daemon", "--pidfile", str(ctx.dir / "privoxy.pid"),
                *(["--user", user] if user else []), str(ctx.dir / "privoxy.conf")]


class Dummy(Kind):
    """The Multiplier's --dummy mode: a pass-through to its Collector port, the no-cache baseline."""

    name, options, caches = "dummy", (PORT,), False
    version_args = ("--version",)

    @property
    def programs(self) -> tuple[str, ...]:  # type: ignore[override]
        return (str(MULTIPLIER),)

    def missing(self, multiplier: Path = MULTIPLIER) -> list[str]:
        return [] if multiplier.exists() else [f"{multiplier} is not built (./spe setup builds it)"]

    def render(self, ctx: Context) -> list[Path]:
        return []

    def argv(self, ctx: Context) -> list[str]:
        # --allow: on a host of its own, the Multiplier's connections come from the other end of its link
        allow = ["--allow", f"{ctx.gateway}/32"] if ctx.gateway != LOOPBACK else []
        return [str(ctx.multiplier), "--dummy", "--parent", f"{ctx.gateway}:{ctx.collector_port}",
                "--listen", f"{ctx.host}:{ctx.port}", "--via-name", ctx.spec.name, *allow]

    def prepare(self, ctx: Context) -> None:
        pass


class External(Kind):
    """A proxy the user runs (maybe on another host): the lab only gives it a Collector port."""

    name, options, caches = "external", (ADDRESS,), True

    def render(self, ctx: Context) -> list[Path]:
        return []

    def argv(self, ctx: Context) -> list[str]:
        return []

    def version(self) -> str:
        return "external"

    def prepare(self, ctx: Context) -> None:
        pass


KINDS: dict[str, Kind] = {k.name: k for k in (Squid(), SquidPrefetch(), TrafficServer(), Varnish(), Apache(),
                                               ApacheGateway(), Nginx(),
                                               HAProxy(), Tinyproxy(), Privoxy(), Dummy(), External())}

