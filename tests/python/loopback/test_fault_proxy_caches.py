"""The fault proxy's cache modes: a correct RFC 9111 shared cache (the control) and caches that break
exactly one rule each, the cache-rule judge's test subjects. Each proxy's parent is cache_origin.py,
whose X-SPE-Fetch stamp tells a reused copy (an earlier fetch's stamp) from a new fetch."""

from __future__ import annotations

import itertools
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ENV, ROOT
from httpclient import Connection, Reply

from spe_tools.process import ProcessGroup, free_port

CACHE_MODES = ["cache_correct", "cache_everything", "serve_stale", "ignore_vary", "no_invalidate", "no_age",
               "ignore_request_no_cache"]
UNIQUE = itertools.count(1)


class Caches:
    """One cache_origin and fault proxies on it, started on first use and stopped with the module."""

    def __init__(self, group: ProcessGroup):
        self.group, self.ports = group, {}
        self.origin_port = free_port()
        group.start("cache-origin", [sys.executable, str(ROOT / "tests/fixtures/cache_origin.py"),
                                     str(self.origin_port)], port=self.origin_port, env=ENV)

    def port(self, mode: str, *extra: str) -> int:
        key = (mode, *extra)
        if key not in self.ports:
            port = free_port()
            name = re.sub(r"[^a-z_-]", "", "-".join(key))
            self.group.start(name, [sys.executable, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                                    "--parent", f"127.0.0.1:{self.origin_port}", "--mode", mode, *extra],
                             port=port, env=ENV)
            self.ports[key] = port
        return self.ports[key]

    def url(self, query: str = "") -> str:
        """A URL no other test has used: every test starts with an empty cache for it."""
        return f"http://127.0.0.1:{self.origin_port}/obj/{next(UNIQUE)}" + (f"?{query}" if query else "")


@pytest.fixture(scope="module")
def caches():
    workdir = Path(tempfile.mkdtemp(prefix="spe-caches-"))
    with ProcessGroup(workdir) as group:
        yield Caches(group)
    shutil.rmtree(workdir, ignore_errors=True)


def get(port: int, url: str, headers: dict[str, str] | None = None, method: str = "GET") -> Reply:
    with Connection(port) as c:
        return c.get(url, method=method, headers=headers)


def stamp(reply: Reply) -> str:
    return reply.headers["x-spe-fetch"]


# ---------------------------------------------------------------- scenarios: two GETs, was the first reused?
# Each returns (the first reply, the reply to the later GET); the later one is reused when it has the first's stamp.

def twice(query: str, first: dict | None = None, second: dict | None = None):
    def run(port: int, caches: Caches) -> tuple[Reply, Reply]:
        url = caches.url(query)
        return get(port, url, first), get(port, url, second)
    return run


def unsafe_between(method: str, query: str = ""):
    def run(port: int, caches: Caches) -> tuple[Reply, Reply]:
        url = caches.url("cc=max-age=60")
        reply = get(port, url)
        assert get(port, url + ("&" + query if query else ""), method=method).status in (200, 500)
        return reply, get(port, url)
    return run


def unsafe_elsewhere(port: int, caches: Caches) -> tuple[Reply, Reply]:
    url = caches.url("cc=max-age=60")
    reply = get(port, url)
    get(port, caches.url(), method="POST")
    return reply, get(port, url)


EN, DE = {"Accept-Language": "en"}, {"Accept-Language": "de"}
AUTH = {"Authorization": "Basic dXNlcjpwYXNz"}
SCENARIOS = {  # name: (scenario, reused by the correct cache, the modes that do the opposite)
    "fresh": (twice("cc=max-age=60"), True, []),
    "no-store": (twice("cc=no-store"), False, ["cache_everything"]),
    "private": (twice("cc=private,+max-age=60"), False, ["cache_everything"]),
    "no-cache reply": (twice("cc=no-cache,+max-age=60"), False, ["cache_everything"]),
    "authorization": (twice("cc=max-age=60", AUTH, AUTH), False, ["cache_everything"]),
    "authorization public": (twice("cc=public,+max-age=60", AUTH, AUTH), True, []),
    "authorization s-maxage": (twice("cc=s-maxage=60", AUTH, AUTH), True, []),
    "authorization must-revalidate": (twice("cc=max-age=60,+must-revalidate", AUTH, AUTH), True, []),
    "no freshness": (twice(""), False, ["cache_everything"]),
    "heuristic": (twice("lm=1000"), True, []),
    "heuristic 404": (twice("lm=1000&status=404"), True, []),
    "not heuristic 500": (twice("lm=1000&status=500"), False, []),
    "expires": (twice("expires=60"), True, []),
    "expires invalid": (twice("expires=bad"), False, ["serve_stale"]),
    "expires past": (twice("expires=-60"), False, ["serve_stale"]),
    "max-age over expires": (twice("cc=max-age=60&expires=-60"), True, []),
    "s-maxage over max-age": (twice("cc=max-age=0,+s-maxage=60"), True, []),
    "s-maxage 0": (twice("cc=max-age=60,+s-maxage=0"), False, ["serve_stale"]),
    "received age past max-age": (twice("cc=max-age=60&age=100"), False, ["serve_stale"]),
    "received age within max-age": (twice("cc=max-age=60&age=30"), True, []),
    "date past max-age": (twice("cc=max-age=60&date=-100"), False, ["serve_stale"]),
    "date within max-age": (twice("cc=max-age=60&date=-30"), True, []),
    "vary same": (twice("cc=max-age=60&vary=Accept-Language", EN, EN), True, []),
    "vary other": (twice("cc=max-age=60&vary=Accept-Language", EN, DE), False, ["ignore_vary"]),
    "vary absent header": (twice("cc=max-age=60&vary=Accept-Language", EN, {}), False, ["ignore_vary"]),
    "vary star": (twice("cc=max-age=60&vary=*"), False, ["ignore_vary"]),
    "post": (unsafe_between("POST"), False, ["no_invalidate"]),
    "put": (unsafe_between("PUT"), False, ["no_invalidate"]),
    "delete": (unsafe_between("DELETE"), False, ["no_invalidate"]),
    "post failed": (unsafe_between("POST", "status=500"), True, []),
    "post elsewhere": (unsafe_elsewhere, True, []),
    "request no-cache": (twice("cc=max-age=60", None, {"Cache-Control": "no-cache"}), False,
                         ["ignore_request_no_cache"]),
    "request pragma": (twice("cc=max-age=60", None, {"Pragma": "no-cache"}), False, ["ignore_request_no_cache"]),
    "request pragma with cache-control": (twice("cc=max-age=60", None, {"Pragma": "no-cache",
                                                                         "Cache-Control": "max-age=60"}), True, []),
    "request max-age=0": (twice("cc=max-age=60", None, {"Cache-Control": "max-age=0"}), False,
                          ["ignore_request_no_cache"]),
    "request max-age older": (twice("cc=max-age=60&age=30", None, {"Cache-Control": "max-age=10"}), False, []),
    "request max-age younger": (twice("cc=max-age=60&age=30", None, {"Cache-Control": "max-age=50"}), True, []),
    "request min-fresh": (twice("cc=max-age=60&age=30", None, {"Cache-Control": "min-fresh=40"}), False,
                          ["serve_stale"]),
    "request no-store": (twice("cc=max-age=60", {"Cache-Control": "no-store"}), False, ["cache_everything"]),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("mode", CACHE_MODES)
def test_each_mode_breaks_only_its_own_rule(caches, mode, scenario):
    run, correct, opposite = SCENARIOS[scenario]
    first, later = run(caches.port(mode), caches)
    reused = stamp(later) == stamp(first)
    assert reused == (correct != (mode in opposite))
    if reused:
        assert later.status == first.status and later.body == first.body
        assert ("age" in later.headers) == (mode != "no_age")
    else:
        assert "age" not in later.headers or later.headers["age"] == first.headers.get("age")  # relayed as is


@pytest.mark.parametrize("mode", ["cache_correct", "cache_everything", "ignore_vary"])
def test_a_reused_reply_is_the_stored_bytes_with_age(caches, mode):
    port, url = caches.port(mode), caches.url("cc=max-age=60")
    first, later = get(port, url), get(port, url)
    age = later.headers["age"]
    assert later.raw_header.replace(f"\r\nAge: {age}\r\n".encode(), b"\r\n", 1) == first.raw_header
    assert later.body == first.body


@pytest.mark.parametrize("query", ["age=300", "date=-300"])
def test_age_counts_the_received_age_or_date_and_no_age_sends_none(caches, query):
    url = caches.url(f"cc=max-age=600&{query}")
    for mode in ("cache_correct", "no_age"):
        port = caches.port(mode)
        first, later = get(port, url), get(port, url)
        assert stamp(later) == stamp(first)
        if mode == "no_age":
            assert "age" not in later.headers  # the received Age is dropped too
        else:
            assert 300 <= int(later.headers["age"]) < 600


def test_ignore_vary_serves_the_en_variant_to_a_de_request(caches):
    url = caches.url("cc=max-age=60&vary=Accept-Language")
    for mode, expected in (("cache_correct", b"lang=de"), ("ignore_vary", b"lang=en")):
        port = caches.port(mode)
        get(port, url, EN)
        assert expected in get(port, url, DE).body


def test_serve_stale_reuses_a_copy_after_its_max_age(caches):
    url = caches.url("cc=max-age=1")
    ports = {mode: caches.port(mode) for mode in ("cache_correct", "serve_stale")}
    firsts = {mode: get(port, url) for mode, port in ports.items()}
    time.sleep(2.2)  # max-age=1 has passed, whatever the Date's whole-second rounding
    laters = {mode: get(port, url) for mode, port in ports.items()}
    assert stamp(laters["cache_correct"]) != stamp(firsts["cache_correct"])
    assert stamp(laters["serve_stale"]) == stamp(firsts["serve_stale"])
    assert int(laters["serve_stale"].headers["age"]) >= 2


def test_a_head_request_is_forwarded_and_does_not_store(caches):
    port, url = caches.port("cache_correct"), caches.url("cc=max-age=60")
    head = get(port, url, method="HEAD")
    assert head.body == b"" and "age" not in head.headers
    first, later = get(port, url), get(port, url)
    assert stamp(head) != stamp(first) == stamp(later)


@pytest.mark.parametrize("flag, claims", [((), [None, None]), (("--claim",), ["MISS", "HIT"]),
                                          (("--claim-lie",), ["MISS", "MISS"])])
def test_x_cache_claims_only_with_the_flag(caches, flag, claims):
    port, url = caches.port("cache_correct", *flag), caches.url("cc=max-age=60")
    first, later = get(port, url), get(port, url)
    assert stamp(first) == stamp(later)
    assert [first.headers.get("x-cache"), later.headers.get("x-cache")] == claims
