"""Without a replay port, the proxies never get an unsafe request: each copy would reach the origin.

The Multiplier's default without --replay-listen (`--unsafe-requests withhold`): the client's POST,
PUT, DELETE... goes to the Collector once and is answered; each proxy leg is recorded NOT_SENT, and
the proxies (here Squids whose parent is the Collector) send nothing on.
"""

from __future__ import annotations

import json

from httpclient import Connection, request_bytes


def origin_counts(lab) -> dict:
    with Connection(lab.origin_port) as c:
        return json.loads(c.get(lab.url("/stats")).body)


def test_unsafe_requests_are_withheld_from_the_proxies_without_a_replay_port(lab, start_multiplier):
    squids = [lab.squid_child(f"withhold-squid{i}") for i in range(2)]
    m = start_multiplier("--unsafe-requests", "withhold",
                         *[a for s in squids for a in ("--proxy", f"{s.name}=127.0.0.1:{s.port}")])
    sent = [("POST", "/post", b"order=1"), ("PUT", "/status/201", b"x" * 1000), ("DELETE", "/status/202", b""),
            ("SPEFROB", "/status/200", b"y")]
    before = origin_counts(lab)
    with Connection(m.port) as c:
        for method, path, body in sent:
            c.send(request_bytes(method, lab.url(path), {"Content-Length": str(len(body))}, body))
            reply = c.read_reply()
            assert reply.status in (200, 201, 202), (method, reply.status)
        assert c.get(lab.url("/c/withhold-get")).status == 200  # a GET still goes to every proxy
    records = {r["method"]: r for r in m.records(len(sent) + 1)}
    after = origin_counts(lab)
    for method, path, _ in sent:
        key = f"{method} {path}"
        assert after.get(key, 0) - before.get(key, 0) == 1, key  # the client's request only
        legs = records[method]["proxies"]
        assert [p["name"] for p in legs] == ["withhold-squid0", "withhold-squid1"]
        for p in legs:
            assert p["result"] == "NOT_SENT" and p["error"] == "not sent", p
            assert "--replay-listen" in p["error_detail"]
            assert p["status"] is None
    assert all(p["result"] == "OK" for p in records["GET"]["proxies"])
    assert "unsafe requests" in m.child.log.read_text()  # said at start
