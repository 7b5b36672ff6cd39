"""The trace replayer's log parsing: Squid native and Apache lines, malformed lines, filters and equal
timestamps spread apart (replayed through a real Squid: loopback/test_workload_replay_through_squid.py)."""

from __future__ import annotations

import datetime

import pytest

from spe_tools.workload.client.logparse import (
    Entry,
    LogError,
    is_dynamic,
    parse_apache,
    parse_lines,
    parse_squid,
    spread_identical,
    target_url,
)

T0 = 1_790_000_000.0

SQUID_LINE = ("1790000000.250     50 10.1.2.3 TCP_MISS/200 1234 GET http://example.com/a.gif - HIER_DIRECT/1.2.3.4 "
              "image/gif")
APACHE_LINE = ('192.0.2.7 - - [02/May/2001:10:00:01 -0400] "GET /~davison/index.html HTTP/1.0" 200 5120 '
               '"http://www.cs.rutgers.edu/" "Mozilla/4.0"')


def test_parse_squid_native_uses_the_start_time():
    e = parse_squid(SQUID_LINE, 3)
    assert e == Entry(T0 + 0.2, "10.1.2.3", "GET", "http://example.com/a.gif", 3)
    with pytest.raises(LogError):
        parse_squid("1790000000.250 fifty 10.1.2.3 TCP_MISS/200 1 GET http://x/")


def test_parse_apache_combined_and_common():
    e = parse_apache(APACHE_LINE)
    assert e.client == "192.0.2.7" and e.method == "GET" and e.url == "/~davison/index.html"
    assert e.time == datetime.datetime(2001, 5, 2, 14, 0, 1, tzinfo=datetime.UTC).timestamp()
    common = parse_apache('h - - [02/May/2001:10:00:01 -0400] "HEAD /x HTTP/1.1" 304 -')
    assert common.method == "HEAD"
    for bad in ('h - - [02/May/2001:10:00:01 -0400] "garbage" 400 -', 'h - - [99/Foo/2001:1] "GET / HTTP/1.0" 200 1'):
        with pytest.raises(LogError):
            parse_apache(bad)


def test_malformed_lines_are_warnings_and_filters_count_skips():
    lines = [SQUID_LINE, "garbage line", "", "# comment",
             SQUID_LINE.replace("GET http://example.com/a.gif", "POST http://example.com/form"),
             SQUID_LINE.replace("GET http://example.com/a.gif", "GET http://example.com/cgi-bin/q"),
             SQUID_LINE.replace("GET http://example.com/a.gif", "CONNECT example.com:443"), "1 2 3"]
    parsed = parse_lines(lines, filter_dynamic=True)
    assert len(parsed.entries) == 1
    assert len(parsed.warnings) == 2 and parsed.warnings[0].startswith("line 2:")
    assert parsed.skipped == {"dynamic": 2, "method CONNECT": 1}
    assert len(parse_lines(lines).entries) == 3  # without the filter POST and cgi-bin stay
    assert is_dynamic("GET", "/a?b") and is_dynamic("GET", "/x.cgi") and not is_dynamic("HEAD", "/index.html")


def test_identical_timestamps_are_spread_10_ms_apart():
    entries = [Entry(t, "c", "GET", f"/{i}") for i, t in enumerate([5.0, 5.0, 5.0, 6.0, 6.0, 6.015])]
    times = [e.time for e in spread_identical(entries)]
    assert times == pytest.approx([5.0, 5.01, 5.02, 6.0, 6.01, 6.015])
    crowded = [Entry(1.0, "c", "GET", "/") for _ in range(3)] + [Entry(1.015, "c", "GET", "/x")]
    assert [e.time for e in spread_identical(crowded)] == pytest.approx([1.0, 1.01, 1.02, 1.02])


def test_target_url_rewrites_the_host():
    assert target_url("http://www.example.com/a/b?c=1", "127.0.0.1:9") == "http://127.0.0.1:9/a/b?c=1"
    assert target_url("/a", "127.0.0.1:9") == "http://127.0.0.1:9/a"
    with pytest.raises(LogError):
        target_url("/a", None)
