"""The lab: one TOML file describes a test bed (Collector, proxies under test, Multiplier, origin,
workload); spe_tools.lab brings it up in a run directory and down again. See docs/lab.md."""
