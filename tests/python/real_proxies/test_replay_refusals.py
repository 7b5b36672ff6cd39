"""A proxy that changes an unsafe request never gets it to the origin: the replay port refuses its copy.

Behind the patched Collector with the Multiplier's replay port: two proxies that pass requests on
(Squids), one that changes a request body's last byte, one that drops the request tag. Each client
POST and PUT reaches the origin once; the faithful proxies get the client's reply (OK), the others
the replay port's 502, recorded REPLAY_REFUSED with the reason, and the client its origin's reply.
"""

from __future__ import annotations

import json

import pytest
from collectorbed import StartProxy, multiplier_behind_collector, squid
from conftest import ENV, PYTHON, ROOT
from test_collector import fetch

from spe_tools.process import free_port

SQUIDS = ("squid1", "squid2")
FAULTY = {"mangler": "mangle_body", "untagger": "drop_tag"}


def fault_proxy(name: str, mode: str) -> StartProxy:
    """tests/fixtures/fault_proxy.py in `mode`, its Collector port its parent."""
    def start(group, parent: int) -> int:
        port = free_port()
        group.start(name, [PYTHON, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                           "--parent", f"127.0.0.1:{parent}", "--mode", mode], port=port, env=ENV)
        return port
    return start


@pytest.fixture(scope="module")
def bed():
    proxies = {name: squid(name) for name in SQUIDS}
    proxies |= {name: fault_proxy(name, mode) for name, mode in FAULTY.items()}
    with multiplier_behind_collector("spe-replay-refusals-", proxies) as bed:
        yield bed


def test_a_changed_or_untagged_copy_is_refused_and_never_reaches_the_origin(bed):
    origin, multiplier = bed
    before = len(multiplier.records(0))
    sent = [("POST", "/post/order", b"item=42&qty=1"), ("PUT", "/post/profile", b'{"name": "spe"}')]
    for method, path, body in sent:
        reply = fetch(multiplier.port, f"http://127.0.0.1:{origin}{path}", method=method, body=body,
                      headers={"Content-Type": "application/octet-stream"})
        assert reply.status in (200, 405, 501), (method, reply.status)  # whatever the origin says, once
    records = multiplier.records(before + len(sent))[before:]
    counts = json.loads(fetch(origin, "/_stats").body)
    for (method, path, _), record in zip(sent, sorted(records, key=lambda r: r["id"]), strict=True):
        assert counts.get(path, 0) <= 1, (path, counts)  # the client's request, no proxy's copy
        results = {p["name"]: p for p in record["proxies"]}
        for name in SQUIDS:
            assert results[name]["result"] == "OK", (method, results[name])
        assert results["mangler"]["result"] == "REPLAY_REFUSED", (method, results["mangler"])
        assert "body differs" in results["mangler"]["error_detail"]
        assert results["untagger"]["result"] == "REPLAY_REFUSED", (method, results["untagger"])
        assert "no X-SPE-Request tag" in results["untagger"]["error_detail"]
    assert counts.get("/post/order") == 1
