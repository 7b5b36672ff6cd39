"""The synthetic origin serves the conformance cases over real HTTP (the cases and their planning alone:
unit/test_workload_conformance.py)."""

from __future__ import annotations

import socket
import sys

from conftest import ROOT
from httpclient import Connection

from spe_tools.process import ProcessGroup, free_port

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def test_the_origin_serves_the_cases_over_http(tmp_path):
    with ProcessGroup(tmp_path) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "0", "--think-sd-ms", "0"], port=port, env=ENV)
        base = f"http://127.0.0.1:{port}"
        with Connection(port) as c:
            first = c.get(f"{base}/c/no-store/h1")
            second = c.get(f"{base}/c/no-store/h1")
            tagged = c.get(f"{base}/c/max-age=2/h1")
            revalidated = c.get(f"{base}/c/max-age=2/h1", headers={"If-None-Match": tagged.headers["etag"]})
            stale = c.get(f"{base}/c/age=7200,max-age=3600/h1")
            en = c.get(f"{base}/c/vary=accept-language/h1", headers={"Accept-Language": "en"})
            de = c.get(f"{base}/c/vary=accept-language/h1", headers={"Accept-Language": "de"})
            part = c.get(f"{base}/c/max-age=3600/h1", headers={"Range": "bytes=5-9"})
            whole = c.get(f"{base}/c/max-age=3600/h1")
            empty = c.get(f"{base}/c/status=204/h1")
            after = c.get(f"{base}/c/status=410/h1")
            put = c.get(f"{base}/c/max-age=3600/h1", method="PUT", body=b"new")
            head = c.get(f"{base}/c/max-age=3600/h1", method="HEAD")
            dated = c.get(f"{base}/c/expires=date/h1")
            searched = c.get(f"{base}/c/invalidated/h1", method="M-SEARCH")
    assert first.headers["cache-control"] == "no-store" and first.body == second.body
    assert first.headers["x-origin-count"] == "1" and second.headers["x-origin-count"] == "2"
    assert revalidated.status == 304 and revalidated.body == b""
    assert revalidated.headers["etag"] == tagged.headers["etag"]
    assert stale.headers["age"] == "7200"
    assert en.body != de.body and en.headers["vary"] == "Accept-Language"
    assert part.status == 206 and part.body == whole.body[5:10]
    assert empty.status == 204 and "content-length" not in empty.headers and after.status == 410
    assert put.status == 200 and put.headers["cache-control"] == "no-store"
    assert head.status == 200 and head.body == b"" and head.headers["etag"] == whole.headers["etag"]
    assert dated.headers["date"] == dated.headers["expires"]  # the case's Date, not one of the origin's too
    assert searched.status == 200


def test_the_origin_cuts_the_first_fetch_short_and_counts_fetches_per_url(tmp_path):
    """cut-once: the first fetch of a URL stops halfway through the body and the connection closes (an origin
    failing mid-reply); the next fetch is whole. no-cache,changing: each fetch a new version."""
    with ProcessGroup(tmp_path) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "0", "--think-sd-ms", "0"], port=port, env=ENV)
        request = b"GET /c/cut-once/h2 HTTP/1.1\r\nHost: localhost\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(request)
            cut = b"".join(iter(lambda: s.recv(65536), b""))  # until the origin closes
        head, _, body = cut.partition(b"\r\n\r\n")
        fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
        length = int(fields[b"content-length"])
        assert head.startswith(b"HTTP/1.1 200") and 0 < len(body) < length
        with Connection(port) as c:
            whole = c.get(f"http://127.0.0.1:{port}/c/cut-once/h2")
            versions = [c.get(f"http://127.0.0.1:{port}/c/no-cache,changing/h2").headers["x-version"] for _ in "ab"]
    assert whole.status == 200 and len(whole.body) == length and whole.body.startswith(body)
    assert versions == ["1", "2"]
