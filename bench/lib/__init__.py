"""What the benchmarks share, one job per module: doc (the results file), harness (running one), servers,
clients, wrk, meters (CPU and memory readings) and logs (reading what the servers wrote)."""
