"""What `./spe export` reads of a run: its records (multiplier.jsonl, read whole), its mismatch captures (found
once, read per record) and, for a proxy's view, which fields the Multiplier compared (the run's lab.toml); every
reader is the run directory's (spe_tools/rundir)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spe_tools.export.proxy_reply import Comparison
from spe_tools.lab.definition.model import LabFileError, load_lab
from spe_tools.rundir.captures import captures_by_request
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.records import read_records


class ExportError(RuntimeError):
    """The run cannot be exported as asked; the message says why."""


@dataclass(frozen=True)
class Source:
    """What the export reads: the run's records, its captures, and for a proxy how its fields were compared."""
    run: Path
    log: Path
    records: list[dict]
    captures: dict[int, dict[str, Path]]
    comparison: Comparison = Comparison()
    keep_secrets: bool = False  # --keep-secrets: a capture's values held as received are written as received


def _log_of(path: Path) -> tuple[Path, Path]:
    """(run directory, multiplier.jsonl) of a run directory, or of its log named directly."""
    if path.is_file():
        return path.parent, path
    if not RunDir(path).multiplier_log.is_file():
        raise ExportError(f"no run directory with a multiplier.jsonl at {path}")
    return path, RunDir(path).multiplier_log


def _comparison(run: Path) -> Comparison:
    """The Multiplier's compared fields as the run's lab.toml set them (the defaults without one)."""
    try:
        spec = load_lab(RunDir(run).lab_toml).multiplier if RunDir(run).lab_toml.exists() else None
    except LabFileError:
        spec = None
    return Comparison(spec.compare_headers, spec.ignore_headers) if spec is not None else Comparison()


def read_source(path: Path, keep_secrets: bool = False) -> Source:
    run, log = _log_of(Path(path))
    recorded = LabJson.read(run) or LabJson()
    captures = run / recorded.multiplier.captures if recorded.multiplier.captures else RunDir(run).captures
    try:
        records = read_records(log)
    except (OSError, UnicodeDecodeError) as e:
        raise ExportError(f"cannot read {log}: {getattr(e, 'strerror', None) or e}") from None
    return Source(run, log, records, captures_by_request(captures), _comparison(run), keep_secrets)


def proxies(source: Source) -> list[str]:
    """The run's proxies under test: lab.json's, then any other a record names."""
    names = [*(LabJson.read(source.run) or LabJson()).proxies,
             *(leg.get("name") for r in source.records for leg in r.get("proxies") or ())]
    return [str(n) for n in dict.fromkeys(names) if n]
