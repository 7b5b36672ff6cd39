"""The link prefetcher's agent (spe_tools/squid_prefetch): what it reads from a page and from its Squid's
access log, and the URL forms it asks for, which must be the Multiplier's for the prefetch to be the same
object as the client's later request."""

from __future__ import annotations

from spe_tools.squid_prefetch.links import page_references
from spe_tools.squid_prefetch.logline import parse_line, presented_url, upstream_form

PAGE = """<!DOCTYPE html><html><head><link rel="stylesheet" href="/s.css"><link rel="next" href="p2.html">
<script src="https://cdn.example/x.js"></script></head><body>
<img src="/obj/a.jpg"><img src="/obj/a.jpg"><IMG SRC='b.jpg'/>
<a href="/page/1.html#top">one</a><a href="/page/1.html">again</a><a href="mailto:x@y">mail</a>
<a href="javascript:void(0)">js</a><a href="#self">self</a><a href="other/2.html">two</a></body></html>"""


def test_a_page_gives_its_embedded_objects_and_its_links_once_each_and_absolute():
    embedded, linked = page_references(PAGE, "http://h:80/dir/p.html")
    assert embedded == ["http://h:80/s.css", "https://cdn.example/x.js", "http://h:80/obj/a.jpg",
                        "http://h:80/dir/b.jpg"]
    assert linked == ["http://h:80/dir/p2.html", "http://h:80/page/1.html", "http://h:80/dir/other/2.html"]


def test_a_base_element_and_an_https_page_set_what_relative_links_mean():
    embedded, linked = page_references('<base href="/root/"><img src="i.png"><a href="n.html">n</a>',
                                       "https://h:8443/x/p.html")
    assert embedded == ["https://h:8443/root/i.png"] and linked == ["https://h:8443/root/n.html"]


def test_broken_html_still_gives_what_it_can():
    embedded, linked = page_references('<img src="/a.jpg"><a href="/b.html"<p>unclosed <img src=', "http://h/")
    assert embedded == ["http://h/a.jpg"]


def test_an_access_log_line_in_the_kinds_format():
    line = parse_line("1795518628.143      0 127.0.0.2 TCP_MEM_HIT/200 1653 GET http://localhost:4/page/1.html "
                      "text/html -")
    assert line is not None and line.client == "127.0.0.2" and line.status == 200 and line.is_html_page()
    https = parse_line("1.000 5 127.0.0.1 TCP_MISS/200 9 GET http://localhost:5/page/2.html text/html https")
    assert https.scheme == "https" and presented_url(https.url, https.scheme) == "https://localhost:5/page/2.html"
    image = parse_line("1.000 5 127.0.0.1 TCP_MISS/200 9 GET http://localhost:5/a.jpg image/jpeg -")
    assert not image.is_html_page()
    revalidated = parse_line("1.000 5 127.0.0.1 TCP_REFRESH_UNMODIFIED/304 9 GET http://h:5/p.html - -")
    assert revalidated.is_html_page()
    assert not parse_line("1.000 5 127.0.0.1 TCP_MISS/200 9 POST http://h:5/p.html text/html -").is_html_page()
    assert parse_line("1.000 0 127.0.0.1 NONE_NONE/000 0 - error:transaction-end-before-headers") is None
    assert parse_line("garbage") is None


def test_an_https_url_is_asked_for_as_the_multiplier_sends_an_intercepted_request():
    assert upstream_form("https://localhost:8443/obj/a.jpg?q=1") == ("http://localhost:8443/obj/a.jpg?q=1", "https")
    assert upstream_form("https://example.org/") == ("http://example.org:443/", "https")
    assert upstream_form("https://[::1]/x") == ("http://[::1]:443/x", "https")
    assert upstream_form("http://h:80/x") == ("http://h:80/x", "")
