"""`./spe repro` on one finding of every rule the real Debian proxies break: the conformance sequences
(tests/python/conformancesupport.py) run once through squid, trafficserver, nginx, varnish, apache and the
dummy behind the patched Collector; for each rule the judge named, the first (proxy, request) that broke it
is written as a case and replayed against a fresh proxy of that kind. Issue 40 asks that at least 90 % of the
first examples reproduce (every expected rule broken again), the same on a second replay.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conformancesupport import KINDS_UNDER_TEST, SEQUENCES, lab_text, run_all
from conftest import ENV, ROOT, multiplier_binary
from labsupport import lab_session
from parts import installed_kinds, require

from spe_tools import collector

SHARE = 0.9
COPIED = ("multiplier.jsonl", "lab.json", "lab.toml")
# Rules whose first example the record cannot hold the cause of (docs/repro.md, "What a case cannot reproduce"):
# Squid's `framing` comes from a 304's `Content-Length: 0`, and the record keeps the fields the 304 left the copy
# with, not the 304's framing. Replayed and checked to stay unreproduced (else docs/repro.md is wrong), but not
# in the share: with one such rule in twelve, any one timing-bound rule (`date`, `age`) landing on the other side
# of a second on a loaded machine would decide the test.
NOT_IN_THE_RECORD = {"framing"}


@pytest.fixture(scope="module")
def first_findings():
    """A run of every sequence, kept; yields (run directory, {rule: (proxy, request id)}). The replays go beside
    it: a replayed proxy drops to its own user, who cannot pass through pytest's private tmp_path."""
    require(collector.missing("spe"), "the patched Collector")
    kinds = installed_kinds(KINDS_UNDER_TEST, multiplier_binary())
    keep = Path(tempfile.mkdtemp(prefix="spe-repro-rules-"))
    keep.chmod(0o755)  # a replayed proxy drops to its own user and must reach its directory
    run = keep / "run"
    run.mkdir(mode=0o755)
    with lab_session(lambda _workdir: lab_text(kinds)) as lab:
        sent = run_all(lab, SEQUENCES)
        records = [r for path, statuses in sent.values() for r in lab.records(path, len(statuses), deadline_s=120)]
        for name in COPIED:
            shutil.copy(lab.rundir / name, run / name)
    first: dict[str, tuple[str, int]] = {}
    for record in sorted(records, key=lambda r: r["id"]):
        for leg in record["proxies"]:
            for finding in (leg.get("cache") or {}).get("violations", []):
                first.setdefault(finding["rule"], (leg["name"], record["id"]))
    yield run, first
    shutil.rmtree(keep, ignore_errors=True)


def replay_all(run: Path, first: dict[str, tuple[str, int]], out: Path) -> dict[str, str]:
    """rule -> '' when reproduced, else what `./spe repro` said."""
    missed = {}
    for rule, (proxy, request) in sorted(first.items()):
        done = subprocess.run([str(ROOT / "spe"), "repro", str(run), "--proxy", proxy, "--request", str(request),
                               "--out", str(out / f"{request}-{proxy}")], capture_output=True, text=True,
                              timeout=300, env=ENV)
        missed[rule] = "" if done.returncode == 0 else f"{proxy} {request}: {(done.stdout + done.stderr)[-300:]}"
    return missed


def test_the_first_example_of_each_rule_reproduces_twice(first_findings):
    run, first = first_findings
    # the sequences make the proxies break at least these (test_conformance_real_proxies.py's EXPECTED)
    assert {"invalidation", "stale", "age", "stored-fields", "interim", "connection-fields"} <= set(first), first
    for attempt in ("first", "second"):
        missed = replay_all(run, first, run.parent / attempt)
        failed = {rule: why for rule, why in missed.items() if why and rule not in NOT_IN_THE_RECORD}
        judged = [rule for rule in first if rule not in NOT_IN_THE_RECORD]
        assert len(judged) - len(failed) >= SHARE * len(judged), (attempt, failed)
        reproduced_anyway = {rule for rule in NOT_IN_THE_RECORD & set(first) if not missed[rule]}
        assert not reproduced_anyway, f"{reproduced_anyway} reproduced: docs/repro.md says a case cannot"
