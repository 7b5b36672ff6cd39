"""The client side of the workloads: connections, arrivals, popularity, sessions, schedules, summaries."""
