"""The report's sections: each declared once in its own module (analysis/section.py says what a section
declares), registered once here. Their order here is the order they add their columns to the rows and compute in
(a section may read the columns an earlier one added to the rows), of their summary.csv columns, and of their parts
under each question of the report (the verdict and the details). Every section's module is in this package; what
they read a run with is in analysis/readers/.
"""

from __future__ import annotations

from analysis.section import QUESTIONS, Section
from analysis.sections import (
    bypass,
    collector_ports,
    failed_legs,
    figures,
    hit_ratios,
    judge_findings,
    mismatches,
    noise,
    out_of_order,
    paired,
    per_multiplier,
    prefetch,
    proxy_costs,
    queueing,
)

SECTIONS: tuple[Section, ...] = (
    prefetch.SECTION,  # its rows first: the hit ratios leave a prefetcher's own requests out
    hit_ratios.SECTION,
    mismatches.SECTION,
    noise.SECTION,
    bypass.SECTION,  # before the figures: a proxy that bypassed its Collector port has no hit ratio to plot
    judge_findings.SECTION,
    judge_findings.JUDGE_NOISE,
    paired.SECTION,
    per_multiplier.SECTION,
    proxy_costs.SECTION,  # after the table's rows: it reads their responses
    figures.SECTION,
    failed_legs.SECTION,
    out_of_order.SECTION,
    queueing.SECTION,
    collector_ports.SECTION,
)


def columns() -> list[str]:
    """The per-proxy columns the sections add to summary.csv / summary.json, in order."""
    return [column for section in SECTIONS for column in section.columns]


def shown(report) -> list[Section]:
    """The sections that apply to the report's run, grouped by the question they answer (in the verdict's
    order; the sections that answer none last), in registry order within each."""
    order = [*QUESTIONS, None]
    return sorted((s for s in SECTIONS if s.applies(report)), key=lambda s: order.index(s.question))
