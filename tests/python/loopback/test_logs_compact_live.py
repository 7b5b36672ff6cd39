"""./spe logs compact while the Multiplier is writing its log: no record lost, none duplicated."""

from __future__ import annotations

import threading
import time

import duckdb
from conftest import read_records
from httpclient import Connection

from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.parquet_log import compact, compacted


def test_compacting_a_log_the_multiplier_is_writing(lab, start_multiplier, tmp_path):
    m = start_multiplier("--proxy", f"a=127.0.0.1:{lab.collector_port}", "--proxy", f"b=127.0.0.1:{lab.collector_port}")
    RunDir(tmp_path).multiplier_log.symlink_to(m.log)
    stop = threading.Event()

    def client() -> None:
        with Connection(m.port) as c:
            for i in range(3000):  # about 100 a second until the compactions below are done
                if stop.is_set():
                    break
                assert c.get(lab.url(f"/c/{i % 50}?size={100 + i}")).status == 200
                time.sleep(0.01)

    thread = threading.Thread(target=client)
    thread.start()
    compactions = 0
    try:
        # Ten compactions while records keep arriving (flushed every 100 ms), counted rather than timed: a loaded
        # machine compacts more slowly, never with fewer records in between.
        deadline = time.monotonic() + 60
        while compactions < 10 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.15)
            if m.log.exists():
                compact(tmp_path)
                compactions += 1
    finally:
        stop.set()
        thread.join(timeout=15)
    assert m.stop() == 0  # every queued record written
    compact(tmp_path)
    written = read_records(m.log)
    assert compactions >= 10 and len(written) > 50
    files = [str(p) for p in compacted(tmp_path).files]
    rows = duckdb.sql(f"SELECT id, url, [p.name FOR p IN proxies], collector.bytes "
                      f"FROM read_parquet({files}, hive_partitioning = false) ORDER BY seq").fetchall()
    assert rows == [(r["id"], r["url"], [p["name"] for p in r["proxies"]], r["collector"]["bytes"]) for r in written]
