"""SPE's own queueing, an answer to "Can I trust this run?": the client held back while SPE's measuring caught up,
and the time each proxy's legs waited inside SPE before they were sent; neither is in any proxy's times."""

from __future__ import annotations

from analysis.section import TRUST, Section, fmt


def queueing_text(rep) -> str:
    """SPE's own queueing, so the proxies' times are not mistaken for it: how often, and how long in all, the
    client was held back before a request (records' client_held_us: SPE's measuring more than
    --max-fanout-backlog of the connection's fan-outs behind; in logs of a Multiplier that paced the client by
    its slowest proxy, that proxy too far behind), and each proxy's legs' wait inside SPE before they were sent
    (queued_us, median / p99: the proxy's turn and the client's requests on its other connections it waited
    for, `waited_for`)."""
    waits = [r for r in rep.rows[1:] if r.get("queued_median_ms") is not None]
    held = rep.held.get("requests", 0)
    if not held and not waits:  # a log written before the Multiplier recorded either
        return ""
    parts = []
    if held:
        parts.append(f"client held back before {held} request(s) ({rep.held.get('total_s', 0):.2f} s in all)")
    if waits:
        parts.append("legs' wait to be sent, median/p99 ms: " + ", ".join(
            f"{r['name']} {fmt(r['queued_median_ms'])}/{fmt(r['queued_p99_ms'])}" for r in waits))
    return "SPE's queueing (in no proxy's times): " + "; ".join(parts)


SECTION = Section("queueing", "SPE's own queueing", question=TRUST, applies=lambda rep: bool(queueing_text(rep)),
                  verdict_text=lambda rep: [queueing_text(rep)])
