"""SPE's benchmarks: each module here is one command (`./spe bench NAME` runs `python -m bench.NAME`) that
prints its table and puts it into docs/benchmarks.md (bench/README.md)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: build/, docs/, tests/fixtures/
