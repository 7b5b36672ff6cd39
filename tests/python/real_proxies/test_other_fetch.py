"""A faithful copy of another origin fetch is OTHER_FETCH, not the proxy's mismatch; a corrupted one is still caught.

Behind the patched Collector: an origin that stamps each transaction (tests/fixtures/xact_origin.py, X-Xact),
and two proxies that cache (fault_proxy.py's cache_correct): `keeper` passes its copies on faithfully, `flipper`
passes them through a second fault proxy that changes one body byte (flip_byte). Two concurrent first requests
for one URL reach the origin separately (the Collector never collapses the client's requests): fetch 1 is whole
after 0.3 s, fetch 2 after 1.5 s. Each proxy keeps fetch 1 from the first request's leg and serves it for the
second, whose reference is fetch 2.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ENV, PYTHON, ROOT, Multiplier
from parts import require
from test_collector import fetch

from spe_tools import collector
from spe_tools.collector import start_collector
from spe_tools.process import ProcessGroup, free_port

ORIGIN = ROOT / "tests/fixtures/xact_origin.py"
FAULT_PROXY = str(ROOT / "tests/fixtures/fault_proxy.py")


@pytest.fixture(scope="module")
def bed():
    require(collector.missing("spe"), "the patched Collector")
    workdir = Path(tempfile.mkdtemp(prefix="spe-other-fetch-"))
    workdir.chmod(0o755)  # Squid drops to user proxy
    with ProcessGroup(workdir) as group:
        origin = free_port()
        group.start("origin", [sys.executable, str(ORIGIN), str(origin)], port=origin)
        direct, ports = free_port(), {"keeper": free_port(), "flipper": free_port()}
        start_collector(group, "collector", "spe", direct, ports)

        def fault_proxy(name: str, mode: str, parent: int) -> int:
            port = free_port()
            group.start(name, [PYTHON, FAULT_PROXY, "--port", str(port), "--parent", f"127.0.0.1:{parent}", "--mode",
                               mode], port=port, env=ENV)
            return port

        keeper = fault_proxy("keeper", "cache_correct", ports["keeper"])
        flipper = fault_proxy("flipper", "flip_byte", fault_proxy("flipper-cache", "cache_correct", ports["flipper"]))
        multiplier = Multiplier(group, workdir, "multiplier", [
            "--collector", f"127.0.0.1:{direct}", "--proxy", f"keeper=127.0.0.1:{keeper}",
            "--proxy", f"flipper=127.0.0.1:{flipper}"])
        yield origin, multiplier
        multiplier.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def two_concurrent_first_requests(multiplier: Multiplier, url: str) -> list[dict]:
    """The records of two requests for `url` sent 0.1 s apart, the first one first."""
    before = len(multiplier.records(0))
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(fetch(multiplier.port, url)))]
    threads[0].start()
    time.sleep(0.1)
    threads.append(threading.Thread(target=lambda: replies.append(fetch(multiplier.port, url))))
    threads[1].start()
    for t in threads:
        t.join(timeout=60)
    assert [r.status for r in replies] == [200, 200]
    records = sorted(multiplier.records(before + 2, deadline_s=60)[before:], key=lambda r: r["id"])
    assert len(records) == 2 and all(r["url"] == url for r in records)
    return records


@pytest.mark.parametrize(("kind", "differs"), [("x", ["x-xact"]), ("xb", ["x-xact"])],
                         ids=["stamped-header", "stamped-header-and-body"])
def test_a_copy_of_the_other_fetch_is_other_fetch_and_a_corrupted_one_a_mismatch(bed, kind, differs):
    origin, multiplier = bed
    first, second = two_concurrent_first_requests(multiplier, f"http://127.0.0.1:{origin}/{kind}/object-{kind}")
    assert first["collector"]["fetch"] != second["collector"]["fetch"]  # fetched separately
    legs = [{p["name"]: p for p in r["proxies"]} for r in (first, second)]
    # The first request: both proxies fetched what the client got.
    assert legs[0]["keeper"]["fetch"] == first["collector"]["fetch"]
    assert legs[0]["keeper"]["result"] == "OK", legs[0]["keeper"]
    assert legs[0]["flipper"]["result"] == "BODY_MISMATCH", legs[0]["flipper"]
    # The second: both served their copy of the first fetch; only the faithful one is excused the difference.
    assert legs[1]["keeper"]["fetch"] == first["collector"]["fetch"], "the keeper did not keep the first fetch"
    assert legs[1]["keeper"]["result"] == "OTHER_FETCH", legs[1]["keeper"]
    assert legs[1]["keeper"]["mismatched_headers"] == differs
    assert legs[1]["flipper"]["fetch"] == first["collector"]["fetch"]
    assert legs[1]["flipper"]["result"] == "BODY_MISMATCH", legs[1]["flipper"]
