"""A repro case as a HAR 1.2 file (DIR/case.har, beside case.json): each request of the case with its recorded
fields, answered by the origin's reply in force for it, so that a bug report can carry the case in a format every
HAR tool reads, and `./spe origin --har` serves it (`./spe replay` sends its requests).

What a step's entry holds, and why (docs/repro.md):
- the request: method, URL, the recorded request fields (credentials as the case's fixed stand-ins); no body
  (the log keeps none: bodySize -1);
- the response: the origin's reply in force, not what the proxy answered (the case is about what the proxy does
  with it): its status, its judged fields as recorded (Date included: the HAR origin moves the dates to now), its
  other fields with the stand-in values the stand-in origin sends (the record keeps their names only); no body, its
  size only (the HAR origin sends filler of that size); an unsafe method's reply as the stand-in origin sends it;
- timings unknown (-1: the case keeps no origin think time);
- `_spe`: the record id, the step's offset, whether the Collector fetched the reply for it, and the interim
  responses the origin sent first (HAR has no place for them; `./spe repro DIR` sends them).
"""

from __future__ import annotations

from pathlib import Path

from spe_tools.repro.case import UNSAFE, Case, Step
from spe_tools.repro.stand_ins import UNSAFE_REPLY_FIELDS, recorded_fields, stand_in_fields
from spe_tools.workload.har.archive import HarEntry, HarPage, HarRequest, HarResponse, write_har

CASE_HAR = "case.har"
PAGE_ID = "case"
UNKNOWN_TIMINGS = {"send": 0, "wait": -1, "receive": -1}


def _comment(case: Case, step: Step) -> str:
    if step.method in UNSAFE:
        return "the origin's reply to this unsafe request: its status as recorded, never stored"
    said = [f"the origin's reply in force for this request ({'fetched for it' if step.fresh else 'an earlier fetch'}"
            f", {step.reply.fetched_offset_s:g} s into the case), not what the proxy answered"]
    if stand_ins := stand_in_fields(step.reply):
        said.append(f"the record keeps no values of {', '.join(stand_ins)}: stand-ins, as ./spe repro sends them")
    if step.reply.interim:
        said.append(f"the origin sent interim responses first ({', '.join(map(str, step.reply.interim))}), which a "
                    "HAR cannot hold")
    return "; ".join(said)


def step_response(case: Case, step: Step) -> HarResponse:
    reply = step.reply
    fields = list(UNSAFE_REPLY_FIELDS) if step.method in UNSAFE else recorded_fields(reply)
    return HarResponse(reply.status, headers=fields, body_size=reply.body_bytes, comment=_comment(case, step),
                       content_comment="the body is not kept (the record has its size only)")


def step_entry(case: Case, step: Step) -> HarEntry:
    body_size = -1 if step.method in UNSAFE else 0  # the log keeps no request body
    request = HarRequest(step.method, case.url, headers=list(step.headers.items()), body_size=body_size)
    spe = {"record_id": step.record_id, "offset_s": step.offset_s, "fresh": step.fresh}
    if step.reply.interim:
        spe["interim"] = list(step.reply.interim)
    return HarEntry(case.recorded_start + step.offset_s, request, step_response(case, step), pageref=PAGE_ID,
                    timings=dict(UNKNOWN_TIMINGS), extensions={"_spe": spe})


def case_page(case: Case) -> HarPage:
    rules = ", ".join(f.rule for f in case.expected)
    return HarPage(PAGE_ID, f"SPE repro case: proxy {case.proxy.name}'s {rules} on request {case.request_id}",
                   case.recorded_start, comment=case.url)


def write_case_har(case: Case, path: Path) -> Path:
    comment = (f"SPE repro case of proxy {case.proxy.name} (kind {case.proxy.kind}) on request {case.request_id} "
               f"of {case.source}: the requests for {case.url} up to it, each answered by the origin's reply in "
               "force. ./spe origin --har serves it (each URL's replies in the order recorded, not by time: "
               "./spe repro DIR replays the case with its timing). docs/repro.md")
    write_har(path, [step_entry(case, s) for s in case.steps], creator="SPE repro", comment=comment,
              pages=[case_page(case)])
    return path
