"""The report's sections: each declared once in its own module (analysis/section.py says what a section
declares), registered once here. Their order here is the order they compute in (a section may read the columns
an earlier one added to the rows), of their summary.csv columns, and of their parts under each question of the
report (the verdict and the details); new sections without a home module of their own live in this package.
"""

from __future__ import annotations

from analysis import bypass, cache_rules, mismatches, noise, paired, plots, prefetch
from analysis.section import QUESTIONS, Section
from analysis.sections import collector_ports, failed_legs

SECTIONS: tuple[Section, ...] = (
    mismatches.SECTION,
    noise.SECTION,
    bypass.SECTION,  # before the figures: a proxy that bypassed its Collector port has no hit ratio to plot
    cache_rules.SECTION,
    cache_rules.JUDGE_NOISE,
    prefetch.SECTION,
    paired.SECTION,
    plots.SECTION,
    failed_legs.SECTION,
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
