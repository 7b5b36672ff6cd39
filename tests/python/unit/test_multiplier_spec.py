"""The [multiplier] keys are declared once (spe_tools/lab/definition/multiplier_spec.py): the reader, the flags the
lab passes and docs/lab-file.md's table all follow that one table."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest
from conftest import ROOT

from spe_tools.lab.definition.model import (
    CollectorSpec,
    LabFileError,
    NetworkSpec,
    OriginSpec,
    WorkloadSpec,
    parse_lab,
)
from spe_tools.lab.definition.multiplier_spec import MultiplierSpec, multiplier_flags

PROXY = '[[proxy]]\nname = "d"\nkind = "dummy"\n'
FILE_KEYS = {f.name for f in fields(MultiplierSpec) if f.metadata["in_file"]} | {"listen"}


def test_every_key_in_the_table_is_documented_and_nothing_else():
    section = (ROOT / "docs/lab-file.md").read_text().split("## `[multiplier]`")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    assert documented == FILE_KEYS


def test_a_key_with_a_flag_passes_it_only_when_given_unless_always():
    plain = multiplier_flags(parse_lab(PROXY).multiplier)
    assert plain == ["--mode", "sequential", "--legs", "parallel", "--timeout", "30", "--threads", "1"]
    given = parse_lab('[multiplier]\nturn_timeout_s = 0.25\nmax_queued_legs = 9\nfanout_threads = 2\n'
                      'compare_headers = ["X-A", "X-B"]\ntimeout_s = 2.5\n' + PROXY).multiplier
    flags = multiplier_flags(given)
    assert flags[:8] == ["--mode", "sequential", "--legs", "parallel", "--timeout", "2.5", "--threads", "1"]
    assert flags[8:] == ["--fanout-threads", "2", "--compare-header", "X-A", "--compare-header", "X-B",
                         "--max-queued-legs", "9", "--turn-timeout", "0.25"]


@pytest.mark.parametrize("line, message", [
    ('mode = "fast"', r"\[multiplier\].mode: unknown mode 'fast' \(known: sequential, concurrent\)"),
    ("threads = 0", r"\[multiplier\].threads: 0 is out of range \(1 to 64\)"),
    ("order_wait_s = 0", r"\[multiplier\].order_wait_s: 0 is out of range"),
    ('compare_headers = "X-A"', r"\[multiplier\].compare_headers: expected a list, got 'X-A'"),
    ("intercept_tls = 1", r"\[multiplier\].intercept_tls: expected true or false"),
    ('fanout_threads = "many"', r'\[multiplier\].fanout_threads: expected an integer or "auto"'),
    ("colour = 1", r"\[multiplier\]: unknown key 'colour'"),
])
def test_each_keys_mistake_names_the_key(line, message):
    with pytest.raises(LabFileError, match=message):
        parse_lab(f"[multiplier]\n{line}\n" + PROXY)


@pytest.mark.parametrize("table, spec", [("collector", CollectorSpec), ("workload", WorkloadSpec),
                                         ("origin", OriginSpec), ("network", NetworkSpec)])
def test_the_other_tables_declare_each_key_once_too(table, spec):
    """Their keys are fields declared with their range or choices (key()), read by one reader (read_fields), and
    the reference documents each of them."""
    assert all(f.metadata.get("in_file") for f in fields(spec)), [f.name for f in fields(spec) if not f.metadata]
    section = (ROOT / "docs/lab-file.md").read_text().split(f"## `[{table}]`")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    assert documented >= {f.name for f in fields(spec)}
