"""Unsafe requests reach the origin once, however many proxies are under test (docs/robustness.md).

Every proxy kind of the lab sits behind the patched Collector; the synthetic origin counts what it
receives per method and path. Each unsafe request (POST, PUT, PATCH, DELETE and an extension method,
with the statuses and body shapes a web application meets) goes through the Multiplier once: the
origin must see it exactly once, the client must get the origin's status and body, and every proxy
leg must have a record. The proxies' copies go to the Multiplier's replay port through the Collector
(never to the origin), which answers them from the client's reply.
"""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import ALL_CACHEABLE, lab_session
from parts import installed_kinds

from spe_tools.lab.definition.model import PROXY_KINDS
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid
from spe_tools.workload.http11 import CLIENT_HEADER

METHODS = ["POST", "PUT", "PATCH", "DELETE", "PROPPATCH"]  # WebDAV: an extension method the origin parses
STATUSES = [200, 201, 204, 303, 400, 409, 500]
BODIES = {"empty": b"", "small": b"name=spe&order=1", "100k": bytes(range(256)) * 400,
          "5m": hashlib.sha256(b"spe").digest() * (5 * 1024 * 1024 // 32), "chunked": b"chunked body " * 5000}


def lab_text(kinds: list[str], external: tuple[int, int], model: Path, collector: str) -> str:
    # order_wait_s: the proxies' copies wait for a slow request before them as long as it takes (five seconds in
    # test_copies_that_waited_behind_a_slow_request_get_the_clients_reply), not the default two.
    text = (f'name = "unsafe"\n[collector]\nkind = "{collector}"\n[multiplier]\ntimeout_s = 30\norder_wait_s = 20\n'
            f'[origin]\nthink_mean_ms = 0\nmodel = "{model}"\n')
    text += (f'[[proxy]]\nname = "p-external"\nkind = "external"\naddress = "127.0.0.1:{external[0]}"\n'
             f'collector_port = {external[1]}\n')
    for kind in (k for k in kinds if k != "external"):
        size = "" if kind in ("tinyproxy", "privoxy", "dummy") else "cache_mb = 16\n"
        text += f'[[proxy]]\nname = "p-{kind}"\nkind = "{kind}"\n{size}'
    return text


def unsafe_lab(collector: str):
    kinds = installed_kinds(PROXY_KINDS, multiplier_binary())
    external = (free_port(), free_port())

    def text(workdir: Path) -> str:
        model = workdir / "model.json"
        model.write_text(json.dumps(ALL_CACHEABLE))
        return lab_text(kinds, external, model, collector)

    def users_squid(users: ProcessGroup) -> None:
        start_squid(users, "user-squid", external[0], parent_port=external[1], cache_mb=16)

    return lab_session(text, users_squid), kinds


@pytest.fixture(scope="module")
def lab():
    session, _ = unsafe_lab("spe")
    with session as running:
        yield running


def send(port: int, method: str, url: str, body: bytes, chunked: bool) -> tuple[int, bytes]:
    # Each case is a client of its own (they share an address, and four run at once): none waits at a proxy
    # for another's legs (the Multiplier's --order client).
    client = {CLIENT_HEADER: f"case-{method}-{url}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        if chunked:
            conn.putrequest(method, url)
            conn.putheader("Transfer-Encoding", "chunked")
            conn.putheader("Content-Type", "application/octet-stream")
            conn.putheader(CLIENT_HEADER, client[CLIENT_HEADER])
            conn.endheaders()
            for i in range(0, len(body), 7000):
                piece = body[i:i + 7000]
                conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            conn.send(b"0\r\n\r\n")
        else:
            conn.request(method, url, body=body, headers={"Content-Type": "application/octet-stream", **client})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def origin_stats(lab) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", lab.run.ports.origin, timeout=10)
    conn.request("GET", "/_stats")
    stats = json.loads(conn.getresponse().read())
    conn.close()
    return stats


def run_matrix(lab, cases: list[tuple[str, int, str]], prefix: str) -> dict:
    """Sends each case once; returns what the client got per path."""
    got = {}

    def one(case):
        method, status, body_name = case
        path = f"/unsafe/{prefix}-{method}-{status}-{body_name}"
        status_got, body = send(lab.multiplier_port, method, f"{lab.origin}{path}?status={status}",
                                BODIES[body_name], body_name == "chunked")
        got[path] = (method, status, body_name, status_got, body)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, cases))
    return got


def wait_for_records(lab, paths: set[str], deadline_s: float = 120, origin: str = "") -> dict[str, dict]:
    end = time.monotonic() + deadline_s
    origin = origin or lab.origin
    while True:
        lines = (lab.rundir / "multiplier.jsonl").read_text().split("\n")[:-1]
        found = {}
        for record in map(json.loads, filter(None, lines)):
            path = record["url"].split("?")[0].replace(origin, "")
            if path in paths:
                found[path] = record
        if len(found) == len(paths) or time.monotonic() > end:
            return found
        time.sleep(0.5)


def test_every_unsafe_request_reaches_the_origin_once(lab):
    cases = list(itertools.product(METHODS, STATUSES, BODIES))
    got = run_matrix(lab, cases, "m")
    records = wait_for_records(lab, set(got))
    stats = origin_stats(lab)["by_method_path"]
    wrong = []
    for path, (method, status, body_name, status_got, body) in sorted(got.items()):
        seen = stats.get(f"{method} {path}", 0)
        if seen != 1:
            wrong.append(f"{method} {path}: the origin saw it {seen} times")
        if status_got != status:
            wrong.append(f"{method} {path}: the client got {status_got}, the origin answered {status}")
        sent = BODIES[body_name]
        if status not in (204,) and f"length {len(sent)} md5 {hashlib.md5(sent).hexdigest()}".encode() not in body:
            wrong.append(f"{method} {path}: the client's body is not the origin's: {body[:120]!r}")
        record = records.get(path)
        if record is None:
            wrong.append(f"{method} {path}: no record")
            continue
        names = {p["name"] for p in record["proxies"]}
        if len(names) != len(lab.lab_json["proxies"]):
            wrong.append(f"{method} {path}: proxy legs recorded for {sorted(names)}")
        for p in record["proxies"]:
            if p["result"] == "REPLAY_REFUSED" and "differs" not in (p["error_detail"] or ""):
                wrong.append(f"{method} {path}: {p['name']} refused: {p['error_detail']}")
            # The dummy passes every request on as it came: the replay port answers it with the client's reply,
            # from the first request on (the Collector found its parent when it started).
            if p["name"] == "p-dummy" and p["result"] != "OK":
                wrong.append(f"{method} {path}: the dummy's copy got {p['status']} ({p['result']}: {p.get('error')}, "
                             f"{p.get('error_detail')}, {p.get('total_us')} µs)")
    assert not wrong, f"{len(wrong)} problems:\n" + "\n".join(wrong[:40])


def test_the_proxies_get_the_clients_reply(lab):
    """A proxy that passes an unsafe request on gets the client's reply from the replay port: OK."""
    got = run_matrix(lab, [("POST", 201, "small"), ("PUT", 200, "100k"), ("DELETE", 204, "empty")], "ok")
    records = wait_for_records(lab, set(got))
    for path, record in records.items():
        results = {p["name"]: p["result"] for p in record["proxies"]}
        # Squid, the dummy and nginx pass each of these on unchanged: their copies are replayed.
        for name in ("p-squid", "p-dummy", "p-nginx"):
            if name in results:
                assert results[name] == "OK", (path, name, record)


def put_records(lab, paths: set[str], deadline_s: float = 120) -> dict[str, dict]:
    """The records of the PUTs to `paths` (a GET may have the same path), once all are written."""
    end = time.monotonic() + deadline_s
    while True:
        lines = (lab.rundir / "multiplier.jsonl").read_text().split("\n")[:-1]
        found = {r["url"].split("?")[0].replace(lab.origin, ""): r for r in map(json.loads, filter(None, lines))
                 if r["method"] == "PUT"}
        found = {path: r for path, r in found.items() if path in paths}
        if len(found) == len(paths) or time.monotonic() > end:
            return found
        time.sleep(0.5)


@pytest.mark.parametrize("target", ["another", "the same"])
def test_copies_that_waited_behind_a_slow_request_get_the_clients_reply(lab, target):
    """A client GETs a reply the origin takes five seconds to give, then PUTs (to that URL, or another) on the same
    connection: each proxy's copy of the PUT waits for that proxy's GET, then goes through the Collector to the
    replay port, which answers it from the client's reply (kept --replay-ttl, 180 s), not with an error of the
    Collector's."""
    client = {CLIENT_HEADER: f"slow-then-put-{target}"}
    word = target.replace(" ", "-")
    conn = http.client.HTTPConnection("127.0.0.1", lab.multiplier_port, timeout=60)
    paths = []
    try:
        for n in range(2):
            slow = f"/unsafe/slow-{word}-{n}"
            conn.request("GET", f"{lab.origin}{slow}?think=5000", headers=client)
            assert conn.getresponse().read() is not None
            path = slow if target == "the same" else f"/unsafe/after-slow-{word}-{n}"
            conn.request("PUT", f"{lab.origin}{path}?status=200", body=BODIES["small"],
                         headers={"Content-Type": "application/octet-stream", **client})
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 200
            paths.append(path)
    finally:
        conn.close()
    records = put_records(lab, set(paths))
    assert set(records) == set(paths)
    wrong = []
    for path, record in sorted(records.items()):
        for p in record["proxies"]:
            waited = p.get("queued_us", 0)
            # Squid, the dummy and nginx pass a PUT on unchanged: each copy is the client's, replayed.
            if p["name"] in ("p-squid", "p-dummy", "p-nginx") and p["result"] != "OK":
                wrong.append(f"{path}: {p['name']} got {p['status']} ({p['result']}, {p['error_detail']}) "
                             f"after waiting {waited / 1e6:.1f} s")
            if p["status"] in (502, 503) and p["result"] != "REPLAY_REFUSED":
                wrong.append(f"{path}: {p['name']} got the Collector's own {p['status']}")
    assert not wrong, "\n".join(wrong)
    # The copies did wait for the slow GET: the case is the one the test means.
    assert max(p.get("queued_us", 0) for r in records.values() for p in r["proxies"]) > 3_000_000


def test_a_copy_the_replay_port_cannot_match_is_refused_not_forwarded(lab):
    """What a misbehaving proxy would send the Collector: untagged, unknown tag, changed body."""
    port = lab.lab_json["collector"]["ports"]["p-squid"] if "p-squid" in lab.lab_json["proxies"] else next(
        iter(v for k, v in lab.lab_json["collector"]["ports"].items() if k != "direct"))
    cases = {"untagged": {}, "unknown": {"X-SPE-Request": "0123456789abcdef-999999"}}
    for name, headers in cases.items():
        path = f"/unsafe/refused-{name}"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", f"{lab.origin}{path}", body=b"x=1", headers=headers)
        reply = conn.getresponse()
        reply.read()
        conn.close()
        assert reply.status == 502, (name, reply.status)
        assert "X-SPE-Replay-Refused" in reply.headers, (name, dict(reply.headers))
        assert origin_stats(lab)["by_method_path"].get(f"POST {path}", 0) == 0, name


def test_a_client_body_over_the_limit_is_refused_before_anything_is_forwarded(lab):
    # The lab's Multiplier takes bodies up to its --max-request-body (64 MiB); a declared 65 MiB is refused.
    conn = http.client.HTTPConnection("127.0.0.1", lab.multiplier_port, timeout=30)
    path = "/unsafe/too-large"
    conn.putrequest("POST", f"{lab.origin}{path}")
    conn.putheader("Content-Length", str(65 << 20))
    conn.endheaders()
    reply = conn.getresponse()
    reply.read()
    conn.close()
    assert reply.status == 413
    assert origin_stats(lab)["by_method_path"].get(f"POST {path}", 0) == 0


def counted_unsafe_requests(port: int, origin: str, prefix: str, cases: list[tuple[str, int, str]]) -> dict:
    got = {}
    for method, status, body_name in cases:
        path = f"/unsafe/{prefix}-{method}-{status}-{body_name}"
        got[path] = (method, *send(port, method, f"{origin}{path}?status={status}", BODIES[body_name],
                                   body_name == "chunked"))
    return got


SMALL_MATRIX = [(m, s, b) for m in METHODS for s in (200, 201, 500) for b in ("small", "chunked")]


def test_the_stock_collector_routes_unsafe_copies_to_the_replay_port():
    session, _ = unsafe_lab("squid")
    with session as stock:
        got = counted_unsafe_requests(stock.multiplier_port, stock.origin, "stock", SMALL_MATRIX)
        records = wait_for_records(stock, set(got))
        stats = origin_stats(stock)["by_method_path"]
        for path, (method, status_got, _) in got.items():
            assert stats.get(f"{method} {path}", 0) == 1, (method, path, stats.get(f"{method} {path}"))
            assert status_got == int(path.split("-")[2]), path
            assert len(records[path]["proxies"]) == len(stock.lab_json["proxies"]), path


def test_the_external_lab_file_keeps_unsafe_requests_from_the_origin(tmp_path):
    """configs/labs/external.toml as a user runs it (its fixed ports moved to free ones): the user's own
    Squid as the external proxy, a browser-like client, an origin outside the lab."""
    text = (ROOT / "configs/labs/external.toml").read_text()
    ports = {"8080": free_port(), "3128": free_port(), "3400": free_port()}
    for old, new in ports.items():
        text = text.replace(f":{old}", f":{new}").replace(f"= {old}", f"= {new}")
    origin_port = free_port()

    def before(users: ProcessGroup) -> None:
        start_squid(users, "user-squid", ports["3128"], parent_port=ports["3400"], cache_mb=16)
        argv = [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{origin_port}"]
        users.start("origin", argv, port=origin_port, env={**os.environ, "PYTHONPATH": str(ROOT)})

    with lab_session(lambda _workdir: text, before) as external:
        assert external.lab_json["collector"]["kind"] == "spe"
        origin = f"http://localhost:{origin_port}"
        got = counted_unsafe_requests(external.multiplier_port, origin, "external", SMALL_MATRIX)
        records = wait_for_records(external, set(got), origin=origin)
        conn = http.client.HTTPConnection("127.0.0.1", origin_port, timeout=10)
        conn.request("GET", "/_stats")
        stats = json.loads(conn.getresponse().read())["by_method_path"]
        conn.close()
        for path, (method, status_got, _) in got.items():
            assert stats.get(f"{method} {path}", 0) == 1, (method, path, stats.get(f"{method} {path}"))
            assert status_got == int(path.split("-")[2]), path
            assert {p["name"] for p in records[path]["proxies"]} == {"mine", "dummy"}, path
