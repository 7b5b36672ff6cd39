"""SPE analysis: turns a run directory (the Multiplier's logs, the Collector's access.log) into
ROPE's per-proxy tables, latency distributions, cache behaviour and a mismatch report.

Pure functions live in `stats`, `records` and `mismatches` (the run directory's files are read through
spe_tools/rundir, the contract with the lab); `plots` returns figures; `report` writes files; `cli` is the
thin command line behind `./spe report`.
"""
