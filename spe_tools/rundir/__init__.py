"""The run directory as a contract between the lab that writes it and everything that reads it (the
analysis, ./spe repro, the benchmarks): its layout (`layout`), its typed lab.json (`lab_json`) and the
Collector's access log with named fields (`access_log`). Nothing here imports the lab or the analysis,
so both can depend on it; nothing here needs polars. docs/lab.md describes a run directory for users."""
