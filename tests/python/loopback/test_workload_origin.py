"""The synthetic origin as a real process on 127.0.0.1: deterministic replies, 304, HEAD, chunked,
POST, uncacheable serials, the think/size/chunks/gap/cc query overrides, stats and a clean stop."""

from __future__ import annotations

import hashlib
import json
import sys
import time

import pytest
from conftest import ROOT
from httpclient import Connection

from spe_tools.process import ProcessGroup, free_port
from spe_tools.workload.content import model as cm

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
VOLATILE = ("date", "x-origin-count", "x-origin-serial")


def start_origin(group: ProcessGroup, *args: str, name: str = "origin"):
    port = free_port()
    child = group.start(name, [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               *args], port=port, env=ENV)
    return child


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    with ProcessGroup(tmp_path_factory.mktemp("origin")) as group:
        child = start_origin(group, "--think-mean-ms", "0", "--think-sd-ms", "0")
        yield child


def url(origin, path: str) -> str:
    return f"http://127.0.0.1:{origin.port}{path}"


def fixed(headers: dict) -> dict:
    return {k: v for k, v in headers.items() if k not in VOLATILE}


def find(kind: str, predicate) -> str:
    """An object id of `kind` whose model properties satisfy `predicate`."""
    return next(f"f{i}" for i in range(10000) if predicate(cm.object_spec(cm.Model(), kind, f"f{i}")))


def test_prints_ready_line_and_replies_deterministically(origin):
    assert origin.log.read_text().splitlines()[0] == f"origin listening on 127.0.0.1:{origin.port}"
    oid = find("obj", lambda s: s.cacheable and not s.chunked)
    with Connection(origin.port) as c:
        first, second = c.get(url(origin, f"/obj/{oid}")), c.get(url(origin, f"/obj/{oid}"))
    assert first.status == second.status == 200
    assert first.body == second.body == cm.body(cm.Model(), cm.object_spec(cm.Model(), "obj", oid))
    assert fixed(first.headers) == fixed(second.headers)
    assert first.headers["x-origin-count"] == "1" and second.headers["x-origin-count"] == "2"
    assert first.headers["cache-control"] == "public, max-age=86400"
    assert "etag" in first.headers and "last-modified" in first.headers


def test_conditional_requests_get_304(origin):
    oid = find("obj", lambda s: s.cacheable)
    with Connection(origin.port) as c:
        full = c.get(url(origin, f"/obj/{oid}"))
        by_tag = c.get(url(origin, f"/obj/{oid}"), headers={"If-None-Match": full.headers["etag"]})
        by_date = c.get(url(origin, f"/obj/{oid}"), headers={"If-Modified-Since": full.headers["last-modified"]})
        old = c.get(url(origin, f"/obj/{oid}"), headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
        other_tag = c.get(url(origin, f"/obj/{oid}"), headers={"If-None-Match": '"nope"'})
    assert by_tag.status == by_date.status == 304 and by_tag.body == b""
    assert by_tag.headers["etag"] == full.headers["etag"]
    assert old.status == other_tag.status == 200 and old.body == full.body


def test_head_has_the_get_headers_and_no_body(origin):
    oid = find("obj", lambda s: s.cacheable and not s.chunked)
    with Connection(origin.port) as c:
        head = c.get(url(origin, f"/obj/{oid}"), method="HEAD")
        get = c.get(url(origin, f"/obj/{oid}"))
    assert head.status == 200 and head.body == b""
    assert fixed(head.headers) == fixed(get.headers)
    assert int(head.headers["content-length"]) == len(get.body)


def test_chunked_objects_and_te_override(origin):
    oid = find("obj", lambda s: s.chunked and s.cacheable and s.size > 20000)
    with Connection(origin.port) as c:
        chunked = c.get(url(origin, f"/obj/{oid}"))
        plain = c.get(url(origin, f"/obj/{oid}?te=length"))
        forced = c.get(url(origin, "/obj/any?te=chunked&size=3000&chunks=3"))
    assert chunked.headers["transfer-encoding"] == "chunked" and "content-length" not in chunked.headers
    assert chunked.body == plain.body and plain.headers["content-length"] == str(len(plain.body))
    assert forced.headers["transfer-encoding"] == "chunked" and len(forced.body) == 3000


def test_uncacheable_objects_change_on_every_fetch(origin):
    oid = find("obj", lambda s: s.cache == "private")
    with Connection(origin.port) as c:
        replies = [c.get(url(origin, f"/obj/{oid}")) for _ in range(3)]
    serials = [int(r.headers["x-origin-serial"]) for r in replies]
    assert serials[0] < serials[1] < serials[2]
    assert len({r.body for r in replies}) == 3
    assert all(f"serial {s}".encode() in r.body for s, r in zip(serials, replies, strict=True))
    assert all(r.headers["cache-control"] == "private, no-cache" for r in replies)
    assert all("etag" not in r.headers for r in replies)


def test_post_replies_with_the_digest_of_the_body(origin):
    with Connection(origin.port) as c:
        reply = c.get(url(origin, "/post/form"), method="POST", body=b"x" * 1000)
        wrong = c.get(url(origin, "/post/form"))
    assert reply.status == 200 and hashlib.md5(b"x" * 1000).hexdigest().encode() in reply.body
    assert "x-origin-serial" in reply.headers
    assert wrong.status == 405 and wrong.headers["allow"] == "POST"


def test_think_and_paced_body_overrides(origin):
    with Connection(origin.port, timeout=30) as c:
        c.send(f"GET {url(origin, '/obj/slow?think=300&size=4000&chunks=4&gap=150')} HTTP/1.1\r\n"
               f"Host: 127.0.0.1\r\n\r\n".encode())
        start = time.monotonic()
        first = c.sock.recv(1)
        first_byte = time.monotonic() - start
        c.sock.setblocking(True)
        rest = b""
        while not rest.endswith(b"\r\n\r\n") or len(rest) < 4000:
            rest += c.sock.recv(65536)
            if len(rest.partition(b"\r\n\r\n")[2]) >= 4000:
                break
        total = time.monotonic() - start
    assert first == b"H"
    assert first_byte >= 0.29
    assert total >= 0.29 + 3 * 0.15 - 0.02  # three gaps between four writes
    assert len(rest.partition(b"\r\n\r\n")[2]) == 4000


def test_interim_override_sends_1xx_first_in_order_and_none_to_http10(origin):
    with Connection(origin.port) as c:
        c.send(f"GET {url(origin, '/obj/i?interim=103,102&interim_ms=50')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        start = time.monotonic()
        hints, processing, final = c.read_reply(), c.read_reply(), c.read_reply()
        elapsed = time.monotonic() - start
        conformance = c.get(url(origin, "/c/max-age=3600/i?interim=103"))
        c.send(b"GET " + url(origin, "/c/max-age=3600/i?interim=103").encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        conformance_final = c.read_reply()
    assert (hints.status, processing.status, final.status) == (103, 102, 200)
    assert hints.headers["link"] == "</style.css>; rel=preload" and processing.body == b""
    assert elapsed >= 0.09  # a pause before each
    assert conformance.status == 103 and conformance_final.status == 200
    with Connection(origin.port) as c:
        c.send(f"GET {url(origin, '/obj/i?interim=103')} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        assert c.read_reply().status == 200  # RFC 9110 15.2: no 1xx to an HTTP/1.0 client
    with Connection(origin.port) as c:
        c.send(f"GET {url(origin, '/obj/i?interim=101,100')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert c.read_reply().status == 100  # 101 is an upgrade, never sent as an interim response
        assert c.read_reply().status == 200


def test_cc_override_makes_any_object_cacheable_or_not(origin):
    with Connection(origin.port) as c:
        public = c.get(url(origin, "/obj/z?cc=public"))
        no_store = c.get(url(origin, "/obj/z?cc=no-store"))
        literal = c.get(url(origin, "/obj/z?cc=max-age=60"))
    assert public.headers["cache-control"] == "public, max-age=86400" and "x-origin-serial" not in public.headers
    assert no_store.headers["cache-control"] == "no-store" and "x-origin-serial" in no_store.headers
    assert literal.headers["cache-control"] == "max-age=60" and "etag" in literal.headers


def test_vary_override_adds_the_field_and_changes_nothing_else(origin):
    with Connection(origin.port) as c:
        plain = c.get(url(origin, "/obj/v?cc=public"))
        varied = c.get(url(origin, "/obj/v?cc=public&vary=Cookie"), headers={"Cookie": "a=1"})
    assert "vary" not in plain.headers and varied.headers["vary"] == "Cookie"
    assert varied.body == plain.body and varied.headers["etag"] == plain.headers["etag"]


def test_pages_sequences_and_refusals(origin):
    with Connection(origin.port) as c:
        page = c.get(url(origin, "/page/5.html"))
        seq = c.get(url(origin, "/seq/a/3.jpg"))
        past = c.get(url(origin, f"/seq/a/{cm.Model().seq_length}.jpg"))
        foreign = c.get("http://clients2.google.com/time/1/current")
    assert page.headers["content-type"] == "text/html"
    assert all(src.encode() in page.body for src in cm.page_images(cm.Model(), "5"))
    assert seq.headers["link"] == '</seq/a/4.jpg>; rel="next"'
    assert past.status == 404
    assert foreign.status == 403


def test_vary_and_cookie_variants(tmp_path):
    with ProcessGroup(tmp_path) as group:
        model = tmp_path / "model.json"
        model.write_text(json.dumps({"cache_shares": {"vary": 0.5, "cookie": 0.5}, "think_mean_ms": 0,
                                     "think_sd_ms": 0}))
        child = start_origin(group, "--model", str(model))
        vary_model = cm.Model.load(model)
        vary = next(f"v{i}" for i in range(1000) if cm.object_spec(vary_model, "obj", f"v{i}").cache == "vary")
        cookie = next(f"v{i}" for i in range(1000) if cm.object_spec(vary_model, "obj", f"v{i}").cache == "cookie")
        with Connection(child.port) as c:
            en = c.get(url(child, f"/obj/{vary}"), headers={"Accept-Language": "en"})
            de = c.get(url(child, f"/obj/{vary}"), headers={"Accept-Language": "de"})
            en2 = c.get(url(child, f"/obj/{vary}"), headers={"Accept-Language": "en"})
            cookied = c.get(url(child, f"/obj/{cookie}"))
        assert en.headers["vary"] == "Accept-Language"
        assert en.body == en2.body != de.body
        assert cookied.headers["set-cookie"].startswith("spe=")


def test_each_vary_variant_has_its_own_validator(tmp_path):
    """Variants with different bodies must not share a strong ETag: a cache that revalidates with the
    tags of the variants it holds learns from the 304's ETag which one to serve (RFC 9110 8.8.3, RFC 9111
    4.3.2), so a shared tag would get one variant's body served for another and SPE blame the cache."""
    with ProcessGroup(tmp_path) as group:
        model = tmp_path / "model.json"
        model.write_text(json.dumps({"cache_shares": {"vary": 1.0}, "think_mean_ms": 0, "think_sd_ms": 0}))
        child = start_origin(group, "--model", str(model))
        path = url(child, "/obj/v1")
        with Connection(child.port) as c:
            en, de = (c.get(path, headers={"Accept-Language": lang}) for lang in ("en", "de"))
            en2 = c.get(path, headers={"Accept-Language": "en"})
            de_with_en_tag = c.get(path, headers={"Accept-Language": "de", "If-None-Match": en.headers["etag"]})
            en_with_en_tag = c.get(path, headers={"Accept-Language": "en", "If-None-Match": en.headers["etag"]})
            both_tags = f'{en.headers["etag"]}, {de.headers["etag"]}'
            de_with_both = c.get(path, headers={"Accept-Language": "de", "If-None-Match": both_tags})
    assert en.body != de.body and en.headers["etag"] != de.headers["etag"]
    assert en2.headers["etag"] == en.headers["etag"]  # each variant's tag is fixed
    assert de_with_en_tag.status == 200 and de_with_en_tag.body == de.body
    assert de_with_en_tag.headers["etag"] == de.headers["etag"]
    assert en_with_en_tag.status == 304 and en_with_en_tag.headers["etag"] == en.headers["etag"]
    assert de_with_both.status == 304 and de_with_both.headers["etag"] == de.headers["etag"]


def test_stats_count_per_path_and_method_and_sigterm_exits_zero(tmp_path):
    with ProcessGroup(tmp_path) as group:
        child = start_origin(group, "--think-mean-ms", "0", "--think-sd-ms", "0")
        with Connection(child.port) as c:
            for _ in range(3):
                c.get(url(child, "/obj/s1"))
            c.get(url(child, "/obj/s1"), method="HEAD")
            c.get(url(child, "/post/p"), method="POST", body=b"a")
            stats = json.loads(c.get(url(child, "/_stats")).body)
        assert stats["by_path"] == {"/obj/s1": 4, "/post/p": 1}
        assert stats["by_method"] == {"GET": 3, "HEAD": 1, "POST": 1}
        assert stats["total"] == 5
        # Idle keep-alive connection open: the origin must still exit on SIGTERM by itself (exit 0; a
        # SIGKILL after the stop deadline would make it -9). How fast is not a wall-clock claim here.
        idle = Connection(child.port)
        assert child.stop(deadline_s=5) == 0
        idle.close()


def test_bad_request_gets_400(origin):
    with Connection(origin.port) as c:
        c.send(b"NONSENSE\r\n\r\n")
        assert c.read_reply().status == 400
