"""SPE's Python tooling: processes on loopback, Squid instances, the demo lab."""
