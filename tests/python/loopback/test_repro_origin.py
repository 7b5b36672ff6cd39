"""The stand-in origin of `./spe repro`, over real HTTP on 127.0.0.1: it answers the case's path with
the reply in force at the case time, Date now and the other dates moved with it, a body of the
recorded length, 304 to matching validators, unsafe methods with their recorded status. And the case's HAR
(case.har) served by the HAR origin and replayed by `./spe replay`.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import socket
import subprocess
import sys
import time

import pytest
from conftest import ENV, ROOT
from reprosupport import T0, make_run, record

from spe_tools.process import ProcessGroup, free_port
from spe_tools.repro.case import extract_case
from spe_tools.repro.case_dir import write_case
from spe_tools.repro.stand_in_origin import START_PATH
from spe_tools.rundir.layout import RunDir

DATE_1 = email.utils.formatdate(T0, usegmt=True)
ORIGIN_1 = {"cache-control": "max-age=600", "date": DATE_1, "etag": '"v1"', "age": "7",
            "expires": email.utils.formatdate(T0 + 600, usegmt=True),
            "last-modified": email.utils.formatdate(T0 - 3600, usegmt=True), "vary": "Accept-Language"}
ORIGIN_2 = {"cache-control": "no-cache", "date": email.utils.formatdate(T0 + 3, usegmt=True), "etag": '"v2"'}
AGE = {"rule": "age", "section": "4", "reason": "r"}


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    base = tmp_path_factory.mktemp("repro-origin")
    legs = [{"name": "nginx", "cache": {"violations": [AGE]}}]
    run = make_run(base / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=1000, origin_fields="date cache-control set-cookie x-custom",
               origin_connection="x-hop-field"),
        record(2, T0 + 1, method="POST", origin={"cache-control": "no-store"}, status=201, nbytes=0),
        record(3, T0 + 3, origin=ORIGIN_2, nbytes=30, legs=legs),
    ])
    with stand_in(base, run) as port:
        yield Origin(port)


@contextlib.contextmanager
def stand_in(base, run):
    """The stand-in origin of nginx's case on the run's request 3, on a free port."""
    case_dir = write_case(extract_case(run, "nginx", 3), base / "case")
    port = free_port()
    with ProcessGroup(base) as group:
        group.start("stand-in", [sys.executable, "-m", "spe_tools.repro.stand_in_origin", "--case", str(case_dir),
                                 "--listen", f"127.0.0.1:{port}"], port=port, env=ENV)
        yield port


class Origin:
    def __init__(self, port: int):
        self.port = port

    def ask(self, method: str, path: str = "/obj?cc=max-age%3D600", headers: dict | None = None,
            ) -> tuple[http.client.HTTPResponse, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request(method, path, body=b"x" if method == "POST" else None, headers=headers or {})
        reply = conn.getresponse()
        body = reply.read()
        conn.close()
        return reply, body

    def set_clock(self, case_time: float) -> None:
        reply, _ = self.ask("GET", f"{START_PATH}?at={case_time}")
        assert reply.status == 204


def epoch(value: str) -> float:
    return email.utils.parsedate_to_datetime(value).timestamp()


def test_before_the_replay_starts_the_first_reply_is_in_force_with_dates_moved_to_now(origin):
    origin.set_clock(0)
    before = time.time()
    reply, body = origin.ask("GET")
    assert reply.status == 200
    assert len(body) == 1000 and body == origin.ask("GET")[1]  # deterministic
    assert reply.getheader("Cache-Control") == "max-age=600"
    assert reply.getheader("ETag") == '"v1"' and reply.getheader("Vary") == "Accept-Language"
    assert reply.getheader("Age") == "7"  # as recorded
    date = epoch(reply.getheader("Date"))
    assert before - 1 <= date <= time.time() + 1
    assert epoch(reply.getheader("Expires")) - date == pytest.approx(600, abs=2)
    assert date - epoch(reply.getheader("Last-Modified")) == pytest.approx(3600, abs=2)


def test_validators_that_match_get_304_others_the_whole_reply(origin):
    origin.set_clock(0.5)
    assert origin.ask("GET", headers={"If-None-Match": '"v1"'})[0].status == 304
    assert origin.ask("GET", headers={"If-None-Match": 'W/"v1", "x"'})[0].status == 304
    assert origin.ask("GET", headers={"If-None-Match": '"v0"'})[0].status == 200
    last_modified = origin.ask("GET")[0].getheader("Last-Modified")
    assert origin.ask("GET", headers={"If-Modified-Since": last_modified})[0].status == 304
    earlier = email.utils.formatdate(epoch(last_modified) - 10, usegmt=True)
    assert origin.ask("GET", headers={"If-Modified-Since": earlier})[0].status == 200


def test_head_gets_the_header_of_a_get_without_a_body(origin):
    origin.set_clock(0.5)
    reply, body = origin.ask("HEAD")
    assert (reply.status, body, reply.getheader("Content-Length")) == (200, b"", "1000")


def test_an_unsafe_method_gets_its_recorded_status_and_no_store(origin):
    origin.set_clock(1.2)
    reply, _ = origin.ask("POST")
    assert reply.status == 201 and reply.getheader("Cache-Control") == "no-store"


def test_later_in_the_case_the_later_reply_is_in_force(origin):
    origin.set_clock(3.2)
    reply, body = origin.ask("GET")
    assert (reply.status, reply.getheader("ETag"), len(body)) == (200, '"v2"', 30)
    assert reply.getheader("Cache-Control") == "no-cache" and reply.getheader("Expires") is None


def test_a_date_off_the_recordings_clock_keeps_its_distance_to_the_fetch(tmp_path):
    """An origin 10 s slow (Date 10 s before the fetch, Expires 20 s after its Date): the replay's Date is 10 s
    slow too and Expires 20 s after it, so a copy's apparent age (RFC 9111 4.2.3) is what it was in the run."""
    slow = {"date": email.utils.formatdate(T0 - 10, usegmt=True),
            "expires": email.utils.formatdate(T0 + 10, usegmt=True)}
    run = make_run(tmp_path / "run", [record(1, T0, origin=slow, nbytes=10), record(2, T0 + 1),
                                      record(3, T0 + 2, legs=[{"name": "nginx", "cache": {"violations": [AGE]}}])])
    tmp_path.chmod(0o755)
    with stand_in(tmp_path, run) as port:
        served = Origin(port)
        served.set_clock(0)
        before = time.time()
        reply, _ = served.ask("GET")
    date = epoch(reply.getheader("Date"))
    assert before - 12 <= date <= time.time() - 8
    assert epoch(reply.getheader("Expires")) - date == 20


def test_after_a_304_that_carried_a_length_the_stand_ins_304s_carry_it(tmp_path):
    """The origin's 304 at case time 3 carried Content-Length: 0 (validated_length): from then on the stand-in's
    304s carry it too, as the proxies got it in the run; before, a 304 says no length (RFC 9110 8.6)."""
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=100),
        record(2, T0 + 3, origin=ORIGIN_1, nbytes=100, revalidated=True, validated_length=0),
        record(3, T0 + 4, nbytes=100, legs=[{"name": "nginx", "cache": {"violations": [AGE]}}])])
    tmp_path.chmod(0o755)
    with stand_in(tmp_path, run) as port:
        served = Origin(port)
        for case_time, length in ((0.5, None), (3.5, "0")):
            served.set_clock(case_time)
            reply, _ = served.ask("GET", headers={"If-None-Match": '"v1"'})
            assert (reply.status, reply.getheader("Content-Length")) == (304, length), case_time


def test_other_paths_are_not_found(origin):
    assert origin.ask("GET", "/elsewhere")[0].status == 404


def test_the_origins_other_fields_come_with_stand_in_values(origin):
    """The record names Set-Cookie and X-Custom without their values: they are sent with stand-ins."""
    origin.set_clock(0.5)
    reply, _ = origin.ask("GET")
    assert reply.getheader("Set-Cookie") == "spe-repro=1; Path=/" and reply.getheader("X-Custom") == "spe-repro"
    # the field for one hop comes with a Connection that lists it, as the origin sent it
    assert "X-Hop-Field" in reply.getheader("Connection") and reply.getheader("X-Hop-Field") == "spe-repro"


def test_the_interim_replies_the_origin_sent_go_before_the_reply(tmp_path):
    legs = [{"name": "nginx", "cache": {"violations": [AGE]}}]
    run = make_run(tmp_path / "run", [record(1, T0, origin=ORIGIN_1, interim=(103,)),
                                      record(2, T0 + 1, legs=legs), record(3, T0 + 2, legs=legs)])
    with stand_in(tmp_path, run) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /obj?cc=max-age%3D600 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head = b""
        while head.count(b"\r\n\r\n") < 2:
            head += sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 103 ") and b"\r\nLink: " in head.split(b"\r\n\r\n")[0]
    assert b"HTTP/1.1 200 " in head.split(b"\r\n\r\n")[1]


def test_the_cases_har_round_trips_through_the_har_origin_and_the_replay(tmp_path):
    """`./spe repro --no-replay` writes case.har beside case.json; `./spe origin --har` serves it and `./spe replay`
    sends its requests to it: every request answered with the status of the origin's reply in force, found in the
    HAR, its recorded fields and body size."""
    legs = [{"name": "nginx", "cache": {"violations": [AGE]}}]
    run = make_run(tmp_path / "run", [
        record(1, T0, origin=ORIGIN_1, nbytes=1000, origin_fields="date cache-control set-cookie x-custom"),
        record(2, T0 + 1, method="POST", origin={"cache-control": "no-store"}, status=201, nbytes=0),
        record(3, T0 + 1.5, origin=ORIGIN_2, nbytes=30, legs=legs),
    ])
    wrote = spe("repro", str(run), "--proxy", "nginx", "--request", "3", "--no-replay")
    assert wrote.returncode == 0, wrote.stderr
    har = RunDir(run).repro(3, "nginx") / "case.har"
    port = free_port()
    with ProcessGroup(tmp_path) as group:
        group.start("har-origin", [sys.executable, "-m", "spe_tools.workload.har_origin", "--listen",
                                   f"127.0.0.1:{port}", "--har", str(har)], port=port, env=ENV)
        origin = Origin(port)
        reply, body = origin.ask("GET", "/_har/http/localhost:40001/obj?cc=max-age%3D600")
        assert (reply.status, len(body), reply.getheader("ETag"), reply.getheader("X-Custom")) == \
            (200, 1000, '"v1"', "spe-repro")
        replayed = spe("replay", str(har), "--via", f"127.0.0.1:{port}", "--origin", f"127.0.0.1:{port}",
                       "--speed", "10", "--json", str(tmp_path / "replay.json"))
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        served = json.loads(origin.ask("GET", "/_stats")[1])
    summary = json.loads((tmp_path / "replay.json").read_text())
    assert summary["sent"] == summary["completed"] == 3 and summary["errors"] == 0
    assert summary["status_matched"] == summary["status_compared"] == 3, summary
    assert served["not_in_har"] == 0 and served["by_status"] == {"200": 3, "201": 1}


def spe(*args: str) -> subprocess.CompletedProcess:
    """The front door, as a user runs it."""
    return subprocess.run([str(ROOT / "spe"), *args], capture_output=True, text=True, timeout=120, env=ENV)
