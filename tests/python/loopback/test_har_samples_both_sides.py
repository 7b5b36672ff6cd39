"""A HAR on both sides, as real processes on 127.0.0.1: the HAR origin (`./spe origin --har`) serves each sample
(Chromium's, Firefox's, mitmproxy's: tests/fixtures/har/) and the HAR replay (`./spe replay`) sends its requests
straight to it, every reply with the recorded status and what both put right counted alike; a bad file stops either
command with one message; and a HAR of tens of MB is read as a stream: neither process grows with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from httpclient import Connection

from bench.lib.har_files import write_big_har
from bench.lib.meters import rss_and_peak_kb, run_with_peak_rss
from spe_tools.process import ProcessGroup, free_port

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
SAMPLES = ROOT / "tests/fixtures/har"
FIXES = {"chromium": {"no_body": 2, "no_size": 2}, "firefox": {"no_body": 1}, "mitmproxy": {"split_fields": 2}}
BIG_MB = 40


def start_origin(group: ProcessGroup, har: Path, name: str = "har-origin"):
    port = free_port()
    return group.start(name, [sys.executable, "-m", "spe_tools.workload.har_origin", "--listen", f"127.0.0.1:{port}",
                              "--har", str(har), "--no-think"], port=port, env=ENV)


def stats(port: int) -> dict:
    with Connection(port) as c:
        return json.loads(c.get(f"http://127.0.0.1:{port}/_stats").body)


def replay_argv(har: Path, port: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "spe_tools.workload.replay", str(har), "--via", f"127.0.0.1:{port}",
            "--origin", f"127.0.0.1:{port}", "--speed", "20", "--json", str(out)]


@pytest.mark.parametrize("name", FIXES)
def test_each_sample_replayed_against_the_har_origin_serving_it(name, tmp_path):
    with ProcessGroup(tmp_path) as group:
        origin = start_origin(group, SAMPLES / f"{name}.har")
        run = subprocess.run(replay_argv(SAMPLES / f"{name}.har", origin.port, tmp_path / "out.json"), env=ENV,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        served = stats(origin.port)
    summary = json.loads((tmp_path / "out.json").read_text())
    assert summary["errors"] == summary["lost"] == 0 and summary["sent"] == summary["completed"] > 0
    assert summary["status_matched"] == summary["status_compared"] == summary["sent"], summary
    assert served["served"] == summary["sent"] and served["not_in_har"] == 0
    assert summary["fixes"] == served["fixes"] == FIXES[name]
    assert f"put right: {FIXES[name]}" in run.stdout


def spe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "spe"), *args], capture_output=True, text=True, timeout=60,
                          env={**ENV, "HOME": str(Path.home())})


@pytest.mark.parametrize("text, message", [
    ("{not json", "not a readable JSON file: before its first entry: lexical error: invalid string in json text."),
    ('{"log": {"entries": [{"startedDateTime": "2026-11-28T12:00:00Z", "request": {"method": "GET"}, '
     '"response": {"status": 200}}]}}', "entry 0: request.url is missing"),
])
def test_a_bad_file_stops_either_command_with_one_message(tmp_path, text, message):
    bad = tmp_path / "bad.har"
    bad.write_text(text)
    for run in (spe("replay", str(bad), "--via", "127.0.0.1:9"),
                spe("origin", "--har", str(bad), "--listen", "127.0.0.1:0")):
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert run.stderr.strip().splitlines()[-1].endswith(f"error: {bad}: {message}"), run.stderr


def origin_peak_kb(origin) -> int:
    """The HAR origin's peak RSS once it read its file and served each of its first hundred URLs."""
    with Connection(origin.port) as c:
        for i in range(100):
            assert c.get(f"http://127.0.0.1:{origin.port}/obj/{i}").status == 200
    return rss_and_peak_kb(origin.pid)[1]


def test_a_har_of_tens_of_mb_is_streamed_on_both_sides(tmp_path):
    """Peak RSS with a 40 MB HAR against the same with a HAR of its 100 first entries (about 8 MB): the
    difference is the entries' headers, a small part of the file, never its bodies."""
    big, small = tmp_path / "big.har", tmp_path / "small.har"
    count = write_big_har(big, BIG_MB)
    write_big_har(small, BIG_MB * 100 / count)
    size_kb = big.stat().st_size // 1024
    with ProcessGroup(tmp_path) as group:
        small_origin, big_origin = start_origin(group, small, "small"), start_origin(group, big, "big")
        small_peak, big_peak = origin_peak_kb(small_origin), origin_peak_kb(big_origin)
        served = stats(big_origin.port)
        run, replay_peak = run_with_peak_rss(replay_argv(big, big_origin.port, tmp_path / "out.json"), ENV, 300)
        assert run.returncode == 0, run.stdout + run.stderr
        _, small_replay_peak = run_with_peak_rss(replay_argv(small, small_origin.port, tmp_path / "s.json"), ENV, 120)
    summary = json.loads((tmp_path / "out.json").read_text())
    assert served["responses"] == count and summary["sent"] == summary["completed"] == count
    assert summary["status_matched"] == count and summary["errors"] == 0
    # Loaded whole, the file alone adds twice its size (as text, then as decoded bodies: 113 MB for the origin
    # where this takes 37): here a quarter of it at most, which leaves room for the replies in flight.
    assert big_peak - small_peak < size_kb / 4, (big_peak, small_peak, size_kb)
    assert replay_peak - small_replay_peak < size_kb / 4, (replay_peak, small_replay_peak, size_kb)
