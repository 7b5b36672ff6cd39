"""Noise pairs: two proxies of the same kind with the same settings, so SPE can measure its own noise.

Diffy's idea: run the same thing twice; whatever the two copies disagree on is noise (timing, the
Collector, the comparison), not a difference between caches. The lab recognises such pairs by
itself, lists them in lab.json (`noise_pairs`) and the report shows how often each pair disagreed
(analysis/sections/noise.py). Settings are the keys a kind declares (kinds.Kind.options), at their effective
values (a default and the same value written out are equal), except where the proxy listens.
"""

from __future__ import annotations

from itertools import combinations

from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import Lab
from spe_tools.lab.definition.proxy_spec import ProxySpec

# Where a proxy listens or fetches, not how it behaves: twins differ there by necessity.
PLACEMENT_KEYS = frozenset({"port", "collector_port", "address"})


def settings(spec: ProxySpec) -> tuple | None:
    """The kind and its behaviour-changing settings; None for an external proxy (its config is the user's)."""
    if spec.kind == "external":
        return None
    keys = sorted(KINDS[spec.kind].keys - PLACEMENT_KEYS) + ["collector_limit_kbps"]  # a paced port differs
    return (spec.kind, *((key, getattr(spec, key)) for key in keys))


def noise_pairs(lab: Lab) -> list[tuple[str, str]]:
    """Every two proxies with equal settings, in lab-file order (three twins make three pairs)."""
    groups: dict[tuple, list[str]] = {}
    for spec in lab.proxies:
        key = settings(spec)
        if key is not None:
            groups.setdefault(key, []).append(spec.name)
    return [pair for names in groups.values() for pair in combinations(names, 2)]
