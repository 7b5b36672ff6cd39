"""What the lab reads of `[multiplier] extra_args`, the Multiplier's own flags passed through as given: the values
of one flag, and of the same key in a `--config FILE` (the Multiplier's 'key = value' lines, where flags win)."""

from __future__ import annotations

from pathlib import Path

from spe_tools.lab.options import LabFileError


def flag_values(args: tuple[str, ...] | list[str], flag: str) -> list[str]:
    """The values of `--flag V` and `--flag=V` in args, in order."""
    values = []
    for i, arg in enumerate(args):
        if arg == f"--{flag}" and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(f"--{flag}="):
            values.append(arg.partition("=")[2])
    return values


def with_config_resolved(args: tuple[str, ...], lab_dir: Path | None) -> tuple[str, ...]:
    """args with a relative --config FILE made relative to the lab file, as every path in it is (the Multiplier
    runs in the run directory); a FILE that cannot be read is the lab file's mistake."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--config" and i + 1 < len(out):
            out[i + 1] = _resolved(out[i + 1], lab_dir)
        elif arg.startswith("--config="):
            out[i] = "--config=" + _resolved(arg.partition("=")[2], lab_dir)
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
