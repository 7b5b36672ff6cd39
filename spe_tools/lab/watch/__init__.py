"""A lab while it runs: its status line, the liveness of its processes, bypasses and costs, and its stop."""
