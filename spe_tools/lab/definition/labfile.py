"""The run directory's lab.toml: the lab as it ran, which `./spe lab run` can start again.

A lab that ran as its file describes it gets the file itself (comments kept). One that was changed
on the way (`./spe demo` puts stock Squid in for a missing patched Collector and leaves out proxies
whose package is missing) is written from the model, so the run directory never disagrees with
what ran. Paths are written absolute: the file is read from the run directory, not from where the
original was.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, fields, replace
from pathlib import Path

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import Lab, LabFileError, MultiplierSpec, load_lab, parse_lab
from spe_tools.lab.definition.proxy_spec import ProxySpec


def _value(value: object) -> str:
    """A TOML value: JSON's strings, numbers and arrays are TOML too (its escapes included)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return json.dumps(str(value.resolve()))
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(value)


def _table(header: str, values: dict) -> list[str]:
    return ["", header, *(f"{key} = {_value(v)}" for key, v in values.items() if v is not None)]


def _proxy_values(p: ProxySpec) -> dict:
    """The keys its kind accepts, in the model's field order; an external proxy's address is host:port."""
    allowed = KINDS[p.kind].keys | {"collector_port"} | ({"twin_of"} if p.twin_of else set()) | \
        ({"collector_limit_kbps"} if p.collector_limit_kbps else set())
    values = {"name": p.name, "kind": p.kind}
    if p.kind == "external":
        values["address"] = f"{p.host}:{p.port}"
    values |= {f.name: getattr(p, f.name) for f in fields(p) if f.name in allowed}
    return values


def _multiplier_values(m: MultiplierSpec) -> dict:
    values = asdict(m)
    return {"name": values.pop("name"), "listen": f"{values.pop('host')}:{values.pop('port')}", **values}


def lab_toml(lab: Lab) -> str:
    """Lab-file text that parses to `lab` (apart from its source)."""
    head = {"name": lab.name, "runs_dir": lab.runs_dir, "share_group": lab.share_group}
    lines = [f"# The lab as it ran (from {lab.source or 'a lab given in code'})",
             *(f"{key} = {_value(v)}" for key, v in head.items() if v is not None)]
    lines += _table("[collector]", asdict(lab.collector))
    lines += _table("[origin]", {f.name: getattr(lab.origin, f.name) for f in fields(lab.origin)})
    for m in lab.multipliers:
        lines += _table("[[multiplier]]" if lab.other_multipliers else "[multiplier]", _multiplier_values(m))
    lines += _table("[workload]", asdict(lab.workload))
    lines += _table("[live]", {"enabled": lab.live.enabled, "every": f"{lab.live.every:g}s"})
    lines += _table("[network]", asdict(lab.network))
    for p in lab.proxies:
        lines += _table("[[proxy]]", _proxy_values(p))
    return "\n".join(lines) + "\n"


def _as_given(lab: Lab, path: Path) -> bool:
    """True when the lab is exactly what its file describes, and the file read from `path` still is:
    a relative path in it (a model, CA files, the CA directory) would name another file there."""
    if lab.source is None:
        return False
    try:
        text = lab.source.read_text()
        return load_lab(lab.source) == lab and replace(parse_lab(text, path), source=lab.source) == lab
    except (LabFileError, OSError):
        return False


def write_run_lab_file(lab: Lab, path: Path) -> None:
    if _as_given(lab, path):
        shutil.copyfile(lab.source, path)
    else:
        path.write_text(lab_toml(lab))
