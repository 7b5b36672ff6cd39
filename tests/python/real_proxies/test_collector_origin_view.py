"""The patched Collector's proxy ports stand in for the origin (patch 0021): a proxy under test that only
forwards gets, for every request, what the origin sent for the fetch it shares: the fields in the
origin's order with its values (a huge Age, an invalid Date, Connection and the field it lists, the
cookie Squid strips from its hits), the interim responses, and for a conditional request the origin's
own 304, or one made from the origin's fields. The client's own port keeps Squid's caching.

The test plays the forwarding proxy itself: it sends each request to a proxy port with the client
request's tag (X-SPE-Request), as the Multiplier and a proxy under test would, and reads the bytes.
"""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT
from parts import require

from spe_tools import collector
from spe_tools.collector import start_collector
from spe_tools.process import ProcessGroup, free_port

sys.path.insert(0, str(ROOT / "tests/fixtures"))
from verbatim_origin import CASES  # noqa: E402

ORIGIN = ROOT / "tests/fixtures/verbatim_origin.py"
TAGS = itertools.count(1)


class Message:
    def __init__(self, status: int, fields: list[tuple[str, str]]):
        self.status, self.fields = status, fields

    def get(self, name: str) -> str | None:
        return next((v for n, v in self.fields if n.lower() == name.lower()), None)

    def without_stamps(self) -> list[tuple[str, str]]:
        """The fields but the Collector's own (X-SPE-*), names lowercased."""
        return [(n.lower(), v) for n, v in self.fields if not n.lower().startswith("x-spe-")]


def exchange(port: int, url: str, headers: dict[str, str]) -> tuple[list[Message], bytes]:
    """One GET on a new connection; every message read (interim ones first) and the final body."""
    lines = [f"GET {url} HTTP/1.1", f"Host: {url.split('/')[2]}", *[f"{n}: {v}" for n, v in headers.items()]]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        reader = sock.makefile("rb")
        messages = []
        while True:
            status = int(reader.readline().decode("latin-1").split(" ", 2)[1])
            fields = []
            while (line := reader.readline().decode("latin-1")) not in ("\r\n", ""):
                name, _, value = line.partition(":")
                fields.append((name.strip(), value.strip()))
            messages.append(Message(status, fields))
            if status >= 200:
                break
        length = int(messages[-1].get("Content-Length") or 0)
        return messages, reader.read(length) if length else b""


def tag() -> dict[str, str]:
    return {"X-SPE-Request": f"fedcba9876543210-{next(TAGS)}"}


class Bed:
    def __init__(self, origin: int, ports: dict[str, int]):
        self.origin, self.ports = origin, ports

    def url(self, case: str) -> str:
        return f"http://127.0.0.1:{self.origin}/case/{case}"

    def get(self, port: str, case: str, headers: dict[str, str]) -> list[Message]:
        return exchange(self.ports[port], self.url(case), headers)[0]

    def fetches(self, case: str) -> int:
        with socket.create_connection(("127.0.0.1", self.origin), timeout=10) as sock:
            sock.sendall(b"GET /_stats HTTP/1.1\r\nHost: o\r\n\r\n")
            data = b""
            while not data.endswith(b"}"):
                data += sock.recv(65536)
        return json.loads(data.split(b"\r\n\r\n", 1)[1]).get(f"/case/{case}", 0)


@pytest.fixture(scope="module")
def bed():
    require(collector.missing("spe"), "the patched Collector")
    workdir = Path(tempfile.mkdtemp(prefix="spe-origin-view-test-"))
    workdir.chmod(0o755)  # Squid drops to user `proxy`, which must reach its directory
    with ProcessGroup(workdir) as group:
        origin = free_port()
        group.start("origin", [sys.executable, str(ORIGIN), str(origin)], port=origin)
        ports = {name: free_port() for name in ("direct", "p1", "p2")}
        start_collector(group, "collector", "spe", ports["direct"], {"p1": ports["p1"], "p2": ports["p2"]})
        yield Bed(origin, ports)
    shutil.rmtree(workdir, ignore_errors=True)


def origin_fields(case: str, reply: Message) -> list[tuple[str, str]]:
    """What the origin sent for the fetch `reply` names (X-Serial), names lowercased."""
    date = [] if CASES[case].get("no_date") else [("date", reply.get("Date"))]
    body = f"case /case/{case} fetch {reply.get('X-Serial')}\n".encode()
    return [(n.lower(), v) for n, v in date + CASES[case]["fields"]] + [
        ("x-serial", reply.get("X-Serial")), ("content-length", str(len(body)))]


@pytest.mark.parametrize("case,stored", [("huge-age", True), ("connection", True), ("invalid-date", False),
                                         ("order", False)])
def test_a_proxy_gets_the_origins_fields_in_its_order_with_its_values(bed, case, stored):
    """`stored`: Squid keeps the reply for every later request; the others (a Set-Cookie, a Date it cannot
    read) it asks the origin for again for each client request (docs/collector.md), which changes nothing
    in what the proxies get: the origin's fields for the fetch they share."""
    client = tag()
    direct = bed.get("direct", case, client)[-1]
    shared = bed.get("p1", case, client)[-1]         # the client's fetch, shared
    later = bed.get("p2", case, tag())[-1]           # another client request: a hit in the Collector, if stored
    assert shared.without_stamps() == origin_fields(case, direct)
    assert later.without_stamps() == origin_fields(case, later)
    assert (later.get("X-Serial") == direct.get("X-Serial")) == stored
    assert bed.fetches(case) == (1 if stored else 2)
    # The client's own port is Squid's: its Via and X-Cache, no Connection-listed field, its own Age.
    assert direct.get("X-Cache") and direct.get("X-Hop-Field") is None
    assert shared.get("X-Cache") is None and shared.get("Via") is None and shared.get("X-SPE-Fetch")


def test_a_huge_age_and_an_invalid_date_reach_the_proxies_untouched(bed):
    huge = bed.get("p1", "huge-age", tag())[-1]
    assert huge.get("Age") == "2147483648"
    invalid = bed.get("p1", "invalid-date", tag())[-1]
    assert [v for n, v in invalid.fields if n.lower() == "date"] == ["foo"]


def test_the_parent_stamp_names_the_connection_listed_field_apart_from_the_others(bed):
    """X-SPE-Parent's fields leave X-Hop-Field out (no proxy is to keep it) and its connection names it
    (patch 0023), on the shared fetch and on a hit alike, so the judge can name a proxy that keeps it."""
    client = tag()
    bed.get("direct", "connection", client)
    for reply in (bed.get("p1", "connection", client)[-1], bed.get("p2", "connection", tag())[-1]):
        stamp = reply.get("X-SPE-Parent")
        assert reply.get("X-Hop-Field") == "hop" and 'connection="x-hop-field"' in stamp, stamp
        assert "x-hop-field" not in stamp.split('fields="')[1], stamp
    plain = bed.get("p1", "huge-age", tag())[-1].get("X-SPE-Parent")
    assert "connection=" not in plain, plain


def test_a_proxy_gets_the_interim_responses_the_fetch_got(bed):
    client = tag()
    direct = bed.get("direct", "early-hints", client)
    assert [m.status for m in direct] == [103, 200]  # forwarded live to the request that fetched
    for messages in (bed.get("p1", "early-hints", client), bed.get("p2", "early-hints", tag())):
        assert [m.status for m in messages] == [103, 200]
        assert messages[0].without_stamps() == [("link", "</style.css>; rel=preload; as=style")]
    assert bed.fetches("early-hints") == 1


def test_a_304_made_from_a_copy_keeps_every_field_but_the_representations(bed):
    client = tag()
    direct = bed.get("direct", "order", client)[-1]
    conditional = {"If-None-Match": '"o1"'}
    for port, headers in (("p1", client), ("direct", tag())):
        made = bed.get(port, "order", {**headers, **conditional})[-1]
        assert made.status == 304
        # Content-Type, Set-Cookie and the framing stay out (RFC 9110 15.4.5); the rest as sent.
        assert made.without_stamps() == [("date", direct.get("Date")),
                                         ("cache-control", "public, proxy-revalidate, no-transform, max-age=86400"),
                                         ("x-zeta", "z"), ("etag", '"o1"'), ("x-alpha", "a"),
                                         ("x-serial", direct.get("X-Serial"))]


def test_a_client_hit_tells_the_cookie_squid_withheld_and_the_proxies_get_it(bed):
    bed.get("direct", "order", tag())
    client = tag()
    hit = bed.get("direct", "order", client)[-1]
    assert hit.get("Set-Cookie") is None and hit.get("X-SPE-Origin-Set-Cookie") == "s=1; Path=/"
    assert bed.get("p1", "order", client)[-1].get("Set-Cookie") == "s=1; Path=/"


def test_a_revalidated_copy_gives_the_origins_304_and_its_updated_fields(bed):
    bed.get("direct", "update", tag())
    time.sleep(1.5)  # max-age=1: the next request revalidates
    client = tag()
    direct = bed.get("direct", "update", client)[-1]
    assert direct.status == 200 and direct.get("X-Content-Foo") == "2" and bed.fetches("update") == 2
    not_modified = bed.get("p1", "update", {**client, "If-None-Match": '"u1"'})[-1]
    assert not_modified.status == 304
    # The origin's 304 itself, its Content-Length included (RFC 9110 8.6 forbids only a wrong one).
    assert not_modified.without_stamps() == [("date", not_modified.get("Date"))] + [
        (n.lower(), v) for n, v in CASES["update"]["not_modified"]] + [("x-serial", not_modified.get("X-Serial"))]
    whole = bed.get("p2", "update", client)[-1]
    # The 200's fields updated in place (RFC 9111 3.2): Content-Length is the 200's, not the 304's.
    assert [n for n, _ in whole.without_stamps()] == ["date", "cache-control", "etag", "test-header",
                                                      "x-content-foo", "x-kept", "x-serial", "content-length"]
    assert whole.get("Cache-Control") == "max-age=3600" and whole.get("Test-Header") == "B"
    assert whole.get("X-Kept") == "k" and whole.get("Content-Length") != "0"
    assert bed.fetches("update") == 2
    # Squid's own copy keeps its length too (patch 0022): the client's next hit has the body.
    assert exchange(bed.ports["direct"], bed.url("update"), tag())[1].startswith(b"case /case/update fetch")


def test_a_client_requests_proxies_get_its_304_after_a_later_reload_revalidated(bed):
    """The proxies' requests come after their client request's reply, and may come after a later client
    request revalidated the copy: a browser reloading page after page revalidates the same image each time,
    and a real origin's 304s differ (DokuWiki's carry a new Expires). Each proxy request still gets what its
    own client request got: that request's 304 from the origin, the copy as that 304 updated it, and its
    stamps (patch 0024); before, the late request was revalidated anew and got the origin's next 304."""
    bed.get("direct", "reload", tag())
    reload = {"Cache-Control": "max-age=0", "If-None-Match": '"r1"'}
    first, second = tag(), tag()
    first_304 = bed.get("direct", "reload", {**first, **reload})[-1]
    second_304 = bed.get("direct", "reload", {**second, **reload})[-1]
    assert first_304.status == second_304.status == 304
    assert first_304.get("X-Serial") != second_304.get("X-Serial")
    fetches = bed.fetches("reload")
    late = bed.get("p1", "reload", {**first, **reload})[-1]
    assert (late.status, late.get("X-Serial")) == (304, first_304.get("X-Serial"))
    assert late.get("X-SPE-Validated") == first_304.get("X-SPE-Validated") != second_304.get("X-SPE-Validated")
    whole = bed.get("p2", "reload", first)[-1]  # the copy as the first reload left it
    assert (whole.status, whole.get("X-Serial")) == (200, first_304.get("X-Serial"))
    assert bed.get("p1", "reload", {**second, **reload})[-1].get("X-Serial") == second_304.get("X-Serial")
    assert bed.fetches("reload") == fetches  # none of them went to the origin


def test_a_clients_conditional_miss_gives_its_proxies_the_origins_304(bed):
    """A browser revalidates its own copy where the Collector holds none (another cookie in the key, a copy it
    evicted): the Collector forwards the client's validators and the origin answers 304. The proxies' requests
    caused by that client request that forward the same validators get that 304 (its X-Serial, its Date), not
    one of their own from the origin a moment later: a real origin's next 304 differs (DokuWiki's in Expires)
    and even the dummy differed (patch 0025). Any other request is the origin's to answer."""
    url = bed.url("reload") + "?conditional-miss"
    client, validators = tag(), {"Cache-Control": "max-age=0", "If-None-Match": '"r1"'}
    fetches = bed.fetches("reload")
    first = exchange(bed.ports["direct"], url, {**client, **validators})[0][-1]
    assert first.status == 304 and bed.fetches("reload") == fetches + 1
    time.sleep(1.1)  # the origin's next 304 carries another Date
    for port in ("p1", "p2"):
        late = exchange(bed.ports[port], url, {**client, **validators})[0][-1]
        assert (late.status, late.get("X-Serial"), late.get("Date"), late.get("X-SPE-Validated")) == \
            (304, first.get("X-Serial"), first.get("Date"), first.get("X-SPE-Validated"))
    assert bed.fetches("reload") == fetches + 1
    stranger = exchange(bed.ports["p1"], url, {**tag(), **validators})[0][-1]  # another client request's
    assert stranger.status == 304 and stranger.get("X-Serial") != first.get("X-Serial")
    whole = exchange(bed.ports["p2"], url, client)[0][-1]  # without the validators: never the 304
    assert whole.status == 200 and bed.fetches("reload") == fetches + 3
