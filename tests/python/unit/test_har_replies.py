"""The HAR origin's reply logic, pure (no socket): which recorded response answers a request (har_index.py), how it
goes on the wire now (har_reply.py: fields, moved dates, filler, re-encoding, 304) and what har_origin.HarOrigin
answers and counts."""

from __future__ import annotations

import gzip
import json

import har_site as site
import pytest
from har_site import CDN, CSS, CSS_ETAG, JS, PAGE, SHOP, entries, write_site

from spe_tools.workload.har import reply as har_reply
from spe_tools.workload.har.archive import HarEntry, HarRequest, HarResponse, lab_url
from spe_tools.workload.har.index import HarIndex
from spe_tools.workload.har_origin import HarOrigin, load_index
from spe_tools.workload.http11 import Message, format_date, parse_http_date

DAY = 86400
NOW = site.STARTED + 30 * DAY + 0.4  # a month after the recording: every date moves by 30 days
LAB = "localhost:8000"


def request(method: str, url: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Message:
    """A request for a recorded URL as a lab client sends it (its /_har/ target)."""
    return Message(method=method, target=lab_url(url, LAB).split(LAB, 1)[1],
                   headers={k.lower(): v for k, v in (headers or {}).items()}, body=body)


@pytest.fixture
def origin(tmp_path) -> HarOrigin:
    return HarOrigin(load_index([write_site(tmp_path / "site.har")], NOW))


def moved(date: str, days: int = 30) -> str:
    return format_date(parse_http_date(date) + days * DAY)


def test_recorded_fields_go_out_in_order_without_framing_hop_by_hop_or_pseudo_fields():
    page, *_ = entries()
    assert har_reply.sent_fields(page.response.headers, 30 * DAY) == [
        ("Date", "Mon, 01 Jul 2024 12:00:00 GMT"), ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-cache"), ("Expires", "0"),  # Connection, the X-Hop it names, Keep-Alive: gone
        ("Set-Cookie", "session=s3cr3t; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark; Path=/")]
    js = entries()[3]
    assert [n for n, _ in har_reply.sent_fields(js.response.headers, 0)] == [
        "date", "content-type", "content-encoding", "cache-control", "etag", "vary"]  # no :status, content-length


def test_a_value_on_several_lines_is_several_fields_and_text_outside_latin1_goes_out_as_utf8():
    fields = har_reply.sent_fields([("Set-Cookie", "a=1\nb=2"), ("X-Name", "Łódź"), ("Bad Name", "x")], 0)
    assert fields == [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Name", "Łódź".encode().decode("latin-1"))]


@pytest.mark.parametrize("recorded, expected", [
    ("Sat, 01 Jun 2024 12:00:00 GMT", "Sun, 02 Jun 2024 12:00:00 GMT"),
    ("Saturday, 01-Jun-24 12:00:00 GMT", "Sun, 02 Jun 2024 12:00:00 GMT"),  # RFC 850, written as IMF-fixdate
    ("Sat Jun  1 12:00:00 2024", "Sun, 02 Jun 2024 12:00:00 GMT"),  # asctime
    ("0", "0"), ("-1", "-1"),  # invalid: "already expired", as recorded
    ("Sat, 01 Jun 2024 12:00:00 +0000", "Sat, 01 Jun 2024 12:00:00 +0000"),  # a mail date, no HTTP-date
    ("Fri, 31 Dec 9999 23:59:59 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"),  # an HTTP-date has four year digits
])
def test_only_valid_http_dates_move(recorded, expected):
    assert har_reply.shift_date(recorded, DAY) == expected


def test_each_recording_moves_by_now_less_its_first_start():
    assert har_reply.date_offset([site.STARTED + 5, site.STARTED, site.STARTED + 1], site.STARTED + 100.6) == 101
    assert har_reply.date_offset([], NOW) == 0


def test_a_body_the_har_left_out_is_filler_of_its_recorded_size_and_depends_only_on_the_url():
    banner = entries()[4]
    prepared = har_reply.prepare(banner, 0)
    assert prepared.filler and len(prepared.body) == site.FILLER_SIZE
    assert prepared.body == har_reply.filler(banner.request.url, site.FILLER_SIZE) == har_reply.prepare(banner, 5).body
    assert har_reply.filler(f"{CDN}/other.jpg", site.FILLER_SIZE) != prepared.body
    no_size = HarEntry(0, HarRequest("GET", f"{CDN}/x"), HarResponse(200, headers=[("Content-Length", "77")]))
    assert len(har_reply.prepare(no_size, 0).body) == 77  # no content.size: the recorded Content-Length


def test_a_body_recorded_decoded_under_content_encoding_gzip_is_encoded_again():
    prepared = har_reply.prepare(entries()[3], 0)
    assert prepared.coding == "reencoded" and gzip.decompress(prepared.body) == JS
    assert prepared.reason == "OK"  # an HTTP/2 recording has no reason phrase
    kept = gzip.compress(b"already encoded")  # a tool that kept the bytes as they came
    assert har_reply.encoded([("Content-Encoding", "gzip")], kept) == ([("Content-Encoding", "gzip")], kept, "")


def test_a_coding_the_origin_cannot_apply_loses_its_field():
    fields = [("Content-Type", "text/plain"), ("Content-Encoding", "zstd")]
    assert har_reply.encoded(fields, b"text") == ([("Content-Type", "text/plain")], b"text", "dropped")
    br = har_reply.encoded([("Content-Encoding", "br")], b"text")
    assert br[2] == ("reencoded" if "br" in har_reply.CODECS else "dropped")  # br only with a module for it


def test_repeated_requests_take_the_recorded_responses_in_order_then_the_last_again(origin):
    stock = f"{SHOP}/api/stock?item=7"
    bodies = [origin.handle(request("GET", stock)).body for _ in range(3)]
    assert bodies == [b'{"item": 7, "left": 3}', b'{"item": 7, "left": 2}', b'{"item": 7, "left": 2}']
    assert origin.stats()["by_url"][stock] == 3


def test_the_requests_of_one_client_request_take_one_recorded_response(origin):
    """Behind the lab's Collector a client request reaches the origin, and so may each proxy's copy of it that
    the Collector does not answer itself: all carry its tag (X-SPE-Request), and all get the response the first
    took, as the recorded origin answered that request once. Before, each copy took the next recorded one (a
    304 with another Expires: every proxy, the dummy too, differed from the client on a recorded site)."""
    stock = f"{SHOP}/api/stock?item=7"
    client = origin.handle(request("GET", stock, {"X-SPE-Request": "t-1"}))
    copies = [origin.handle(request("GET", stock, {"X-SPE-Request": "t-1"})).body for _ in range(3)]
    assert copies == [client.body] * 3 == [b'{"item": 7, "left": 3}'] * 3
    assert origin.handle(request("GET", stock, {"X-SPE-Request": "t-2"})).body == b'{"item": 7, "left": 2}'
    assert origin.handle(request("GET", stock)).body == b'{"item": 7, "left": 2}'  # untagged: the sequence


def test_an_unconditional_copy_of_a_request_answered_304_gets_the_complete_response_as_the_304_left_it(origin):
    """A proxy that holds no copy forwards the client's revalidation without its validators (nginx does): the
    origin answers it with the complete response the recorded 304 confirmed, the 304's fields in its own."""
    css = f"{SHOP}/static/site.css"
    origin.handle(request("GET", css))
    origin.handle(request("GET", css))
    client = origin.handle(request("GET", css, {"If-None-Match": CSS_ETAG, "X-SPE-Request": "t-9"}))
    copy = origin.handle(request("GET", css, {"X-SPE-Request": "t-9"}))
    assert client.status == 304 and copy.status == 200 and copy.body == CSS
    assert dict(copy.headers)["Date"] == dict(client.headers)["Date"] == "Mon, 01 Jul 2024 12:00:09 GMT"
    assert [n for n, _ in copy.headers][:4] == ["Date", "Content-Type", "Cache-Control", "ETag"]


def test_a_recorded_304_answers_only_a_conditional_request(origin):
    css = f"{SHOP}/static/site.css"
    first, again = origin.handle(request("GET", css)), origin.handle(request("GET", css))
    assert first.status == again.status == 200 and first.body == again.body == CSS
    revalidated = origin.handle(request("GET", css, {"If-None-Match": CSS_ETAG}))
    assert revalidated.status == 304 and revalidated.reason == "Not Modified" and revalidated.body == b""
    assert revalidated.headers == [("Date", "Mon, 01 Jul 2024 12:00:09 GMT"), ("Cache-Control", "public, max-age=3600"),
                                   ("ETag", CSS_ETAG)]  # as recorded, its Date moved
    assert origin.stats()["made_304"] == 0


def test_a_matching_validator_gets_the_304_the_recorded_origin_would_send(origin):
    js, logo = f"{CDN}/js/app.js", f"{CDN}/img/logo.png"
    by_tag = origin.handle(request("GET", js, {"If-None-Match": '"other", "js-1"'}))  # weak comparison
    assert by_tag.status == 304 and by_tag.body == b""
    assert by_tag.headers == [("date", "Mon, 01 Jul 2024 12:00:01 GMT"), ("cache-control", "public, max-age=86400"),
                              ("etag", 'W/"js-1"'), ("vary", "Accept-Encoding")]
    since = origin.handle(request("GET", logo, {"If-Modified-Since": moved(site.LOGO_MODIFIED)}))
    assert since.status == 304 and ("last-modified", moved(site.LOGO_MODIFIED)) in since.headers
    older = origin.handle(request("GET", logo, {"If-Modified-Since": moved(site.LOGO_MODIFIED, 29)}))
    assert older.status == 200 and older.body == entries()[2].response.body
    # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2)
    both = origin.handle(request("GET", js, {"If-None-Match": '"nope"', "If-Modified-Since": "Fri, 01 Jan 2100 "
                                                                                             "00:00:00 GMT"}))
    assert both.status == 200 and gzip.decompress(both.body) == JS
    assert origin.stats()["made_304"] == 2


def test_head_has_the_get_fields_and_no_body_and_leaves_the_sequence_alone(origin):
    stock = f"{SHOP}/api/stock?item=7"
    head = origin.handle(request("HEAD", stock))
    assert head.head_only and head.status == 200 and head.body == b'{"item": 7, "left": 3}'  # for Content-Length
    assert origin.handle(request("GET", stock)).body == b'{"item": 7, "left": 3}'


def test_a_request_with_a_body_matches_the_recorded_body(origin):
    cart = f"{SHOP}/api/cart"
    created = origin.handle(request("POST", cart, body=b"item=7"))
    assert (created.status, created.reason, created.body) == (201, "Created", b'{"cart": [7]}')
    other = origin.handle(request("POST", cart, body=b"item=8"))
    assert other.status == 404 and origin.stats()["not_in_har"] == 1


def test_a_request_the_har_does_not_hold_is_404_naming_it(origin):
    reply = origin.handle(request("GET", f"{SHOP}/missing?x=1"))
    assert reply.status == 404 and reply.body == f"404 Not Found: not in the HAR: GET {SHOP}/missing?x=1\n".encode()
    assert ("Cache-Control", "no-store") in reply.headers
    plain = origin.handle(Message(method="GET", target="/static/site.css"))  # two hosts recorded: no plain paths
    assert plain.status == 404
    assert origin.stats()["not_in_har"] == 2 and origin.stats()["served"] == 0


def test_a_plain_target_on_a_recording_of_one_host_is_its_path_and_query():
    shop = [e for e in entries() if e.request.url.startswith(SHOP)]
    origin = HarOrigin(HarIndex([(shop, 0)]))
    assert origin.handle(Message(method="GET", target="/static/site.css")).body == CSS
    assert origin.handle(Message(method="GET", target="http://localhost:8000/")).body == PAGE
    assert origin.handle(Message(method="GET", target="/api/stock?item=8")).status == 404


def test_the_origin_never_poses_as_another_site(origin):
    assert origin.handle(Message(method="GET", target=f"{SHOP}/")).status == 403
    assert origin.handle(Message(method="CONNECT", target="shop.example:443")).status == 403


def test_think_time_is_the_recorded_wait_scaled(tmp_path):
    index = load_index([write_site(tmp_path / "site.har")], NOW)
    for scale in (1.0, 2.5, 0.0):
        reply = HarOrigin(index, scale).handle(request("GET", f"{SHOP}/"))
        assert reply.delivery.think_ms == site.WAIT_MS["page"] * scale


def test_stats_count_what_was_served_and_how(origin):
    for url in (f"{CDN}/js/app.js", f"{CDN}/img/banner.jpg", f"{CDN}/img/banner.jpg"):
        origin.handle(request("GET", url))
    origin.handle(request("HEAD", f"{CDN}/img/banner.jpg"))  # no body went out: not counted as one
    origin.handle(request("GET", "https://ads.example/track.gif"))  # recorded without a response
    reply = origin.handle(Message(method="GET", target="/_stats"))
    stats = json.loads(reply.body)
    assert ("Cache-Control", "no-store") in reply.headers
    assert stats["served"] == 4 and stats["not_in_har"] == 1 and stats["filler_bodies"] == 2
    assert stats["reencoded"] == 1 and stats["made_304"] == 0 and stats["left_out"] == 1
    assert stats["responses"] == len(entries()) - 1
    assert stats["by_url"] == {f"{CDN}/js/app.js": 1, f"{CDN}/img/banner.jpg": 3}
    assert stats["by_path"]["/_har/https/cdn.shop.example/img/banner.jpg"] == 3
