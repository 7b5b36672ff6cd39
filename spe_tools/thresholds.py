"""`--fail-on`: thresholds that fail a run for CI, like k6's (docs/report.md, "Failing a CI job").

    --fail-on 'violations>0,mismatches>1%,noise>0,violations[squid]>=3'

Each threshold is METRIC[PROXY] OP NUMBER[%], thresholds separated by commas:
- violations: the cache-rule judge's violations of a proxy under test (the report's cache_violations);
  with %, of its requests;
- mismatches: its replies that differ from the Collector's (every class but OK and OTHER_FETCH); with %,
  of its requests (the report's mismatch_pct);
- noise: SPE's own noise floor, per run (no proxy): the most disagreements of the dummy or a noise pair;
  with %, the floor (noise_floor_pct).
OP is > or >=. Without [PROXY] a per-proxy threshold applies to every proxy under test, each on its own.
A threshold crossed prints a line and makes the command exit with CROSSED_EXIT (3); a malformed one is a
usage error (exit 2) before anything runs. Pure Python: `./spe lab` parses it without the analysis venv.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

CROSSED_EXIT = 3  # distinct from 1 (the run or the report failed) and 2 (usage)
METRICS = ("violations", "mismatches", "noise")
PER_RUN = {"noise"}
THRESHOLD_RE = re.compile(r"(?P<metric>[a-z]+)(?:\[(?P<proxy>[^\[\]]+)\])?(?P<op>>=|>)"
                          r"(?P<value>\d+(?:\.\d*)?|\.\d+)(?P<pct>%?)")


class ThresholdError(argparse.ArgumentTypeError, ValueError):
    """Not a threshold list; argparse prints the message as is (exit 2)."""


@dataclass(frozen=True)
class Threshold:
    metric: str
    op: str
    value: float
    percent: bool
    proxy: str | None = None

    def __str__(self) -> str:
        where = f"[{self.proxy}]" if self.proxy else ""
        return f"{self.metric}{where}{self.op}{self.value:g}{'%' if self.percent else ''}"

    def crossed(self, measured: float) -> bool:
        return measured >= self.value if self.op == ">=" else measured > self.value


def parse_thresholds(text: str) -> list[Threshold]:
    """The thresholds of a --fail-on value (argparse `type=`)."""
    out = []
    for part in str(text).split(","):
        item = part.strip().replace(" ", "")
        match = THRESHOLD_RE.fullmatch(item)
        if not match:
            raise ThresholdError(f"expected thresholds like violations>0,mismatches>1%,noise>0,"
                                 f"violations[squid]>=3, got {part.strip()!r}")
        metric = match["metric"]
        if metric not in METRICS:
            raise ThresholdError(f"unknown metric {metric!r} in {part.strip()!r}: one of {', '.join(METRICS)}")
        if metric in PER_RUN and match["proxy"]:
            raise ThresholdError(f"{metric} is per run, not per proxy: {part.strip()!r}")
        out.append(Threshold(metric, match["op"], float(match["value"]), bool(match["pct"]), match["proxy"]))
    return out


def unknown_proxies(thresholds: list[Threshold], proxies: list[str]) -> list[str]:
    """The proxy names the thresholds give that are not proxies under test of the run."""
    return sorted({t.proxy for t in thresholds if t.proxy and t.proxy not in proxies})


def _proxy_measure(t: Threshold, row: dict) -> float | None:
    requests = row.get("requests") or 0
    if t.metric == "mismatches":
        pct = row.get("mismatch_pct")
        if pct is None:
            return None
        return pct if t.percent else round(requests * pct / 100)
    violations = row.get("cache_violations")
    if violations is None:
        return None
    if t.percent:
        return 100 * violations / requests if requests else None
    return violations


def _noise_measure(t: Threshold, noise: dict) -> float | None:
    if not noise.get("measured"):
        return None
    if t.percent:
        return noise["floor_pct"]
    counts = [d["mismatches"] for d in noise["dummies"]] + [p["disagreements"] for p in noise["pairs"]]
    return max(counts, default=0)


def _shown(value: float, percent: bool) -> str:
    return f"{value:.2f} %" if percent else f"{value:g}"


def check_thresholds(thresholds: list[Threshold], rows: list[dict], noise: dict) -> tuple[list[str], list[str]]:
    """(crossed, unchecked): a line per threshold crossed (per proxy), and per threshold that had nothing
    to measure (no judge verdicts in the log, no noise floor measured). `rows` are the report's proxy
    rows (the Collector's first, left out), `noise` its noise floor."""
    crossed, unchecked = [], []
    proxies = rows[1:]
    for t in thresholds:
        if t.metric in PER_RUN:
            measured = _noise_measure(t, noise)
            if measured is None:
                unchecked.append(f"{t}: not checked, the noise floor was not measured "
                                 f"({noise.get('reason') or 'no noise floor in the report'})")
            elif t.crossed(measured):
                crossed.append(f"{t}: noise floor {_shown(measured, t.percent)}")
            continue
        for row in proxies:
            if t.proxy and row["name"] != t.proxy:
                continue
            measured = _proxy_measure(t, row)
            if measured is None:
                what = "no cache-rule verdicts in the log" if t.metric == "violations" else "no requests"
                unchecked.append(f"{t}: not checked for {row['name']} ({what})")
            elif t.crossed(measured):
                crossed.append(f"{t}: {row['name']} {_shown(measured, t.percent)} {t.metric}")
    return crossed, unchecked


def threshold_lines(thresholds: list[Threshold], rows: list[dict], noise: dict) -> tuple[int, list[str]]:
    """The exit code (0, or CROSSED_EXIT) and the lines to print for a report's rows and noise floor."""
    crossed, unchecked = check_thresholds(thresholds, rows, noise)
    lines = [f"threshold crossed: {line}" for line in crossed] + [f"threshold {line}" for line in unchecked]
    if crossed:
        lines.append(f"{len(crossed)} threshold(s) crossed (--fail-on {','.join(map(str, thresholds))}): "
                     f"exit {CROSSED_EXIT}")
    elif thresholds:
        lines.append(f"no threshold crossed (--fail-on {','.join(map(str, thresholds))})")
    return (CROSSED_EXIT if crossed else 0), lines
