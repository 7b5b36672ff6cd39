"""A proxy that changes an unsafe request never gets it to the origin: the replay port refuses its copy.

Behind the patched Collector with the Multiplier's replay port: two proxies that pass requests on
(Squids), one that changes a request body's last byte, one that drops the request tag. Each client
POST and PUT reaches the origin once; the faithful proxies get the client's reply (OK), the others
the replay port's 502, recorded REPLAY_REFUSED with the reason, and the client its origin's reply.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ENV, PYTHON, ROOT, Multiplier
from parts import require
from test_collector import ORIGIN, fetch

from spe_tools import collector
from spe_tools.collector import hold_replay_port, start_collector
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid

SQUIDS = ("squid1", "squid2")
FAULTY = {"mangler": "mangle_body", "untagger": "drop_tag"}


@pytest.fixture(scope="module")
def bed():
    require(collector.missing("spe"), "the patched Collector")
    workdir = Path(tempfile.mkdtemp(prefix="spe-replay-refusals-"))
    workdir.chmod(0o755)
    with ProcessGroup(workdir) as group:
        origin = free_port()
        group.start("origin", [sys.executable, str(ORIGIN), str(origin)], port=origin)
        direct, replay = free_port(), free_port()
        ports = {name: free_port() for name in (*SQUIDS, *FAULTY)}
        holder = hold_replay_port(replay)  # as the lab does: the Collector finds its parent when it starts
        start_collector(group, "collector", "spe", direct, ports, replay_port=replay)
        args = ["--collector", f"127.0.0.1:{direct}", "--replay-listen", f"127.0.0.1:{replay}"]
        for name in SQUIDS:
            squid = start_squid(group, name, free_port(), parent_port=ports[name])
            args += ["--proxy", f"{name}=127.0.0.1:{squid.port}"]
        for name, mode in FAULTY.items():
            port = free_port()
            group.start(name, [PYTHON, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port), "--parent",
                               f"127.0.0.1:{ports[name]}", "--mode", mode], port=port, env=ENV)
            args += ["--proxy", f"{name}=127.0.0.1:{port}"]
        holder.close()
        multiplier = Multiplier(group, workdir, "multiplier", args)
        yield origin, multiplier
        multiplier.stop()
    shutil.rmtree(workdir, ignore_errors=True)


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
