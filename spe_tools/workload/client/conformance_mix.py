"""The conformance request mix: sequences of requests on one /c/<case>/<id> URL that give a cache
the chance to break the rule the case is about (docs/workloads.md).

A sequence is a scenario (repeat after a delay, reloads, conditional requests, Authorization then none, an
unsafe method between GETs, Range, HEAD, varied Accept-Language / Accept-Encoding) applied to one case, on a
URL of its own. Each step waits for the previous step's reply and then for its delay, measured on the
scheduled clock (the seeded arrival times), so which sequences run, with which steps, is fixed by the seed;
when a reply is slow the steps of different sequences interleave differently, nothing else changes.
Every case's sequences come in rounds: round 0 plays `repeat` on every case (in a seeded order), later
rounds each case's other scenarios, so a short run still touches every case.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from spe_tools.workload.client.plan import Planned
from spe_tools.workload.content import conformance as cf
from spe_tools.workload.http11 import format_date

AUTH_ALICE = "Basic YWxpY2U6c3Bl"  # alice:spe
AUTH_BOB = "Basic Ym9iOnNwZQ=="  # bob:spe
WRONG_TAG = '"spe-no-such-tag"'
INVALIDATING = (*cf.UNSAFE, *cf.EXTENSION)  # `unsafe-then-get` takes them in turn


@dataclass(frozen=True)
class Step:
    method: str = "GET"
    headers: dict = field(default_factory=dict)
    delay_s: float = 1.0  # after the previous step (its scheduled time, and not before its reply)
    body: bytes | None = None
    suffix: str = ""  # another URL of the sequence: its path plus this (an unsafe request's Location)


@dataclass
class Sequence:
    number: int
    case: str
    scenario: str
    path: str
    steps: list[Step]
    index: int = 0  # the next step
    due: float = 0.0
    waiting: bool = False  # the last step's reply is not in yet

    @property
    def key(self) -> int:
        return self.number

    @property
    def finished(self) -> bool:
        return self.index >= len(self.steps)


def scenarios_for(case: cf.Case) -> tuple[str, ...]:
    """The scenarios that can show a broken rule for this case; `repeat` first; a case with scenarios of its own
    names them. Conditional and Range requests go to every case: the Collector answers each proxy's request with the
    reply the client got to the same one (patches 0024 to 0026), whatever the copy's age or the status."""
    if case.scenarios:
        return case.scenarios
    if case.vary:
        return ("repeat", "vary", "conditional", "head")
    if case.status != 200:
        return ("repeat", "reload", "auth", "invalidate", "head", "conditional")
    return ("repeat", "reload", "request-no-store", "conditional", "range", "auth", "invalidate", "head")


def vary_headers(case: cf.Case) -> list[dict]:
    languages = ("en", "fr", "en", "de", "fr")
    encodings = ("gzip, deflate", "identity", "gzip, deflate", "identity", "gzip, deflate")
    if case.vary == ("Accept-Language",):
        return [{"Accept-Language": lang} for lang in languages]
    if case.vary == ("Accept-Encoding",):
        return [{"Accept-Encoding": enc} for enc in encodings[:4]]
    pairs = (("en", 0), ("en", 1), ("fr", 0), ("en", 0), ("fr", 1))
    return [{"Accept-Language": lang, "Accept-Encoding": encodings[e]} for lang, e in pairs]


@dataclass(frozen=True)
class Target:
    """What one sequence's steps are built for: the case (its name and definition), the object id, and the unsafe
    method the sequence sends if its scenario sends one."""

    case_name: str
    case: cf.Case
    oid: str
    unsafe: str


def repeat_steps(t: Target) -> list[Step]:
    """Reuse while fresh, then past max-age=1/2/5."""
    return [Step(delay_s=0), Step(delay_s=1), Step(delay_s=3), Step(delay_s=4)]


def reload_steps(t: Target) -> list[Step]:
    return [Step(delay_s=0), Step(headers={"Cache-Control": "no-cache"}), Step(headers={"Pragma": "no-cache"}),
            Step(headers={"Cache-Control": "max-age=0"}), Step()]


def request_no_store_steps(t: Target) -> list[Step]:
    """A reply to a no-store request must not be reused (RFC 9111 5.2.1.5)."""
    return [Step(headers={"Cache-Control": "no-store"}, delay_s=0), Step(), Step(delay_s=2)]


def conditional_steps(t: Target) -> list[Step]:
    """A 304 is right only for a matching validator (RFC 9111 4.3.2): matching ones, then ones that do not."""
    steps = [Step(delay_s=0)]
    if t.case.etag:
        steps.append(Step(headers={"If-None-Match": cf.etag(t.case_name, t.oid,
                                                            cf.variant_of(t.case, lambda _: ""))}))
    if t.case.last_modified:
        steps.append(Step(headers={"If-Modified-Since": format_date(cf.last_modified(t.case_name, t.oid))}))
        steps.append(Step(headers={"If-Modified-Since": cf.PAST}))
    steps.append(Step(headers={"If-None-Match": WRONG_TAG}))
    if t.case.etag:  # the matching tag again, later
        steps.append(Step(headers={"If-None-Match": steps[1].headers["If-None-Match"]}, delay_s=3))
    return steps


def auth_steps(t: Target) -> list[Step]:
    """Another user's reply, or an authenticated one to nobody (RFC 9111 3.5)."""
    return [Step(headers={"Authorization": AUTH_ALICE}, delay_s=0), Step(), Step(headers={"Authorization": AUTH_BOB})]


def invalidate_steps(t: Target) -> list[Step]:
    """A successful unsafe request invalidates the stored GET (RFC 9111 4.4)."""
    body = None if t.unsafe == "DELETE" else f"spe {t.unsafe} {t.oid}\n".encode()
    return [Step(delay_s=0), Step(), Step(t.unsafe, body=body), Step()]


def range_steps(t: Target) -> list[Step]:
    return [Step(headers={"Range": "bytes=0-99"}, delay_s=0), Step(), Step(headers={"Range": "bytes=100-299"}),
            Step(headers={"Range": "bytes=0-99"})]


def head_steps(t: Target) -> list[Step]:
    """A HEAD reply has no body, and a cached HEAD must not become a GET's body (RFC 9110 9.3.2)."""
    return [Step("HEAD", delay_s=0), Step(), Step("HEAD"), Step(delay_s=3)]


def vary_steps(t: Target) -> list[Step]:
    return [Step(headers=h, delay_s=0 if i == 0 else 1) for i, h in enumerate(vary_headers(t.case))]


# The no-pause sequences below: each dependent request goes the moment the reply it depends on is in.


def reuse_now_steps(t: Target) -> list[Step]:
    """Reuse at once (a stale-on-arrival copy is not excused by a slack), and 4 s later (surely stale, no Age)."""
    return [Step(delay_s=0), Step(delay_s=0), Step(delay_s=0), Step(delay_s=4)]


def revalidation_wait(case: cf.Case) -> float:
    """Until the stored copy must be revalidated: at once for no-cache or a stale-on-arrival reply, else 2 s
    past its max-age (past the judge's rounding slack: a copy served without revalidation is then surely stale)."""
    if "no-cache" in case.cache_control or case.max_age is None:
        return 0
    return case.max_age + 2


def revalidate_steps(t: Target) -> list[Step]:
    """The 304's updated fields must be in every reuse after it (RFC 9111 4.3.4)."""
    return [Step(delay_s=0), Step(delay_s=revalidation_wait(t.case)), Step(delay_s=0), Step(delay_s=1)]


def precedence_steps(t: Target) -> list[Step]:
    """If-None-Match decides, If-Modified-Since is ignored (RFC 9110 13.2.2)."""
    tag, since = cf.etag(t.case_name, t.oid), format_date(cf.last_modified(t.case_name, t.oid))
    return [Step(delay_s=0), Step(headers={"If-None-Match": WRONG_TAG, "If-Modified-Since": since}, delay_s=0),
            Step(headers={"If-None-Match": tag, "If-Modified-Since": cf.PAST}, delay_s=0)]


def conditional_vary_steps(t: Target) -> list[Step]:
    """A 304 carries ETag and Vary (RFC 9110 15.4.5); another variant gets a 200."""
    tag = cf.etag(t.case_name, t.oid, cf.variant_of(t.case, lambda name: "en" if name == "accept-language" else ""))
    return [Step(headers={"Accept-Language": "en"}, delay_s=0),
            Step(headers={"Accept-Language": "en", "If-None-Match": tag}, delay_s=0),
            Step(headers={"Accept-Language": "fr", "If-None-Match": tag}, delay_s=0)]


def unsafe_location_steps(t: Target) -> list[Step]:
    """Both URLs the unsafe request's reply names stored and reused, the unsafe request, both at once
    (RFC 9111 4.4: a cache may invalidate them; either way each proxy gets what the client got)."""
    named = [Step(suffix=suffix, delay_s=0) for suffix in t.case.points_to]
    body = f"spe {t.unsafe} {t.oid}\n".encode() if t.unsafe != "DELETE" else None
    return [*named, *named, Step(t.unsafe, body=body, delay_s=0), *named, *(replace(s, delay_s=3) for s in named)]


def head_update_steps(t: Target) -> list[Step]:
    """A HEAD once the copy must be revalidated: its reply may update the stored one (RFC 9111 4.3.5)."""
    return [Step(delay_s=0), Step("HEAD", delay_s=revalidation_wait(t.case)), Step(delay_s=0), Step(delay_s=1)]


def unsafe_then_get_steps(t: Target) -> list[Step]:
    """Stored and reused, the unsafe request, the GET at once (RFC 9111 4.4), once more."""
    body = None if t.unsafe in ("DELETE", "M-SEARCH") else f"spe {t.unsafe} {t.oid}\n".encode()
    return [Step(delay_s=0), Step(delay_s=0.5), Step(t.unsafe, body=body, delay_s=0), Step(delay_s=0),
            Step(delay_s=3)]


# Every scenario, by name, and the steps it plays on one URL.
STEPS_OF_SCENARIO: dict[str, Callable[[Target], list[Step]]] = {
    "repeat": repeat_steps,
    "reload": reload_steps,
    "request-no-store": request_no_store_steps,
    "conditional": conditional_steps,
    "auth": auth_steps,
    "invalidate": invalidate_steps,
    "range": range_steps,
    "head": head_steps,
    "vary": vary_steps,
    "reuse-now": reuse_now_steps,
    "revalidate": revalidate_steps,
    "precedence": precedence_steps,
    "conditional-vary": conditional_vary_steps,
    "unsafe-then-get": unsafe_then_get_steps,
    "unsafe-location": unsafe_location_steps,
    "head-update": head_update_steps,
}
SCENARIOS = tuple(STEPS_OF_SCENARIO)


def scenario_steps(scenario: str, case_name: str, oid: str, unsafe: str) -> list[Step]:
    target = Target(case_name, cf.CASES[case_name], oid, unsafe)
    steps_of = STEPS_OF_SCENARIO.get(scenario)
    if steps_of is None:
        raise ValueError(f"unknown scenario {scenario!r}")
    return steps_of(target)


class ConformanceMix:
    """Hands out the next conformance request: a due step of a running sequence, else a new sequence's first."""

    def __init__(self, world: str, rng: random.Random):
        self.world, self.rng = world, rng
        self.active: list[Sequence] = []
        self.queue: list[tuple[str, str]] = []
        self.started = 0
        self.rounds = 0
        self.unsafe_turn = 0
        self.invalidating_turn = 0

    def _round(self, number: int) -> list[tuple[str, str]]:
        """Round 0: `repeat` on every case; round 1 the other (case, scenario) pairs, later rounds all pairs;
        each shuffled."""
        names = list(cf.CASES)
        self.rng.shuffle(names)
        if number == 0:
            return [(name, "repeat") for name in names]
        first = 1 if number == 1 else 0
        pairs = [(name, s) for name in names for s in scenarios_for(cf.CASES[name])[first:]]
        self.rng.shuffle(pairs)
        return pairs

    def _start(self, at: float) -> Sequence:
        if not self.queue:
            self.queue = self._round(self.rounds)
            self.rounds += 1
        case_name, scenario = self.queue.pop(0)
        self.started += 1
        oid = f"{self.world}-c{self.started}"
        unsafe = cf.UNSAFE[self.unsafe_turn % len(cf.UNSAFE)]
        if scenario in ("invalidate", "unsafe-location"):
            self.unsafe_turn += 1
        if scenario == "unsafe-then-get":
            unsafe = INVALIDATING[self.invalidating_turn % len(INVALIDATING)]
            self.invalidating_turn += 1
        seq = Sequence(self.started, case_name, scenario, f"{cf.PREFIX}{case_name}/{oid}",
                       scenario_steps(scenario, case_name, oid, unsafe), due=at)
        self.active.append(seq)
        return seq

    def next(self, at: float) -> Planned:
        due = [s for s in self.active if not s.waiting and s.due <= at]
        seq = min(due, key=lambda s: (s.due, s.number)) if due else self._start(at)
        step = seq.steps[seq.index]
        seq.index += 1
        seq.waiting = True
        if not seq.finished:
            seq.due = at + seq.steps[seq.index].delay_s
        return Planned(step.method, seq.path + step.suffix, "conformance", dict(step.headers), step.body,
                       sequence=seq, at=at, step=seq.index - 1)

    @staticmethod
    def cut_on_purpose(plan: Planned) -> bool:
        """Whether the origin ends this request's reply early by design: the first request of a case whose first
        fetch is cut (cut-once). Its client gets a truncated reply, which is the case working, not a failure."""
        seq = plan.sequence
        return isinstance(seq, Sequence) and plan.step == 0 and cf.CASES[seq.case].cut_first

    def completed(self, plan: Planned) -> None:
        """The reply to `plan` is in (or failed): its sequence's next step may go once due."""
        seq = plan.sequence
        if isinstance(seq, Sequence):
            seq.waiting = False
            if seq.finished and seq in self.active:
                self.active.remove(seq)
