"""The browse workload without a browser: Chromium's command line (quiet, on the proxy, SPE's CA trusted by key)
and the next page it follows (headless Chromium itself: browser/test_workload_browse.py)."""

from __future__ import annotations

from spe_tools.workload.browse import chromium_argv, next_page


def test_command_line_keeps_chromium_quiet_and_on_the_proxy(tmp_path):
    argv = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path)
    assert "--proxy-server=http://127.0.0.1:3128" in argv and f"--user-data-dir={tmp_path}" in argv
    assert "--proxy-bypass-list=<-loopback>;*.google.com;*.googleapis.com" in ";".join(argv)
    for flag in ("--disable-background-networking", "--disable-component-update", "--disable-sync", "--headless"):
        assert flag in argv
    assert any(a.startswith("--disable-features=NetworkTimeServiceQuerying") for a in argv)
    every = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path, all_through_proxy=True)
    assert "--proxy-bypass-list=<-loopback>" in every
    # DevTools on a pipe, never on a port another local user could connect to
    assert "--remote-debugging-pipe" in argv and not [a for a in argv if a.startswith("--remote-debugging-port")]


def test_next_page_follows_a_page_link():
    links = ["http://127.0.0.1:9/page/3.html", "http://127.0.0.1:9/seq/3/0.jpg", "http://other/page/1.html"]
    import random
    assert next_page(links, ["http://127.0.0.1:9"], random.Random(1)) == "http://127.0.0.1:9/page/3.html"
    assert next_page(links[1:], ["http://127.0.0.1:9"], random.Random(1)) is None


def test_a_page_loaded_over_https_keeps_its_scheme_and_trusts_spes_ca_by_key(tmp_path):
    import random
    links = ["https://localhost:8443/page/7.html", "http://other/page/1.html"]
    bases = ["http://localhost:80", "https://localhost:8443"]
    assert next_page(links, bases, random.Random(1)) == "https://localhost:8443/page/7.html"
    argv = chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path, trust_spki="abc=")
    assert "--ignore-certificate-errors-spki-list=abc=" in argv
    assert not [a for a in chromium_argv("/usr/bin/chromium", "127.0.0.1:3128", tmp_path) if "spki" in a]
