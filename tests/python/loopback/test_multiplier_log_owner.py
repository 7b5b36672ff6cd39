"""One Multiplier per log: a second one started on a log another Multiplier is writing is refused before it
listens (two numberings of `id` in one file would make one run of two evaluations), by the lock on the log's run
directory, which it takes first (test_multiplier_name.py: any log in that directory); once the first has ended,
crashed or not, a new one takes the log over and appends to it."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from conftest import multiplier_binary, read_records
from httpclient import Connection

from spe_tools.ports import free_port


def multiplier_args(lab, log: Path) -> tuple[int, list[str]]:
    port = free_port()
    return port, [str(multiplier_binary()), "--listen", f"127.0.0.1:{port}", "--collector",
                  f"127.0.0.1:{lab.collector_port}", "--unsafe-requests", "send", "--log", str(log)]


def urls_in(log: Path, count: int) -> list[str]:
    """The last path segment of each record's URL, once `count` records are in (bounded wait)."""
    end = time.monotonic() + 10
    while len(records := read_records(log)) < count and time.monotonic() < end:
        time.sleep(0.05)
    return [r["url"].rsplit("/", 1)[-1] for r in sorted(records, key=lambda r: r["id"])]


def test_a_second_multiplier_on_the_same_log_is_refused_and_names_the_first(lab, start_multiplier):
    first = start_multiplier()
    _, args = multiplier_args(lab, first.log)
    refused = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1, refused.stderr
    pid = first.child.popen.pid
    assert f"{first.log.parent} is being written by another Multiplier (pid {pid})" in refused.stderr
    with Connection(first.port) as c:  # the first one goes on
        assert c.get(lab.url("/c/owner?size=100")).status == 200
    assert urls_in(first.log, 1) == ["owner?size=100"]


def test_a_multiplier_takes_over_the_log_of_one_that_crashed(lab, tmp_path):
    log = tmp_path / "multiplier.jsonl"
    port, args = multiplier_args(lab, log)
    first = lab.group.start("crashes", args, port=port)
    with Connection(port) as c:
        assert c.get(lab.url("/c/before?size=100")).status == 200
    assert urls_in(log, 1) == ["before?size=100"]
    first.stop(sig=signal.SIGKILL)
    port, args = multiplier_args(lab, log)
    lab.group.start("takes-over", args, port=port)  # stopped with the lab's group
    with Connection(port) as c:
        assert c.get(lab.url("/c/after?size=100")).status == 200
    assert urls_in(log, 2) == ["before?size=100", "after?size=100"]
