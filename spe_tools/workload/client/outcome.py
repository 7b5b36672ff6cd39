"""How a workload client ends: its exit code from its summary. Every request answered is a success (0); requests
that got no reply (a connection refused or reset, a timeout) or were still out at the end make it a failure (1),
whatever the replies' statuses (a 404 or a 503 is an answer). A user's script, and the lab, can tell the two
apart by the code; the lab reads the JSON summary to say how many failed."""

from __future__ import annotations

import sys

FAILED = 1


def failed_requests(summary: dict) -> int:
    """Requests of the summary that got no complete reply: errors, and those still out at the end."""
    return summary.get("errors", 0) + summary.get("lost", 0)


def failure_text(summary: dict) -> str:
    """One line: how many of the requests sent failed, and how."""
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(summary.get("error_kinds", {}).items()))
    lost = f"{summary['lost']} still out at the end" if summary.get("lost") else ""
    how = "; ".join(part for part in (kinds, lost) if part)
    return f"{failed_requests(summary)} of {summary.get('sent', 0)} requests got no reply ({how})"


def exit_code(tool: str, summary: dict) -> int:
    """0 when every request sent got its reply; else 1, saying how many did not on stderr."""
    if not failed_requests(summary):
        return 0
    print(f"{tool}: error: {failure_text(summary)}", file=sys.stderr)
    return FAILED
