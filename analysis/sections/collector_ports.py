"""The Collector's access.log per Collector port: a Calamaris-like view of what each proxy under test asked of the
shared parent (requests, hits, misses, bytes each way, Squid's result codes)."""

from __future__ import annotations

from analysis.section import Section, fmt


def port_rows(rep) -> list[dict]:
    """One row per Collector port (the Report's collector_ports: spe_tools/rundir/port_usage.py PortUsage)."""
    return [{"port": name, "requests": u.requests, "hits": u.hits, "misses": u.misses,
             "hit_pct": 100 * u.hits / u.requests if u.requests else None, "bytes_out": u.bytes_to_client,
             "bytes_in": u.bytes_from_client, "codes": dict(sorted(u.codes.items()))}
            for name, u in rep.collector_ports.items()]


def port_text(rep) -> list[str]:
    rows = port_rows(rep)
    if not rows:
        return []
    unreadable = f", {rep.bad_collector_lines} unreadable lines" if rep.bad_collector_lines else ""
    out = [f"Collector per port (its access.log{unreadable}):",
           f"  {'port':20}{'requests':>10}{'hits':>8}{'misses':>8}{'hit %':>8}{'bytes out':>12}{'bytes in':>10}  codes"]
    for r in rows:
        out.append(f"  {r['port']:20}{r['requests']:>10}{r['hits']:>8}{r['misses']:>8}{fmt(r['hit_pct'], 1):>8}"
                   f"{r['bytes_out']:>12}{r['bytes_in']:>10}  " + ", ".join(f"{k} {v}" for k, v in r["codes"].items()))
    return out


SECTION = Section("collector-ports", "Collector per port (access.log)", applies=lambda rep: bool(rep.collector_ports),
                  details_text=port_text, template="sections/collector_ports.html.j2",
                  context=lambda rep: {"ports": port_rows(rep)},
                  summary=lambda rep, rows: {"collector_ports": port_rows(rep),
                                             "bad_collector_lines": rep.bad_collector_lines})
