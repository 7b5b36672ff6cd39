"""What stops a lab: one error whose message names the component and the reason."""

from __future__ import annotations


class LabError(RuntimeError):
    """The lab cannot start or run; the message names the component and the reason."""
