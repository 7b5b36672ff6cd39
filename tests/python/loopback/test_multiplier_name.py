"""Every record names its Multiplier, and one run directory has one Multiplier writing it. An evaluation may run
several Multipliers (one per client group or host) whose logs are merged into one report: each record's
`multiplier` (--name, by default the host's name) tells them apart, and a second Multiplier given a log in a
directory another one writes is refused before it listens (multiplier/src/log/run_dir_lock.hpp)."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import multiplier_binary, read_records
from httpclient import Connection

from spe_tools.ports import free_port


def run_multiplier(lab, *args: str) -> subprocess.CompletedProcess:
    """A Multiplier in front of the module's Collector that is expected to exit at once (killed by subprocess.run
    if it does not within the timeout)."""
    argv = [str(multiplier_binary()), "--listen", f"127.0.0.1:{free_port()}", "--collector",
            f"127.0.0.1:{lab.collector_port}", "--unsafe-requests", "send", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=15)


def records_of(log: Path, count: int) -> list[dict]:
    """The log's records once `count` are in (bounded wait), by id."""
    end = time.monotonic() + 10
    while len(records := read_records(log)) < count and time.monotonic() < end:
        time.sleep(0.05)
    return sorted(records, key=lambda r: r["id"])


def fetch(port: int, lab, *paths: str) -> None:
    with Connection(port) as c:
        for path in paths:
            assert c.get(lab.url(f"/c/{path}?size=100")).status == 200


def test_every_record_names_the_multiplier_that_wrote_it(lab, start_multiplier):
    m = start_multiplier("--name", "east")
    assert m.log == m.rundir / "multiplier.jsonl"
    fetch(m.port, lab, "named-1", "named-2")
    records = records_of(m.log, 2)
    assert [r["url"].rsplit("/", 1)[-1] for r in records] == ["named-1?size=100", "named-2?size=100"]
    assert all(r["multiplier"] == "east" for r in records), records


def test_without_a_name_a_multiplier_is_named_after_its_host(lab, start_multiplier):
    m = start_multiplier()
    fetch(m.port, lab, "unnamed")
    expected = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:64] or "multiplier"
    assert [r["multiplier"] for r in records_of(m.log, 1)] == [expected]


@pytest.mark.parametrize("flag", ["--log", "--rope-log"])
def test_a_second_multiplier_in_the_same_run_directory_is_refused_and_the_first_goes_on(lab, start_multiplier, flag):
    first = start_multiplier("--name", "east")
    second_log = first.rundir / "second.log"
    refused = run_multiplier(lab, "--name", "west", flag, str(second_log))
    assert refused.returncode == 1, refused.stderr
    pid = first.child.popen.pid
    assert (f"spe-multiplier: error: {first.rundir} is being written by another Multiplier (pid {pid}); give each "
            "Multiplier its own run directory") in refused.stderr
    assert not second_log.exists()  # refused before it opened its logs
    assert first.child.popen.poll() is None
    fetch(first.port, lab, "still-running")
    assert [r["multiplier"] for r in records_of(first.log, 1)] == ["east"]


def test_a_name_outside_letters_digits_dot_underscore_and_dash_is_refused(lab):
    refused = run_multiplier(lab, "--name", "a b")
    assert refused.returncode == 2, refused.stderr
    assert "spe-multiplier: --name must be 1 to 64 letters, digits, '.', '_' or '-', got 'a b'" in refused.stderr
