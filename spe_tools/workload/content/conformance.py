"""The conformance cases: replies under /c/<case>/<id> that cover RFC 9111's caching rules.

The case in the path decides the reply's Cache-Control, Expires, validators, Vary, Set-Cookie, status and
Age, so a report reader sees in the URL which rule a reply put to the test (docs/workloads.md lists each
case and its rule). Like the rest of the content model the reply is pure: a URL's body and headers never
change between fetches (a no-store reply included), except per Vary variant. A cache that reuses a copy
it should not have is therefore invisible in the bytes; the Multiplier's cache judge sees it in the fetch
stamps. The request side, the sequences that give caches the chance to break each rule, is in
conformance_mix.py.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from spe_tools.workload.content.model import LAST_MODIFIED_BASE, filler, uniform
from spe_tools.workload.http11 import format_date, parse_date

PREFIX = "/c/"
PAST = "Thu, 01 Jan 1998 00:00:00 GMT"  # fixed dates: a header that changed per fetch would be a mismatch
FUTURE = "Fri, 01 Jan 2038 00:00:00 GMT"
SIZE_MIN, SIZE_SPAN = 1024, 3072
STATUS_REASONS = {202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content", 206: "Partial Content",
                  299: "Unknown Success", 300: "Multiple Choices", 301: "Moved Permanently", 403: "Forbidden",
                  404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 414: "URI Too Long",
                  499: "Unknown Client Error", 502: "Bad Gateway", 503: "Service Unavailable",
                  504: "Gateway Timeout", 599: "Unknown Server Error"}
# Statuses a cache may or may not store (RFC 9111 3: a final status it understands with a lifetime, or one
# that is heuristically cacheable, RFC 9110 15.1): each case comes fresh, stale on arrival and heuristic, so a
# Collector that shares only its 200s shows on them.
ODD_STATUSES = (201, 202, 299, 400, 403, 405, 410, 414, 499, 500, 502, 503, 504, 599)
UNSAFE = ("POST", "PUT", "DELETE")
EXTENSION = ("M-SEARCH", "PROPPATCH")  # methods of unknown safety: a 2xx to them invalidates too (RFC 9111 4.4)
EXPIRES_IS_DATE = "=date"  # Case.expires: the reply's own Date (stale on arrival); "=date+20": 20 s after it
FUTURE_2050 = "Thu, 18 Aug 2050 02:01:18 GMT"  # the borderline-date cases write this instant many ways
RANGE_RE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass(frozen=True)
class Case:
    """One reply shape. `rule` says what RFC 9111 rule it exercises (the docs' table is made of these)."""

    rule: str
    cache_control: str = ""
    expires: str = ""
    status: int = 200
    etag: bool = True
    last_modified: bool = True
    vary: tuple[str, ...] = ()
    set_cookie: bool = False
    age: int | None = None
    extra: tuple[tuple[str, str], ...] = ()  # fields sent as they are: a second Expires, X-Version: 1 ...
    updated: tuple[tuple[str, str], ...] = ()  # what a 304 carries in place of the 200's fields (4.3.4)
    interim: tuple[int, ...] = ()  # 1xx statuses that precede the final reply (RFC 9110 15.2)
    date_offset_s: int | None = None  # the origin's clock this far ahead (a fast Date) or behind (a slow one)
    # Behaviour that differs between fetches of one URL, as real origins' does (origin.py keeps the count):
    cut_first: bool = False  # the first fetch closes the connection halfway through the body
    changes: bool = False  # each fetch a new body and ETag (X-Version: the fetch's number)
    # An unsafe request's reply names these URLs (the path plus the suffix) in Location and Content-Location,
    # which a cache invalidates too when they share the origin (RFC 9111 4.4).
    points_to: tuple[str, str] = ()
    scenarios: tuple[str, ...] = ()  # the sequences it gets, when not the ones its shape implies

    @property
    def max_age(self) -> int | None:
        m = re.search(r"(?:^|, )max-age=(\d+)", self.cache_control)
        return int(m.group(1)) if m else None


def _cases() -> dict[str, Case]:
    cc = {  # Cache-Control alone and combined, with both validators
        "max-age=3600": "fresh for an hour: reuse allowed (4.2)",
        "max-age=1": "stale after 1 s: reuse then needs validation (4.2.4)",
        "max-age=2": "stale after 2 s (4.2.4)",
        "max-age=5": "stale after 5 s (4.2.4)",
        "no-store": "must not be stored (5.2.2.5)",
        "no-cache": "must be validated before each reuse (5.2.2.4)",
        "public": "public without a lifetime: heuristic freshness allowed (5.2.2.9, 4.2.2)",
    }
    cases = {name: Case(rule, name) for name, rule in cc.items()}
    for name, value, rule in (
        ("s-maxage=2", "max-age=3600, s-maxage=2", "a shared cache is bound by s-maxage, not max-age (5.2.2.10)"),
        ("s-maxage=3600", "max-age=0, s-maxage=3600", "a shared cache may reuse for s-maxage (5.2.2.10)"),
        ("no-store,max-age=3600", "no-store, max-age=3600", "no-store wins over a lifetime (5.2.2.5)"),
        ("no-cache,max-age=3600", "no-cache, max-age=3600", "no-cache wins over a lifetime (5.2.2.4)"),
        ("private", "private, max-age=3600", "a shared cache must not store it (5.2.2.7)"),
        ("public,max-age=3600", "public, max-age=3600", "reusable, also for Authorization requests (3.5)"),
        ("must-revalidate", "must-revalidate, max-age=2", "never served stale (5.2.2.2)"),
        ("proxy-revalidate", "proxy-revalidate, max-age=2", "a shared cache never serves it stale (5.2.2.8)"),
        ("no-transform", "no-transform, max-age=3600", "no transformation of the body (5.2.2.6)"),
        ("immutable", "max-age=3600, immutable", "RFC 8246: no revalidation while fresh"),
        ("stale-while-revalidate", "max-age=1, stale-while-revalidate=30",
         "RFC 5861: stale for 30 s while revalidating (4.2.4 permission)"),
        ("stale-if-error", "max-age=1, stale-if-error=60", "RFC 5861: stale only on an error (4.2.4)"),
        ("private=set-cookie", 'private="Set-Cookie", max-age=3600',
         "a shared cache may store it without Set-Cookie (5.2.2.7)"),
        ("no-cache=set-cookie", 'no-cache="Set-Cookie", max-age=3600',
         "reuse without validation only without Set-Cookie (5.2.2.4)"),
        ("max-age=2,expires-future", "max-age=2", "max-age wins over Expires (5.3)"),
        ("max-age=3600,expires-past", "max-age=3600", "max-age wins over a past Expires (5.3)"),
    ):
        expires = FUTURE if name.endswith("future") else PAST if name.endswith("past") else ""
        cases[name] = Case(rule, value, expires=expires, set_cookie='"Set-Cookie"' in value)
    cases |= {
        "expires-past": Case("Expires in the past: stale on arrival (5.3)", expires=PAST),
        "expires-future": Case("Expires in 2038: fresh (5.3)", expires=FUTURE),
        "expires=0": Case("an invalid Expires means already expired (5.3)", expires="0"),
        "expires-garbage": Case("an invalid Expires means already expired (5.3)", expires="not a date"),
        "heuristic": Case("Last-Modified only: heuristic freshness, at most 10 % of its age advised (4.2.2)",
                          etag=False),
        "etag-only": Case("validation with If-None-Match only (4.3.1)", "max-age=3600", last_modified=False),
        "last-modified-only": Case("validation with If-Modified-Since only (4.3.1)", "max-age=3600", etag=False),
        "no-validators": Case("stale and no validator: a full fetch (4.3.1)", "max-age=2", etag=False,
                              last_modified=False),
        "set-cookie": Case("Set-Cookie does not forbid storing (7.3)", "max-age=3600", set_cookie=True),
        "age=7200,max-age=3600": Case("stale on arrival: its Age is past max-age (4.2.3)", "max-age=3600", age=7200),
        "age=2,max-age=5": Case("its Age counts: stale 3 s after arrival (4.2.3)", "max-age=5", age=2),
        "vary=accept-language": Case("a variant serves only its Accept-Language (4.1)", "max-age=3600",
                                     vary=("Accept-Language",)),
        "vary=accept-encoding": Case("a variant serves only its Accept-Encoding (4.1)", "max-age=3600",
                                     vary=("Accept-Encoding",)),
        "vary=accept-language,accept-encoding": Case("every Vary field must match (4.1)", "max-age=3600",
                                                     vary=("Accept-Language", "Accept-Encoding")),
    }
    cases |= _no_pause_cases()
    for status in (203, 204, 300, 301, 404):
        cases[f"status={status}"] = Case(f"{status} is cacheable with a lifetime (3, 4.2)", "max-age=3600",
                                         status=status)
    for status in (301, 404):
        cases[f"status={status},heuristic"] = Case(f"{status} is heuristically cacheable (4.2.2)", status=status,
                                                   etag=False)
    return cases | _odd_status_cases()


def _odd_status_cases() -> dict[str, Case]:
    """ODD_STATUSES fresh (max-age=3600), stale on arrival (Expires in the past) and with Last-Modified only:
    stored or not as the cache understands the status (RFC 9111 3, 4.2.2); never another fetch's reply."""
    cases = {}
    for status in ODD_STATUSES:
        cases[f"status={status}"] = Case(f"{status} with a lifetime: stored only if the cache understands it (3)",
                                         "max-age=3600", status=status)
        cases[f"status={status},stale"] = Case(f"{status} stale on arrival: reused only after validation (4.2.4)",
                                               expires=PAST, status=status)
        cases[f"status={status},heuristic"] = Case(f"{status} with Last-Modified only: heuristic freshness only "
                                                   "for a heuristically cacheable status (4.2.2)", status=status,
                                                   etag=False)
    return cases


VALID_FUTURE = ("Thursday, 18-Aug-50 02:01:18 GMT", "Thu Aug 18 02:01:18 2050")  # rfc850, asctime (9110 5.6.7)


def _no_pause_cases() -> dict[str, Case]:
    """The no-pause cases: sequences with no pause between dependent requests (conformance_mix.py) on replies
    that must be revalidated, dated oddly, updated by a 304, invalidated by any unsafe method or preceded by
    1xx. Each names its scenarios, so the other cases' sequences (and the noise floor) do not include them."""
    reuse = ("repeat", "reuse-now")
    update = ("repeat", "revalidate", "head-update")
    v1, v2 = ("X-Version", "1"), ("X-Version", "2")
    expires = {  # Expires forms: invalid means already expired (RFC 9111 5.3); 9110 5.6.7's formats are exact
        "expires-double-space": ("Thu, 18  Aug  2050 02:01:18 GMT", "double spaces: invalid, expired (5.3)"),
        "expires-one-digit-hour": ("Thu, 18 Aug 2050 2:01:18 GMT", "a one-digit hour: invalid, expired (5.3)"),
        "expires-gMT": ("Thu, 18 Aug 2050 02:01:18 gMT", "zone `gMT`: invalid; recipients MAY accept it "
                        "(RFC 9110 5.6.7)"),
        "expires-rfc850": (VALID_FUTURE[0], "rfc850 form of a 2050 date: valid, fresh (RFC 9110 5.6.7)"),
        "expires-asctime": (VALID_FUTURE[1], "asctime form of a 2050 date: valid, fresh (RFC 9110 5.6.7)"),
        "expires=date": (EXPIRES_IS_DATE, "Expires equal to Date: stale on arrival (4.2.1)"),
    }
    cases = {name: Case(rule, expires=value, scenarios=reuse) for name, (value, rule) in expires.items()}
    cases |= {
        "expires-twice": Case("two Expires, past then 2038: the first or stale, never fresh (4.2.1)", expires=PAST,
                              extra=(("Expires", FUTURE),), scenarios=reuse),
        "max-age-twice": Case("max-age twice, 1 then 3600: the first or stale (4.2.1)", "max-age=1, max-age=3600",
                              scenarios=reuse),
        "max-age=non-integer": Case("max-age=3600.5 is invalid: stale encouraged (4.2.1, 1.2.2)", "max-age=3600.5",
                                    scenarios=reuse),
        "age=2147483648,max-age=3600": Case("a huge Age (2^31): stale on arrival (1.2.2, 4.2.3)", "max-age=3600",
                                            age=2147483648, scenarios=reuse),
        "date-stored": Case("a reused reply keeps its stored Date (RFC 9110 6.6.1, 4.3.4)", "max-age=3600",
                            scenarios=("repeat",)),
        "connection=x-hop-field": Case("a field Connection lists is for one hop: neither forwarded nor stored "
                                       "(RFC 9110 7.6.1, 3.1)", "max-age=3600",
                                       extra=(("Connection", "X-Hop-Field"), ("X-Hop-Field", "hop")),
                                       scenarios=reuse),
        "set-cookie,reuse": Case("a stored Set-Cookie is served with the reuse (3.1, 7.3)", "max-age=3600",
                                 set_cookie=True, scenarios=reuse),
        "no-cache,update": Case("the 304 of a revalidation updates the stored reply (4.3.4): X-Version: 2",
                                "no-cache", extra=(v1,), updated=(v2,), scenarios=update),
        "no-cache,update-length": Case("a 304 with Content-Length: 0 (as some origins send) updates no stored "
                                       "Content-Length (3.2)", "no-cache", extra=(v1,),
                                       updated=(("Content-Length", "0"), v2), scenarios=update),
        "max-age=2,update-length": Case("revalidated after 2 s, a 304 with Content-Length: 0 updates no stored "
                                        "Content-Length (3.2)", "max-age=2", extra=(v1,),
                                        updated=(("Content-Length", "0"), v2), scenarios=update),
        "max-age=2,update": Case("the 304 updates Cache-Control to max-age=3600 and X-Version (4.3.4)", "max-age=2",
                                 extra=(v1,), updated=(("Cache-Control", "max-age=3600"), v2), scenarios=update),
        "max-age=2,update-field": Case("the 304 updates an extension field only, X-Version (4.3.4)", "max-age=2",
                                       extra=(v1,), updated=(v2,), scenarios=update),
        "expires-past,update": Case("the 304 updates Expires to 2038 and X-Version (4.3.4)", expires=PAST,
                                    extra=(v1,), updated=(("Expires", FUTURE), v2), scenarios=update),
        "validators": Case("If-None-Match takes precedence over If-Modified-Since (RFC 9110 13.2.2)",
                           "max-age=3600", scenarios=("repeat", "precedence")),
        "etag,vary": Case("a 304 for a Vary reply carries ETag and Vary (RFC 9110 15.4.5)", "max-age=3600",
                          vary=("Accept-Language",), scenarios=("repeat", "conditional-vary")),
        "invalidated": Case("a 2xx to any unsafe method, extension ones too, invalidates (4.4)", "max-age=3600",
                            scenarios=("repeat", "unsafe-then-get")),
        "interim=103": Case("103 Early Hints before the reply: relayed, never final (RFC 9110 15.2, RFC 8297)",
                            "max-age=3600", interim=(103,), scenarios=("repeat",)),
        "interim=102": Case("102 Processing before the reply: the final reply follows (RFC 9110 15.2)",
                            "max-age=3600", interim=(102,), scenarios=("repeat",)),
    }
    return cases | _origin_quirk_cases()


def _origin_quirk_cases() -> dict[str, Case]:
    """Replies whose shape depends on the origin's clock or its history (the fetch's number), and the sequences
    in which a cache's parent must hand each of a client request's proxies the client's own fetch."""
    reuse = ("repeat", "reuse-now")
    return {
        "vary=*": Case("Vary: * never matches a later request: each reuse validated (4.1)", "max-age=3600",
                       extra=(("Vary", "*"),), scenarios=reuse),
        "date-slow,age=25": Case("Date 10 s slow, Expires Date + 20, Age 25: stale on arrival (4.2.1, 4.2.3)",
                                 expires="=date+20", age=25, date_offset_s=-10, scenarios=reuse),
        "date-slow": Case("Date 10 s slow, Expires Date + 20: the lifetime is Expires - Date (4.2.1)",
                          expires="=date+20", date_offset_s=-10, scenarios=reuse),
        "date-fast": Case("Date 10 s fast, Expires Date + 20: the lifetime is Expires - Date (4.2.1)",
                          expires="=date+20", date_offset_s=10, scenarios=reuse),
        "cut-once": Case("the first fetch ends early: never stored, never served as whole (3.3, RFC 9112 8)",
                         "max-age=3600", cut_first=True, scenarios=("repeat",)),
        "no-cache,changing": Case("no-cache, a new body and ETag on each fetch: every reuse validated, each "
                                  "validation may bring a new body (5.2.2.4, 4.3.3)", "no-cache", changes=True,
                                  last_modified=False, scenarios=("repeat", "revalidate")),
        "invalidated-location": Case("a 2xx to an unsafe request invalidates its Location and Content-Location "
                                     "of the same origin too (4.4)", "max-age=3600",
                                     points_to=("-location", "-content-location"),
                                     scenarios=("repeat", "unsafe-location")),
    }


CASES: dict[str, Case] = _cases()


@dataclass(frozen=True)
class CaseReply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    head_only: bool = False
    # Interim (1xx) responses the origin sends before this one, in order, each with its own fields (none to an
    # HTTP/1.0 client: spe_tools/workload/origin.py).
    interim: tuple[tuple[int, tuple[tuple[str, str], ...]], ...] = ()
    cut: bool = False  # the origin closes the connection halfway through the body


def split(path: str) -> tuple[str, str] | None:
    """(case, id) of a /c/<case>/<id> path, None for another path or an unknown case."""
    rest = path[len(PREFIX):] if path.startswith(PREFIX) else ""
    case, _, oid = rest.partition("/")
    return (case, oid) if case in CASES and oid else None


def variant_of(case: Case, header: Callable[[str], str]) -> str:
    """The variant a request selects: the values of the Vary-named fields it sent ('' for none)."""
    parts = []
    for name in case.vary:
        value = header(name.lower())
        if name == "Accept-Encoding":
            value = "gzip" if "gzip" in value.lower() else "identity"
        parts.append(f"{name.lower()}={value[:64]}")
    return ";".join(parts)


def etag(case_name: str, oid: str, variant: str = "") -> str:
    """The strong tag of one URL's variant: each variant its own, since their bodies differ (RFC 9110 8.8.3)."""
    return '"c-' + hashlib.blake2b(f"{case_name}\0{oid}\0{variant}".encode(), digest_size=8).hexdigest() + '"'


def last_modified(case_name: str, oid: str) -> int:
    return LAST_MODIFIED_BASE - 86400 - int(uniform(f"{case_name}/{oid}", "c-lm") * 365 * 86400)


def plain_body(case_name: str, oid: str, variant: str) -> bytes:
    key = f"{case_name}/{oid}"
    size = SIZE_MIN + int(uniform(key, "c-size") * SIZE_SPAN)
    head = f"spe conformance {case_name} {oid} variant {variant or '-'}\n".encode()
    return head + filler(f"c\0{key}\0{variant}", size - len(head))


def encoded_body(case_name: str, oid: str, variant: str) -> bytes:
    """The gzip variant is the identity one's content, compressed: other bytes, the same representation."""
    content_variant = ";".join(p for p in variant.split(";") if not p.startswith("accept-encoding="))
    body = plain_body(case_name, oid, content_variant)
    return gzip.compress(body, mtime=0) if "accept-encoding=gzip" in variant else body


def interim_of(case: Case, oid: str) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
    """The 1xx responses a case's reply is preceded by: 103 with the Link a browser would preload."""
    hints = {103: (("Link", f"</c/max-age=3600/{oid}.css>; rel=preload; as=style"),)}
    return tuple((status, hints.get(status, ())) for status in case.interim)


def headers_of(case_name: str, case: Case, oid: str, variant: str) -> list[tuple[str, str]]:
    """A case's reply headers, always in this order: freshness, the case's extra headers, validators, the rest."""
    return [("Content-Type", "text/plain"), *_freshness_headers(case), *case.extra,
            *_validator_headers(case_name, case, oid, variant), *_other_headers(case, oid, variant)]


def _freshness_headers(case: Case) -> list[tuple[str, str]]:
    headers = []
    expires = case.expires
    if case.date_offset_s is not None or expires.startswith(EXPIRES_IS_DATE):
        date = int(time.time()) + (case.date_offset_s or 0)  # the origin sends no Date of its own then
        headers.append(("Date", format_date(date)))
        if expires.startswith(EXPIRES_IS_DATE):
            expires = format_date(date + int(expires[len(EXPIRES_IS_DATE):] or 0))
    if case.cache_control:
        headers.append(("Cache-Control", case.cache_control))
    if expires:
        headers.append(("Expires", expires))
    return headers


def _validator_headers(case_name: str, case: Case, oid: str, variant: str) -> list[tuple[str, str]]:
    headers = []
    if case.last_modified:
        headers.append(("Last-Modified", format_date(last_modified(case_name, oid))))
    if case.etag:
        headers.append(("ETag", etag(case_name, oid, variant)))
    return headers


def _other_headers(case: Case, oid: str, variant: str) -> list[tuple[str, str]]:
    headers = []
    if case.vary:
        headers.append(("Vary", ", ".join(case.vary)))
    if "accept-encoding=gzip" in variant:
        headers.append(("Content-Encoding", "gzip"))
    if case.set_cookie:
        headers.append(("Set-Cookie", f"spe={hashlib.md5(oid.encode()).hexdigest()[:12]}; Path=/"))
    if case.age is not None:
        headers.append(("Age", str(case.age)))
    if case.changes:
        headers.append(("X-Version", variant.rpartition("version=")[2]))
    if case.status == 301:
        headers.append(("Location", f"{PREFIX}max-age=3600/{oid}"))
    if case.status == 200:
        headers.append(("Accept-Ranges", "bytes"))
    return headers


def not_modified(case_name: str, case: Case, oid: str, variant: str, header: Callable[[str], str]) -> bool:
    """RFC 9110 13.2.2: If-None-Match (weak comparison) wins over If-Modified-Since; only for 2xx replies."""
    if not 200 <= case.status < 300:
        return False
    inm = header("if-none-match")
    if inm:
        tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
        return case.etag and ("*" in tags or etag(case_name, oid, variant) in tags)
    ims = header("if-modified-since")
    since = parse_date(ims) if ims and case.last_modified else None
    return since is not None and since >= last_modified(case_name, oid)


def byte_range(value: str, size: int) -> tuple[int, int] | None:
    """(first, last) of a single satisfiable `bytes=a-b` range; None: serve the whole reply (RFC 9110 14.2)."""
    m = RANGE_RE.match(value.strip())
    if not m:
        return None
    first = int(m.group(1))
    last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
    return (first, last) if first <= last < size else None


def reply(method: str, path: str, header: Callable[[str], str], fetch: int = 1) -> CaseReply:
    """The reply to `method` on a /c/ path; `header(lowercase name)` gives a request header ('' if absent);
    `fetch`: this request's number among the origin's requests for the path (1 the first)."""
    parsed = split(path)
    if parsed is None:
        return CaseReply(404, [("Content-Type", "text/plain"), ("Cache-Control", "no-store")],
                         b"404 Not Found: no such conformance case (docs/workloads.md)\n")
    case_name, oid = parsed
    if method in UNSAFE or method in EXTENSION:
        # Succeeds (the extension methods too), so a cache must invalidate its stored copies of the URI and may
        # invalidate the ones its Location and Content-Location name (RFC 9111 4.4).
        suffixes = CASES[case_name].points_to
        named = list(zip(("Location", "Content-Location"), (path + suffix for suffix in suffixes), strict=False))
        return CaseReply(200, [("Content-Type", "text/plain"), ("Cache-Control", "no-store"), *named],
                         f"spe conformance {method} {path} done\n".encode())
    if method not in ("GET", "HEAD"):
        return CaseReply(405, [("Content-Type", "text/plain"), ("Cache-Control", "no-store"),
                               ("Allow", "GET, HEAD, POST, PUT, DELETE, " + ", ".join(EXTENSION))],
                         b"405 Method Not Allowed\n")
    case = CASES[case_name]
    variant = variant_of(case, header)
    if case.changes:  # each fetch another representation: its own tag and body
        variant = f"{variant};version={fetch}".lstrip(";")
    headers = headers_of(case_name, case, oid, variant)
    if not_modified(case_name, case, oid, variant, header):
        return CaseReply(304, updated_for_304(case, headers), b"")
    body = b"" if case.status == 204 else encoded_body(case_name, oid, variant)
    wanted = byte_range(header("range"), len(body)) if case.status == 200 and method == "GET" else None
    if wanted:
        first, last = wanted
        return CaseReply(206, [*headers, ("Content-Range", f"bytes {first}-{last}/{len(body)}")],
                         body[first:last + 1])
    return CaseReply(case.status, headers, body, method == "HEAD", interim_of(case, oid),
                     cut=case.cut_first and fetch == 1)


def updated_for_304(case: Case, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The 200's fields but the body's own, each field the case updates replaced by its new value: the same
    304 on every revalidation, so the reply stays deterministic (the 200 always X-Version: 1, the 304 2)."""
    new = dict(case.updated)
    kept = [(name, new.pop(name, value)) for name, value in headers
            if name not in ("Content-Type", "Content-Encoding", "Accept-Ranges")]
    return kept + list(new.items())  # in place, so a field's position does not change between 200 and 304
