"""SPE's own noise floor: how often SPE disagrees with itself, beside each proxy's mismatch rate.

Two measures, both from the lab's topology (lab.json):
- the dummy: a pass-through to its Collector port with no cache; any non-OK result is noise
  (the Collector, the comparison, timing), never a caching difference;
- noise pairs (Diffy's idea): two proxies of the same kind with the same settings, which the lab
  recognises and lists as `noise_pairs`. On a request both answered, they disagree when their
  result classes or their body digests differ.
The floor is the largest of these rates. A proxy whose mismatch rate is at or below it cannot be
told from SPE's own noise; the goal is a floor of 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.section import TRUST, RunData, Section
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.records import NOT_MISMATCHES

if TYPE_CHECKING:
    from analysis.readers.engine import ReplyQueries
    from analysis.report_data import Report

NAME = "noise-floor"  # the section's name: its anchor, and the key of its data in Report.data


def of(report: Report) -> dict:
    """The noise floor SPE measured (this section's data)."""
    return report.data.get(NAME, {})


def _pct(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def dummy_noise(tables: ReplyQueries, name: str) -> dict:
    """The dummy's replies that differ from the Collector's, out of the requests it had to answer (a faithful
    copy of another origin fetch, OTHER_FETCH, is the fetches' difference, not SPE's noise)."""
    not_mismatches = ", ".join(f"'{result}'" for result in NOT_MISMATCHES)
    requests, mismatches = tables.row(
        f"SELECT count(*), count(*) FILTER (result NOT IN ({not_mismatches})) FROM results WHERE name = ?", [name])
    return {"name": name, "requests": requests, "mismatches": mismatches, "pct": _pct(mismatches, requests)}


def pair_noise(tables: ReplyQueries, a: str, b: str) -> dict:
    """How often two identical proxies disagree, over the requests both of them answered (OTHER_FETCH counts as
    OK: which of two fetches a twin kept is the fetches' difference; their bodies are still compared)."""
    answered = """(SELECT run, id, CASE WHEN result = 'OTHER_FETCH' THEN 'OK' ELSE result END AS result, md5
                   FROM results WHERE name = ? AND status IS NOT NULL AND error IS NULL)"""
    both, disagreements = tables.row(f"""
        SELECT count(*), count(*) FILTER (l.result IS DISTINCT FROM r.result OR l.md5 IS DISTINCT FROM r.md5)
        FROM {answered} l JOIN {answered} r USING (run, id)""", [a, b])
    return {"a": a, "b": b, "both_answered": both, "disagreements": disagreements, "pct": _pct(disagreements, both)}


def noise_floor(tables: ReplyQueries, lab: LabJson | None) -> dict:
    """The floor a run measured (or why it measured none), from lab.json's proxy kinds and noise pairs."""
    if lab is None:
        return {"measured": False, "reason": "no lab.json: which proxies are dummies or noise pairs is unknown",
                "dummies": [], "pairs": [], "floor_pct": None, "zero": None}
    dummies = [dummy_noise(tables, n) for n in lab.proxies_of_kind("dummy")]
    pairs = [pair_noise(tables, a, b) for a, b in lab.noise_pairs]
    rates = [m["pct"] for m in dummies + pairs if m["pct"] is not None]
    if not rates:
        reason = ("this lab has no dummy proxy and no noise pair, two proxies of the same kind and settings"
                  if not dummies and not pairs else "the dummy and the noise pairs answered no request")
        return {"measured": False, "reason": reason, "dummies": dummies, "pairs": pairs, "floor_pct": None,
                "zero": None}
    zero = all(m["mismatches"] == 0 for m in dummies) and all(m["disagreements"] == 0 for m in pairs)
    return {"measured": True, "reason": None, "dummies": dummies, "pairs": pairs, "floor_pct": max(rates),
            "zero": zero}


def mismatch_pct(row: dict) -> float | None:
    """A proxy row's share of requests whose result was a mismatch (not OK, not OTHER_FETCH), in % (None for the
    Collector's row)."""
    return None if row.get("ok_pct") is None else 100 - row["ok_pct"] - (row.get("other_fetch_pct") or 0)


def pair_pct(floor: dict, name: str) -> float | None:
    """How often a noise-pair member disagreed with its twin (the largest, with several twins), in %."""
    rates = [p["pct"] for p in floor.get("pairs", []) if name in (p["a"], p["b"]) and p["pct"] is not None]
    return max(rates, default=None)


def beside_floor(row: dict, floor: dict) -> str | None:
    """'within' the noise floor, 'above' it, or None (no floor, or no mismatch rate)."""
    pct = mismatch_pct(row)
    if pct is None or not floor["measured"]:
        return None
    return "within" if pct <= floor["floor_pct"] else "above"


def floor_line(floor: dict) -> str:
    """One line: the floor and what measured it (the demo prints it under the per-proxy table)."""
    if not floor["measured"]:
        return f"Noise floor: not measured ({floor['reason']})"
    parts = [f"{d['name']} {d['mismatches']:,} of {d['requests']:,} replies differ from the Collector's"
             for d in floor["dummies"] if d["pct"] is not None]
    parts += [f"{p['a']} = {p['b']} disagree on {p['disagreements']:,} of {p['both_answered']:,} requests"
              for p in floor["pairs"] if p["pct"] is not None]
    goal = "goal met: SPE agrees with itself" if floor["zero"] else "goal: 0"
    return f"Noise floor: {floor['floor_pct']:.2f} % ({'; '.join(parts)}; {goal})"


def floor_text(rows: list[dict], floor: dict) -> list[str]:
    """The floor line, then each proxy's mismatch rate beside it."""
    out = [floor_line(floor)]
    if not floor["measured"]:
        return out
    judged = [(row, beside_floor(row, floor)) for row in rows]
    judged = [(row, verdict) for row, verdict in judged if verdict is not None]
    width = max((len(row["name"]) for row, _ in judged), default=0) + 2
    for row, verdict in judged:
        out.append(f"  {row['name']:{width}}{mismatch_pct(row):6.2f} % mismatches, {verdict} the noise floor")
    return out


def _beside_each_proxy(run: RunData) -> dict:
    """The floor, and beside it each proxy row's mismatch rate (the section's columns)."""
    floor = noise_floor(run.tables, run.lab)
    for row in run.rows[1:]:
        row.update(mismatch_pct=mismatch_pct(row), noise_floor_pct=floor["floor_pct"],
                   noise_floor=beside_floor(row, floor), noise_pair_disagreement_pct=pair_pct(floor, row["name"]))
    return floor


SECTION = Section(
    NAME, "Noise floor", question=TRUST,
    columns=("mismatch_pct", "noise_floor_pct", "noise_floor", "noise_pair_disagreement_pct"),
    compute=_beside_each_proxy, applies=lambda rep: bool(of(rep)),
    verdict_text=lambda rep: floor_text(rep.rows, of(rep)), template="sections/noise_floor.html.j2",
    context=lambda rep: {"line": floor_line(of(rep))},
    summary=lambda rep, rows: {"noise_floor": of(rep)})
