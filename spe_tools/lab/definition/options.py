"""Reading one lab-file table, and the `Option`s a proxy kind declares its keys with (spe_tools/lab/definition/kinds.py,
as a mitmproxy addon declares its options). Every mistake is a `LabFileError` naming the table and the key."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


class LabFileError(ValueError):
    """The lab file is unreadable or describes an impossible lab; the message says where and why."""


_FROM_DEFAULTS: Any = object()  # "no default given": take the table's `defaults` object's attribute


@dataclass
class Table:
    """One TOML table being read: remembers which keys were used, to reject the others. A key's default,
    unless given, is the attribute of `defaults` (a spec dataclass), so it is written once, in the spec."""

    where: str
    data: dict[str, Any]
    defaults: Any = None
    used: set[str] = field(default_factory=set)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = _FROM_DEFAULTS) -> Any:
        self.used.add(key)
        if key not in self.data:
            return getattr(self.defaults, key) if default is _FROM_DEFAULTS else default
        value = self.data[key]
        # bool is an int in Python; a number where a flag is expected (or the reverse) is a mistake.
        wrong_bool = isinstance(value, bool) != (kind is bool or (isinstance(kind, tuple) and bool in kind))
        if not isinstance(value, kind) or wrong_bool:
            raise LabFileError(f"{self.where}.{key}: expected {_type_name(kind)}, got {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _FROM_DEFAULTS) -> str:
        value = self.get(key, str, default)
        if value not in choices:
            raise LabFileError(f"{self.where}.{key}: unknown {key} {value!r} (known: {', '.join(choices)})")
        return value

    def number(self, key: str, low: float, high: float, integer: bool = False, default: Any = _FROM_DEFAULTS) -> Any:
        """The value, checked against [low, high]; the default (None: "not given") when the key is absent."""
        value = self.get(key, int if integer else (int, float), default)
        if value is not None and not low <= value <= high:
            raise LabFileError(f"{self.where}.{key}: {value} is out of range ({low} to {high})")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key, list, [])
        if not all(isinstance(v, str) for v in value):
            raise LabFileError(f"{self.where}.{key}: expected a list of strings, got {value!r}")
        return tuple(value)

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise LabFileError(f"{self.where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(self.used))})")


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "a table"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def relative_to_file(source: Path | None, path: str) -> Path:
    """A path in the lab file is relative to the file's own directory (`..` taken out, links kept: the same file
    named two ways is one path, as the run's lab.toml writes it)."""
    return Path(os.path.normpath(source.parent / path)) if source else Path(path)


def parse_address(text: str, where: str) -> tuple[str, int]:
    """'host:port' -> (host, port); port 0 means "pick a free one"."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise LabFileError(f"{where}: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Option:
    """One key of a [[proxy]] table: its default and, for a number, its range (the type is the default's)."""

    key: str
    default: Any
    low: float | None = None
    high: float | None = None

    def read(self, table: Table) -> dict[str, Any]:
        """The ProxySpec fields this key sets."""
        if self.low is None or self.high is None:
            return {self.key: table.get(self.key, type(self.default), self.default)}
        integer = isinstance(self.default, int)
        return {self.key: table.number(self.key, self.low, self.high, integer, self.default)}


class PortList(Option):
    def read(self, table: Table) -> dict[str, Any]:
        ports = table.get(self.key, list, list(self.default))
        if not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports):
            raise LabFileError(f"{table.where}.{self.key}: expected a list of port numbers, got {ports!r}")
        return {self.key: tuple(ports)}


class Address(Option):
    """An external proxy's HOST:PORT: required, and a real port (the lab does not start it)."""

    def read(self, table: Table) -> dict[str, Any]:
        if self.key not in table.data:
            raise LabFileError(f"{table.where}: kind 'external' needs {self.key} = \"HOST:PORT\" of your proxy")
        host, port = parse_address(table.get(self.key, str), f"{table.where}.{self.key}")
        if port == 0:
            raise LabFileError(f"{table.where}.{self.key}: an external proxy needs its real port, not 0")
        return {"host": host, "port": port}


def key(default: Any, *, low: float | None = None, high: float | None = None, integer: bool = False,
        choices: tuple[str, ...] = (), flag: str | None = None, always: bool = False,
        read: Callable[[Table, str], Any] | None = None, in_file: bool = True) -> Any:
    """A lab-file key's one declaration, as a field of its table's spec dataclass: its default, its range or
    choices, and (a [multiplier] key) the Multiplier flag it becomes, every time (`always`) or only when given; a
    tuple of strings repeats the flag once per item. `read`: a reader of its own, else the default's type, range
    or choices. `in_file`: False for a field another key sets ([multiplier] listen sets host and port)."""
    meta = {"low": low, "high": high, "integer": integer, "choices": choices, "flag": flag, "always": always,
            "read": read, "in_file": in_file}
    return field(default=default, metadata=meta)


def read_fields(t: Table, spec: type) -> dict[str, Any]:
    """Each declared key of the table, read and checked as its field declares (fields declared without key() are
    left to the caller)."""
    return {f.name: _read_key(t, f.name, f.metadata, f.default) for f in fields(spec) if f.metadata.get("in_file")}


def _read_key(t: Table, name: str, meta: Any, default: Any) -> Any:
    if meta["read"] is not None:
        return meta["read"](t, name)
    if meta["choices"]:
        return t.choice(name, meta["choices"])
    if meta["low"] is not None:
        return t.number(name, meta["low"], meta["high"], integer=meta["integer"])
    if isinstance(default, tuple):
        return t.strings(name)
    return t.get(name, str if default is None else type(default))
