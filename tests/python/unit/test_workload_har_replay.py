"""The HAR replay's planning (spe_tools/workload/har/replay.py), pure: start times scaled, connections by recorded
id or six per host, headers as recorded less the hop-by-hop ones, URLs mapped to the lab's HAR origin, each file a
client named in X-SPE-Client; and replay.py's choice between a HAR and an access log (sent through a real proxy:
loopback/test_workload_har_replay_through_proxies.py)."""

from __future__ import annotations

import pytest

from spe_tools.workload.client.connections import Exchange
from spe_tools.workload.har.archive import HarEntry, HarRequest, HarResponse, replay_format
from spe_tools.workload.har.replay import (
    BROWSER_CONNECTIONS_PER_HOST,
    Lane,
    RefusedError,
    client_names,
    connection_ids,
    plan_har,
    request_headers,
    status_check,
    target_url,
)
from spe_tools.workload.http11 import request_bytes
from spe_tools.workload.replay import build_parser, is_har

T0 = 1_795_867_200.0


def entry(index: int, at: float, url: str, method: str = "GET", connection: str | None = None,
          headers: list[tuple[str, str]] | None = None, body: bytes | None = None, status: int = 200) -> HarEntry:
    return HarEntry(T0 + at, HarRequest(method, url, headers=headers or [], body=body), HarResponse(status),
                    connection=connection, index=index)


def test_start_times_are_the_recordings_scaled_by_speed_from_the_files_first_entry():
    entries = [entry(0, 0.0, "data:image/png;base64,AAAA"), entry(1, 1.0, "http://localhost:8080/a"),
               entry(2, 3.0, "http://localhost:8080/b")]
    planned, refused = plan_har(entries, "site", None, 2.0, False)
    # the first entry sets the clock even when it is not sent
    assert [offset for offset, _ in planned] == [0.5, 1.5]
    assert refused == {"not an http(s) URL": 1}


def test_a_request_the_browser_never_got_an_answer_to_is_not_replayed():
    # Chromium records a request it blocked (an ad blocker, CORS) or cancelled with status 0: no origin answered it.
    entries = [entry(0, 0.0, "http://localhost:8080/"), entry(1, 0.1, "http://localhost:8080/ad.gif", status=0)]
    planned, refused = plan_har(entries, "site", None, 1.0, False)
    assert [send.url for _, send in planned] == ["http://localhost:8080/"]
    assert refused == {"no response recorded (the browser blocked or cancelled it)": 1}


def test_each_recorded_connection_id_is_one_connection_and_the_rest_six_per_host():
    entries = [entry(0, 0, "http://localhost:1/", connection="11"),
               entry(1, 0.1, "http://localhost:1/a.css", connection="12"),
               entry(2, 0.2, "http://localhost:1/b.js", connection="11"), entry(3, 0.3, "http://localhost:1/c.png"),
               entry(4, 0.4, "http://127.0.0.1:2/d.png"), entry(5, 0.5, "http://localhost:1/e.png")]
    lanes = [send.lane for _, send in plan_har(entries, "site", None, 1.0, False)[0]]
    assert lanes[0] == lanes[2] == Lane("site", "connection 11", 1)
    assert lanes[1] == Lane("site", "connection 12", 1)
    assert lanes[3] == lanes[5] == Lane("site", "host localhost:1", BROWSER_CONNECTIONS_PER_HOST)
    assert lanes[4] == Lane("site", "host 127.0.0.1:2", 6)


def test_an_id_that_names_no_connection_falls_back_to_six_per_host():
    # Firefox writes the server's port where Chromium writes its socket id: shared by hosts, or the URL's port.
    recorded = [("https://a.example/", "443"), ("https://b.example/", "443"), ("http://c.example:8080/", "8080"),
                ("http://c.example/", "0"), ("http://d.example/", "7"), ("http://e.example/", "7"),
                ("http://f.example/", "9")]
    entries = [entry(i, 0, url, connection=connection) for i, (url, connection) in enumerate(recorded)]
    assert connection_ids(entries) == {6: "9"}


def test_recorded_headers_go_as_recorded_less_the_hop_by_hop_ones():
    recorded = [(":method", "GET"), (":authority", "www.example.com"), (":scheme", "https"), (":path", "/"),
                ("Host", "www.example.com"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
                ("Keep-Alive", "timeout=5"), ("Proxy-Connection", "keep-alive"), ("TE", "trailers"),
                ("Upgrade", "h2c"), ("Transfer-Encoding", "chunked"), ("Content-Length", "999"),
                ("Proxy-Authorization", "Basic eDp5"), ("accept", "text/html"), ("cookie", "a=1"),
                ("user-agent", "Mozilla/5.0"), ("cookie", "b=2"), ("X-SPE-Client", "recorded"),
                ("Referer", "http://www.example.com/\u00e9"), ("Bad Name", "x"), ("X-Split", "a\r\nInjected: 1")]
    assert request_headers(recorded, "site") == [
        ("accept", "text/html"), ("Cookie", "a=1; b=2"), ("user-agent", "Mozilla/5.0"),
        ("Referer", "http://www.example.com/\u00c3\u00a9"),  # UTF-8's bytes, as latin-1 text for the wire
        ("X-SPE-Client", "site")]


def test_the_request_has_the_urls_host_and_its_bodys_length():
    recorded = [("Host", "shop.example"), ("Content-Type", "application/x-www-form-urlencoded"),
                ("Content-Length", "1")]
    entries = [entry(0, 0, "https://shop.example/cart?add=1", "POST", headers=recorded, body=b"item=7&n=2"),
               entry(1, 0, "https://shop.example/checkout", "POST"), entry(2, 0, "https://shop.example/", "GET")]
    (_, post), (_, empty), (_, get) = plan_har(entries, "shop", "localhost:9000", 1.0, False)[0]
    assert post.url == "http://localhost:9000/_har/https/shop.example/cart?add=1"
    assert request_bytes(post.method, post.url, "localhost:9000", post.headers, post.body) == (
        b"POST http://localhost:9000/_har/https/shop.example/cart?add=1 HTTP/1.1\r\nHost: localhost:9000\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nX-SPE-Client: shop\r\nContent-Length: 10\r\n\r\n"
        b"item=7&n=2")
    assert empty.body == b"" and get.body is None  # a POST whose body was not kept still says its length


def test_urls_map_to_the_lab_origin_or_stay_on_the_loopback():
    assert target_url("https://cdn.example:8443/a b/\u00e9.png?q=1#top", "localhost:9000", False) == \
        "http://localhost:9000/_har/https/cdn.example:8443/a%20b/%C3%A9.png?q=1"
    assert target_url("http://127.0.0.1:8080/x?y", None, False) == "http://127.0.0.1:8080/x?y"
    assert target_url("http://www.example.com/", None, True) == "http://www.example.com/"
    for url, origin, reason in [("http://www.example.com/", None, "host outside the lab"),
                                ("blob:http://localhost/1", "localhost:9000", "not an http"),
                                ("wss://localhost/socket", None, "not an http")]:
        with pytest.raises(RefusedError, match=reason):
            target_url(url, origin, False)


def test_each_file_is_a_client_named_by_its_stem():
    assert client_names(["a/site.har", "b/site.har", "shop cart.HAR"]) == ["site", "site-2", "shop_cart"]
    planned = plan_har([entry(0, 0, "http://localhost/")], "site-2", None, 1.0, False)[0]
    assert planned[0][1].headers[-1] == ("X-SPE-Client", "site-2")


def test_replies_are_compared_with_the_recorded_status():
    def ex(recorded: int, status: int, error: str = "") -> Exchange:
        return Exchange(0, status=status, error=error, info={"recorded": recorded})

    results = [ex(200, 200), ex(304, 200), ex(304, 200), ex(0, 200), ex(200, 0, "timeout"), ex(404, 404)]
    assert status_check(results) == {"status_compared": 4, "status_matched": 2, "status_mismatches": {"304->200": 2}}


def test_har_files_or_one_access_log():
    assert replay_format(["a.har", "B.HAR"]) == "har" and replay_format(["access.log"]) == "log"
    for files, message in [(["a.har", "access.log"], "cannot be replayed together"),
                           (["a.log", "b.log"], "one access log at a time")]:
        with pytest.raises(ValueError, match=message):
            replay_format(files)


@pytest.mark.parametrize(("argv", "har"), [(["a.har", "b.har"], True), (["site.json", "--format", "har"], True),
                                           (["access.log"], False), (["a.har", "--format", "squid"], False)])
def test_replay_dispatches_on_the_suffix_or_the_format(argv, har):
    parser = build_parser()
    assert is_har(parser.parse_args([*argv, "--via", "127.0.0.1:1"]), parser) is har


@pytest.mark.parametrize("argv", [["a.har", "access.log"], ["a.log", "b.log"], ["a.har", "--conns-per-client", "2"],
                                  ["a.har", "--filter-dynamic"]])
def test_replay_refuses_what_does_not_fit_together(argv, capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        is_har(parser.parse_args([*argv, "--via", "127.0.0.1:1"]), parser)
    assert "error:" in capsys.readouterr().err

