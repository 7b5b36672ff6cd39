"""A [multiplier] table of the lab file: each key declared once, as a field of MultiplierSpec with its default, its
range or choices and the Multiplier flag it becomes; the reader (read_multiplier) and the flags the lab passes
(multiplier_flags) are made from that one table, as the Multiplier's own flags are from its flag table
(multiplier/src/core/flag_table.hpp). Keys the lab turns into flags of its own making (listen, name, interception,
metrics, extra_args) are read here and passed by spe_tools/lab/start/multiplier.py."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from spe_tools.lab.definition.multiplier_args import with_config_resolved
from spe_tools.lab.definition.options import LabFileError, Table, key, parse_address, read_fields, relative_to_file

MULTIPLIER_MODES = ("sequential", "concurrent")
MULTIPLIER_LEGS = ("parallel", "serial")


def _fanout_threads(t: Table, name: str) -> int | None:
    """A count, or "auto" (docs/lab-file.md's default, the Multiplier's own): None, so that it chooses."""
    value = t.get(name, (int, str))
    if value is None or value == "auto":
        return None
    if isinstance(value, str):
        raise LabFileError(f'{t.where}.{name}: expected an integer or "auto", got {value!r}')
    return t.number(name, 0, 64, integer=True)  # a count: the range check every number gets


@dataclass(frozen=True)
class MultiplierSpec:
    name: str | None = key(None)  # --name, on every record (one: the host's)
    host: str = key("127.0.0.1", in_file=False)  # from listen
    port: int = key(0, in_file=False)  # from listen
    mode: str = key("sequential", choices=MULTIPLIER_MODES, flag="--mode", always=True)
    legs: str = key("parallel", choices=MULTIPLIER_LEGS, flag="--legs", always=True)
    timeout_s: float = key(30, low=0.1, high=3600, flag="--timeout", always=True)
    threads: int = key(1, low=1, high=64, integer=True, flag="--threads", always=True)
    # None: the Multiplier's auto (a thread of its own on two CPUs or more)
    fanout_threads: int | None = key(None, read=_fanout_threads, flag="--fanout-threads")
    compare_headers: tuple[str, ...] = key((), flag="--compare-header")
    ignore_headers: tuple[str, ...] = key(())  # passed with the lab's own (multiplier_argv)
    extra_args: tuple[str, ...] = key(())  # read with the --config files they name resolved (read_multiplier)
    intercept_tls: bool = key(False)  # read HTTPS inside CONNECT tunnels with SPE's CA (docs/https.md)
    no_intercept: tuple[str, ...] = key(())  # host patterns whose tunnels stay opaque
    ca_dir: Path | None = key(None)  # SPE's CA; None: ./spe ca's default directory (read_multiplier)
    metrics_listen: str | None = key(None)  # HOST:PORT of /metrics; None: off
    prometheus: bool = key(False)  # Debian's Prometheus scrapes metrics_listen for the run (start/prometheus.py)
    # How far the client and the proxies may run ahead of SPE's measuring (None: the Multiplier's defaults)
    max_fanout_backlog: int | None = key(None, low=0, high=1_000_000, integer=True, flag="--max-fanout-backlog")
    max_queued_legs: int | None = key(None, low=0, high=1_000_000, integer=True, flag="--max-queued-legs")
    turn_timeout_s: float | None = key(None, low=0.001, high=3600, flag="--turn-timeout")
    order_wait_s: float | None = key(None, low=0.001, high=3600, flag="--order-wait")

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """metrics_listen as (host, port), or None when it is off."""
        return parse_address(self.metrics_listen, "[multiplier].metrics_listen") if self.metrics_listen else None


def read_multiplier(t: Table, source: Path | None) -> MultiplierSpec:
    """A [multiplier] table's MultiplierSpec (the table's `where` names it in messages; unknown keys refused)."""
    values = read_fields(t, MultiplierSpec)
    values["host"], values["port"] = parse_address(t.get("listen", str, "127.0.0.1:0"), f"{t.where}.listen")
    values["extra_args"] = with_config_resolved(values["extra_args"], source.parent if source else None)
    values["ca_dir"] = relative_to_file(source, values["ca_dir"]) if values["ca_dir"] else None
    t.finish()
    return MultiplierSpec(**values)


def multiplier_flags(m: MultiplierSpec) -> list[str]:
    """The Multiplier flags of the keys that declare one: always, or when the file gave a value."""
    argv: list[str] = []
    for f in fields(m):
        flag, value = f.metadata["flag"], getattr(m, f.name)
        if flag is None or (value is None and not f.metadata["always"]):
            continue
        for item in value if isinstance(value, tuple) else (value,):
            argv += [flag, f"{item:g}" if isinstance(item, float) else str(item)]
    return argv
