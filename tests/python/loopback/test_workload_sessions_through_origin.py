"""The load client's users against a real synthetic origin: pages, their images and links with think times;
and --rate 0 without --users refused (the session model alone: unit/test_workload_sessions.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import ROOT

from spe_tools.process import ProcessGroup, free_port

ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}


def test_the_load_clients_users_browse_the_origin_with_think_times(tmp_path):
    workdir = tmp_path
    with ProcessGroup(workdir) as group:
        port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "1", "--think-sd-ms", "0"], port=port, env=ENV)
        out = workdir / "load.json"
        run = subprocess.run([sys.executable, "-m", "spe_tools.workload.load", "--origin", f"127.0.0.1:{port}",
                              "--rate", "0", "--users", "3", "--think-s", "500ms", "--session-pages", "3",
                              "--duration", "6s", "--seed", "2", "--json", str(out)],
                             env=ENV, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        s = json.loads(out.read_text())
    assert s["errors"] == 0 and s["sessions"] >= 3 and s["page_views"] >= 10, s
    assert set(s["categories"]) == {"session-page", "session-object"}
    # about 3 users x 6 s / (0.5 s think + fetch time) page views; each page has 2 to 8 images
    assert 2 * s["categories"]["session-page"] <= s["categories"]["session-object"]
    assert "load: users:" in run.stdout


def test_rate_zero_needs_users():
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.load", "--origin", "127.0.0.1:9", "--rate", "0",
                          "--duration", "1s"], env=ENV, capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "--rate must be positive (or 0 with --users)" in run.stderr


def test_a_load_started_before_its_origin_listens_waits_for_it(tmp_path):
    """`./spe origin ... &` then `./spe load ...`, pasted together (the README's tour): the client can start before
    the origin listens. It waits for it (up to --timeout), and no request fails for it."""
    port = free_port()
    out = tmp_path / "load.json"
    with ProcessGroup(tmp_path) as group:
        load = group.start("load", [sys.executable, "-m", "spe_tools.workload.load", "--origin", f"127.0.0.1:{port}",
                                    "--rate", "20", "--duration", "1s", "--seed", "3", "--json", str(out)],
                           ready=False, env=ENV)
        time.sleep(1.5)  # the client is up and waiting; the origin starts only now
        group.start("origin", [sys.executable, "-m", "spe_tools.workload.origin", "--listen", f"127.0.0.1:{port}",
                               "--think-mean-ms", "1", "--think-sd-ms", "0"], port=port, env=ENV)
        assert load.popen.wait(timeout=60) == 0, load.log.read_text()
    s = json.loads(out.read_text())
    assert s["errors"] == 0 and s["completed"] == s["sent"] > 0, s
