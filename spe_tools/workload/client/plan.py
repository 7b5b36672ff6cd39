"""One request the load client is about to send, and what it expects of it (shared by the request mixes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from spe_tools.workload.content import model as cm


@dataclass
class Planned:
    method: str
    path: str
    category: str  # new | repeat | ims | reload | post | conformance
    headers: dict = field(default_factory=dict)
    body: bytes | None = None
    spec: cm.ObjectSpec | None = None
    sequence: object | None = None  # conformance: the Sequence this step belongs to (told when its reply is in)
    at: float = 0.0  # conformance: the scheduled time (s from the run's start) the step was planned for
    step: int = 0  # conformance: the step's place in its sequence (0: the sequence's first request)
