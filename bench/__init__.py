"""SPE's benchmarks: each module here is one command (`./spe bench NAME` runs `python -m bench.NAME`) that
prints its table and puts it into docs/benchmarks.md (bench/README.md)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: build/, docs/, tests/fixtures/


def command(module: str) -> str:
    """What a benchmark's --help and messages call it: `./spe bench NAME` for module `bench.NAME` (its __spec__.name:
    run with -m, its __name__ is __main__)."""
    return f"./spe bench {module.rsplit('.', 1)[-1]}"
