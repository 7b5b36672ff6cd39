"""What the lab reads of `[multiplier] extra_args`, the Multiplier's own flags passed through as given: the values
of one flag, and of the same key in a `--config FILE` (the Multiplier's 'key = value' lines, where flags win)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from spe_tools.lab.definition.options import LabFileError


def _occurrences(args: tuple[str, ...] | list[str], flag: str) -> Iterator[tuple[int, str, bool]]:
    """Each `--flag V` and `--flag=V` in args: the index of its value, the value, and whether it is joined."""
    for i, arg in enumerate(args):
        if arg == f"--{flag}" and i + 1 < len(args):
            yield i + 1, args[i + 1], False
        elif arg.startswith(f"--{flag}="):
            yield i, arg.partition("=")[2], True


def flag_values(args: tuple[str, ...] | list[str], flag: str) -> list[str]:
    """The values of `--flag V` and `--flag=V` in args, in order."""
    return [value for _, value, _ in _occurrences(args, flag)]


def with_config_resolved(args: tuple[str, ...], lab_dir: Path | None) -> tuple[str, ...]:
    """args with a relative --config FILE made relative to the lab file, as every path in it is (the Multiplier
    runs in the run directory); a FILE that cannot be read is the lab file's mistake."""
    out = list(args)
    for i, value, joined in _occurrences(args, "config"):
        path = _resolved(value, lab_dir)
        out[i] = f"--config={path}" if joined else path
    return tuple(out)


def _resolved(path: str, lab_dir: Path | None) -> str:
    full = Path(path) if Path(path).is_absolute() or lab_dir is None else lab_dir / path
    if not full.is_file():
        raise LabFileError(f"[multiplier].extra_args: --config {path}: no such file ({full})")
    return str(full)


def option_values(args: tuple[str, ...] | list[str], flag: str) -> list[str]:
    """What the Multiplier takes for a repeatable option: its flags' values, or, when no flag gives it, the
    `flag = value` lines of the --config file (program_options' config syntax: '#' starts a comment)."""
    if given := flag_values(args, flag):
        return given
    values = []
    for config in flag_values(args, "config")[-1:]:
        for line in Path(config).read_text().splitlines():
            key, sep, value = line.partition("#")[0].partition("=")
            if sep and key.strip() == flag:
                values.append(value.strip())
    return values
