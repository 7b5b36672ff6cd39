"""A proxy's reply to a record's request (its leg) as a HAR response: from its mismatch capture where one exists,
else from what the record knows of it.

Of a leg's fields the record knows: the values the cache-rule judge saw served (`cache.evidence.served`, its
"NAME (as served)" entries, with violations only), the names that differ from the Collector's reply
(`mismatched_headers`, no values), and that every other compared field equals the Collector's in meaning: a judged
field whose value the record keeps for the Collector's reply (a fresh origin fetch) is written with that value."""

from __future__ import annotations

from dataclasses import dataclass

from spe_tools.export.captured import captured_response
from spe_tools.export.exchange import BODY_NOT_KEPT
from spe_tools.rundir.captures import Capture
from spe_tools.workload.har.archive import HarResponse

NOT_SENT = "NOT_SENT"
AS_SERVED = " (as served)"
NONE = "(none)"  # the judge's word for a field the served reply did not have
JUDGED = ("cache-control", "expires", "etag", "last-modified", "vary")  # date and age are never compared
NOT_MODIFIED_COMPARED = ("cache-control", "content-location", "date", "etag", "expires", "vary")  # both 304


@dataclass(frozen=True)
class Comparison:
    """Which fields the Multiplier compared: its --compare-header (only those) and --ignore-header (prefixes with
    `*`), as the run's lab.toml set them; empty, its defaults."""
    compare: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def compared(self, name: str) -> bool:
        if self.compare:
            return name in (c.lower() for c in self.compare)
        return not any(name.startswith(i.lower()[:-1]) if i.endswith("*") else name == i.lower()
                       for i in self.ignore)


def _as_served(leg: dict) -> dict[str, str]:
    served = ((leg.get("cache") or {}).get("evidence") or {}).get("served") or {}
    return {name.removesuffix(AS_SERVED): value for name, value in served.items() if name.endswith(AS_SERVED)}


def _equal_to_collector(record: dict, leg: dict, comparison: Comparison) -> dict[str, str]:
    """The judged fields the leg had with the Collector's value (compared, not mismatched)."""
    collector = record.get("collector") or {}
    if leg.get("status") is None or collector.get("status") is None:
        return {}
    both_304 = leg["status"] == collector["status"] == 304
    known = (collector.get("cache") or {}).get("origin") or {}
    mismatched = set(leg.get("mismatched_headers") or ())
    return {name: known[name] for name in JUDGED if name in known and name not in mismatched
            and comparison.compared(name) and (not both_304 or name in NOT_MODIFIED_COMPARED)}


def _no_reply(leg: dict) -> HarResponse:
    """A leg without a status: HAR's status 0 ("no response"), and why."""
    if leg.get("result") == NOT_SENT:
        why = (f"not sent to {leg['name']}: an unsafe request the Multiplier withheld from the proxies (it ran "
               "without a replay port)")
    else:
        why = f"no reply from {leg['name']}: {leg.get('error_detail') or leg.get('error') or leg.get('result')}"
    return HarResponse(0, "", "", [], body_size=0, comment=why, content_comment="no body: no reply")


def _said(leg: dict, served: dict[str, str], equal: dict[str, str], unknown: list[str]) -> str:
    """The response's comment: where each field's value comes from, and which are not known."""
    said = [f"{leg['name']}'s fields as the record knows them, no others"]
    if present := [n for n, v in served.items() if v != NONE]:
        said.append(f"as the cache-rule judge saw them served: {', '.join(present)}")
    if absent := [n for n, v in served.items() if v == NONE]:
        said.append(f"absent as served: {', '.join(absent)}")
    if equal:
        said.append(f"compared and equal in meaning to the Collector's, written with its value: {', '.join(equal)}")
    if unknown:
        said.append(f"differ from the Collector's, values not kept (written empty): {', '.join(unknown)}")
    if leg.get("error"):  # a header, then the body went wrong (the fields were compared all the same)
        said.append(f"the reply did not complete: {leg.get('error_detail') or leg['error']}")
    return "; ".join(said)


def _recorded(record: dict, leg: dict, comparison: Comparison) -> HarResponse:
    if leg.get("status") is None:
        return _no_reply(leg)
    served, equal = _as_served(leg), _equal_to_collector(record, leg, comparison)
    unknown = [n for n in leg.get("mismatched_headers") or () if n not in served]
    fields = [*((n, v) for n, v in served.items() if v != NONE), *((n, v) for n, v in equal.items() if n not in served),
              *((n, "") for n in unknown)]
    return HarResponse(leg["status"], "", leg.get("http_version") or "", fields, body_size=leg.get("bytes", -1),
                       headers_size=leg.get("header_bytes") or -1, comment=_said(leg, served, equal, unknown),
                       content_comment=BODY_NOT_KEPT)


def proxy_response(record: dict, leg: dict, capture: Capture | None, capture_name: str,
                   comparison: Comparison, keep_secrets: bool = False) -> HarResponse:
    if capture is not None and capture.proxy is not None:
        return captured_response(capture.proxy, f"{leg['name']}'s", capture_name, leg.get("header_bytes"),
                                 keep_secrets)
    return _recorded(record, leg, comparison)
