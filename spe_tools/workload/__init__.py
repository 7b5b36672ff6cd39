"""SPE's workloads: a Polygraph-like origin, a load client, a trace replayer and a real-browser driver.

See docs/workloads.md. Each tool is a thin CLI (`python -m spe_tools.workload.<tool>`) over pure,
tested functions: the content model (object id -> reply) is shared by the origin and the load client,
so the client knows which objects are cacheable without asking.
"""
