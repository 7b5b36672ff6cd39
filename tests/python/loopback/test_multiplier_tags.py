"""The request tag (X-SPE-Request) and the Collector's fetch stamp (X-SPE-Fetch) through real Squids.

A stock Squid plays the Collector; the origin (tests/fixtures/stamp_origin.py) puts the stamp on its
replies, as the patched Collector does, and echoes the headers each request arrived with."""

from __future__ import annotations

import os
import re
import sys

import pytest
from conftest import ROOT
from httpclient import Connection

from spe_tools.process import free_port

TAG = re.compile(r"^[0-9a-f]{16}-(\d+)$")


@pytest.fixture(scope="module")
def stamp_origin(lab):
    port = free_port()
    lab.group.start("stamp-origin", [sys.executable, str(ROOT / "tests/fixtures/stamp_origin.py"), str(port)],
                    port=port, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return port


@pytest.fixture(scope="module")
def proxy(lab):
    return lab.squid_child("tagged")


FORGED = {"X-SPE-Request": "chosen-by-the-client", "X-SPE-Fetch": "forged-stamp",
          "X-SPE-Validated": "forged-validation"}


def test_the_collector_and_the_proxies_get_one_tag_and_the_record_keeps_tag_and_stamps(
        lab, stamp_origin, proxy, start_multiplier):
    m = start_multiplier("--proxy", f"squid=127.0.0.1:{proxy.port}")
    with Connection(m.port) as c:
        replies = [c.get(f"http://127.0.0.1:{stamp_origin}/echo/{name}", headers=FORGED) for name in ("a", "b")]
    records = m.records(2)
    prefixes = set()
    for reply, record in zip(replies, records, strict=True):
        assert reply.status == 200 and reply.body.startswith(b"echo ")
        # The Collector's copy carried the Multiplier's tag, not the client's, and no client stamp.
        tag = TAG.match(record["tag"])
        assert tag and int(tag.group(1)) == record["id"], record["tag"]
        prefixes.add(record["tag"].split("-")[0])
        assert reply.headers["x-seen-request"] == record["tag"]
        assert reply.headers["x-seen-fetch"] == "-"
        assert reply.headers["x-seen-validated"] == "-"
        # The stamps are recorded or dropped, not relayed.
        assert "x-spe-fetch" not in reply.headers
        assert "x-spe-validated" not in reply.headers
        assert re.fullmatch(r"origin-\d+", record["collector"]["fetch"])
        (leg,) = record["proxies"]
        # The proxy's origin fetch was another one; its X-Seen-Request is compared: the same tag.
        assert re.fullmatch(r"origin-\d+", leg["fetch"]) and leg["fetch"] != record["collector"]["fetch"]
        assert leg["result"] == "OK", leg
        assert leg["retried"] is False and record["collector"]["retried"] is False
    assert len(prefixes) == 1  # one random part per Multiplier process


def test_client_fetch_stamp_relays_the_stamp(lab, stamp_origin, start_multiplier):
    m = start_multiplier("--client-fetch-stamp")
    with Connection(m.port) as c:
        reply = c.get(f"http://127.0.0.1:{stamp_origin}/echo/relayed")
    (record,) = m.records(1)
    assert reply.headers["x-spe-fetch"] == record["collector"]["fetch"]
    assert reply.headers["x-spe-validated"] == record["collector"]["fetch"]  # the origin sends both alike


def test_dummy_mode_passes_tag_and_stamp_untouched(lab, stamp_origin, start_multiplier):
    dummy = start_multiplier("--dummy", "--parent", f"127.0.0.1:{lab.collector_port}", collector=False)
    with Connection(dummy.port) as c:
        reply = c.get(f"http://127.0.0.1:{stamp_origin}/echo/dummy", headers={"X-SPE-Request": "outer-tag-5",
                                                                               "X-SPE-Fetch": "client-stamp",
                                                                               "X-SPE-Validated": "client-v"})
    assert reply.headers["x-seen-request"] == "outer-tag-5"
    assert reply.headers["x-seen-fetch"] == "client-stamp"
    assert reply.headers["x-seen-validated"] == "client-v"
    assert reply.headers["x-spe-validated"] == reply.headers["x-spe-fetch"]
    assert re.fullmatch(r"origin-\d+", reply.headers["x-spe-fetch"])
    (record,) = dummy.records(1)
    assert record["tag"] == "outer-tag-5"
    assert record["collector"]["fetch"] == reply.headers["x-spe-fetch"]


def test_a_dummy_proxy_under_test_hands_the_stamp_back_to_the_multiplier(lab, stamp_origin, start_multiplier):
    dummy = start_multiplier("--dummy", "--parent", f"127.0.0.1:{lab.collector_port}", collector=False)
    m = start_multiplier("--proxy", f"dummy=127.0.0.1:{dummy.port}")
    with Connection(m.port) as c:
        assert c.get(f"http://127.0.0.1:{stamp_origin}/echo/chained").status == 200
    (record,) = m.records(1)
    (dummy_record,) = dummy.records(1)
    assert dummy_record["tag"] == record["tag"]
    (leg,) = record["proxies"]
    assert leg["result"] == "OK", leg
    assert leg["fetch"] == dummy_record["collector"]["fetch"]
