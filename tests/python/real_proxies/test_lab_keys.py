"""Lab-file keys survive into lab.json and the rendered configs: labs brought up and down through the
real `./spe lab up|down|run` CLI, not only the model.

- A lab on live traffic (`[origin] kind = "none"`) with an HTTPS origin of its own, whose CA it hands
  to the Collector (`[collector] origin_ca_files`), read through interception: a request through the
  Multiplier gets the origin's reply, every proxy gets it too, and nothing is left running.
- A lab whose file sets nearly every key at once (the workload's `pages` and `command` excepted: they
  belong to other workload kinds): it starts, runs its load, writes what it was given, and stops.
"""

from __future__ import annotations

import grp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary
from labsupport import lab_cli, lab_pids, lab_up
from parts import environment_skip, require

from spe_tools import ca as spe_ca
from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS
from spe_tools.lab.definition.model import load_lab
from spe_tools.lab.start.prometheus import PROGRAM as PROMETHEUS_PROGRAM
from spe_tools.lab.start.running_lab import down
from spe_tools.process import ProcessGroup, alive, free_port

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
BODY = b"hello from an origin with a CA of its own\n"

# An HTTPS origin of the user's, its certificate from a CA nobody else trusts (argv: port, cert, key, body).
OWN_ORIGIN = """\
import http.server, ssl, sys
BODY = sys.argv[4].encode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Cache-Control", "max-age=60")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


@pytest.fixture
def runs():
    multiplier_binary()
    require(collector.missing("spe"), "the patched Collector")
    path = Path(tempfile.mkdtemp(prefix="spe-lab-keys-"))
    path.chmod(0o755)  # the proxies drop to their own users
    with ProcessGroup(path) as users:  # what the user runs beside the lab: their own origin
        port = free_port()
        _, cert, key = spe_ca.test_origin_tls(path / "own-ca", ["localhost", "127.0.0.1"])
        users.start("own-origin", [sys.executable, "-c", OWN_ORIGIN, str(port), str(cert), str(key), BODY.decode()],
                    port=port)
        yield path, port
        for rundir in path.rglob("pids.json"):
            down(rundir.parent)
    shutil.rmtree(path, ignore_errors=True)


def curl(port: int, url: str, cacert: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "--max-time", "20", "-x", f"http://127.0.0.1:{port}", "--cacert", str(cacert),
                           url], capture_output=True, timeout=30)


def wait_records(rundir: Path, part: str, proxies: int, deadline_s: float = 30) -> list[dict]:
    """The records whose URL has `part`, once one of them has every proxy's leg."""
    end = time.monotonic() + deadline_s
    while True:
        log = rundir / "multiplier.jsonl"
        lines = log.read_text().split("\n")[:-1] if log.exists() else []
        found = [r for r in map(json.loads, filter(None, lines)) if part in r["url"]]
        if any(len(r["proxies"]) == proxies for r in found) or time.monotonic() > end:
            return found
        time.sleep(0.1)


OWN_CA_LAB = """\
name = "ownca"
[collector]
kind = "spe"
origin_ca_files = ["own-ca/origin-ca.pem"]
[origin]
kind = "none"
[multiplier]
intercept_tls = true
ca_dir = "spe-ca"
extra_args = ["--connect-port", "{port}"]
[[proxy]]
name = "sq"
kind = "squid"
cache_mb = 16
[[proxy]]
name = "dummy"
kind = "dummy"
"""


def test_a_lab_with_its_own_https_origins_ca_comes_up_serves_it_and_goes_down(runs):
    path, port = runs
    labfile = path / "ownca.toml"
    labfile.write_text(OWN_CA_LAB.format(port=port))
    with lab_up(labfile, path / "runs") as lab:
        rundir = lab.rundir
        topo = json.loads((rundir / "lab.json").read_text())
        assert topo["collector"]["origin_ca_files"] == [str((path / "own-ca/origin-ca.pem").resolve())]
        url = f"https://localhost:{port}/mine?q=1"
        got = curl(topo["multiplier"]["port"], url, path / "spe-ca" / spe_ca.CERT_NAME)
        assert got.returncode == 0 and got.stdout == BODY, got  # the origin's reply, through SPE
        (record,) = wait_records(rundir, "/mine", proxies=2)
        assert record["url"] == url and record["collector"]["status"] == 200
        assert {p["name"]: p["result"] for p in record["proxies"]} == {"sq": "OK", "dummy": "OK"}, record
        lab.down()
    assert re.search(r"how they ended: .*multiplier exit 0 after SIGTERM", lab.output), lab.output
    assert not (rundir / "pids.json").exists()


def every_key_lab(path: Path, own_port: int, ports: dict[str, int]) -> str:
    """Every key of docs/lab-file.md but the workload's `pages` (browse) and `command` (command)."""
    (path / "model.json").write_text(json.dumps({"size_mean": 3000}))
    return f"""\
name = "everykey"
runs_dir = "my-runs"
share_group = "users"
[collector]
kind = "spe"
uncacheable_ttl_s = 60
replay_timing = true
cache_mb = 32
port = {ports["collector"]}
origin_ca_files = ["own-ca/origin-ca.pem"]
[origin]
kind = "synthetic"
host = "localhost"
port = {ports["origin"]}
model = "model.json"
think_mean_ms = 5
think_sd_ms = 1
seed = 7
tls = true
tls_port = {ports["tls"]}
[multiplier]
listen = "127.0.0.1:{ports["multiplier"]}"
mode = "sequential"
legs = "serial"
timeout_s = 20
threads = 2
fanout_threads = 0
compare_headers = ["Content-Type", "Cache-Control", "ETag"]
ignore_headers = ["X-Unused*"]
extra_args = ["--connect-port", "{own_port}"]
intercept_tls = true
no_intercept = ["*.example.invalid"]
ca_dir = "spe-ca"
metrics_listen = "127.0.0.1:{ports["metrics"]}"
prometheus = true
max_fanout_backlog = 32
max_queued_legs = 48
turn_timeout_s = 25
[workload]
kind = "load"
duration_s = 5
rate = 8
clients = 2
hit_ratio = 0.5
popularity = "zipf:0.9"
conformance = 0.1
think_s = 0.5
users = 1
session_pages = 2
seed = 3
https_share = 0.3
args = ["--seq", "0.3", "--post", "0"]
[live]
enabled = true
every = "2s"
[[proxy]]
name = "sq"
kind = "squid"
port = {ports["sq"]}
collector_port = {ports["sq-collector"]}
cache_mb = 16
collector_limit_kbps = 100000
[[proxy]]
name = "sqp"
kind = "squid-prefetch"
cache_mb = 16
prefetch_depth = 0
prefetch_rate = 5
prefetch_budget_kb = 256
twin_of = "sq"
[[proxy]]
name = "ats"
kind = "trafficserver"
cache_mb = 16
prefetch = true
prefetch_count = 1
prefetch_pattern = '/(seq.[^.]*\\D)(\\d+)(\\.jpg)/$1{{$2+1}}$3/'
[[proxy]]
name = "apache"
kind = "apache"
cache_mb = 16
cache_ports = [{own_port}]
[[proxy]]
name = "hap"
kind = "haproxy"
cache_mb = 16
max_age_s = 600
[[proxy]]
name = "dummy"
kind = "dummy"
[[proxy]]
name = "mine"
kind = "external"
address = "127.0.0.1:{ports["sq"]}"
collector_port = {ports["mine-collector"]}
"""


def require_every_key_parts() -> None:
    """The proxy kinds the lab runs, and the group its share_group names."""
    for kind in ("squid", "squid-prefetch", "trafficserver", "apache", "haproxy", "dummy"):
        require(KINDS[kind].missing(), f"the proxy kind {kind}")
    require([] if Path(PROMETHEUS_PROGRAM).exists() else [f"{PROMETHEUS_PROGRAM} is missing"], "Prometheus")
    try:
        grp.getgrnam("users")
    except KeyError:
        environment_skip("no group 'users' here (the lab's share_group)")


def run_watching_pids(labfile: Path, rundirs: str) -> set[int]:
    """`./spe lab run LABFILE` to its end (exit 0), and every PID the run directories matching `rundirs`
    (a glob beside the lab file) listed while it ran."""
    run = subprocess.Popen([sys.executable, "-m", "spe_tools.lab", "run", str(labfile)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=ENV, cwd=ROOT, start_new_session=True)
    seen: set[int] = set()
    try:
        while run.poll() is None:
            for rundir in labfile.parent.glob(rundirs):
                seen |= lab_pids(rundir)
            time.sleep(0.2)
        out = run.stdout.read()
        assert run.wait(timeout=240) == 0, out[-4000:]
    finally:
        if run.poll() is None:
            run.terminate()
            run.wait(timeout=60)
    return seen


def check_every_key_lab_json(topo: dict, path: Path, ports: dict[str, int]) -> None:
    """lab.json holds what the lab file gave each part."""
    c = topo["collector"]
    assert (c["uncacheable_ttl_s"], c["replay_timing"], c["cache_mb"], c["ports"]["direct"]) == (
        60, True, 32, ports["collector"])
    assert c["origin_ca_files"] == [str((path / "own-ca/origin-ca.pem").resolve())]
    assert c["strip_query_terms"] is False  # a synthetic origin: the lab's own queries are kept
    assert c["ports"]["sq"] == ports["sq-collector"] and c["ports"]["mine"] == ports["mine-collector"]
    o = topo["origin"]
    assert (o["port"], o["tls_port"], o["seed"], o["think_mean_ms"], o["think_sd_ms"]) == (
        ports["origin"], ports["tls"], 7, 5, 1)
    m = topo["multiplier"]
    assert (m["port"], m["legs"], m["intercept_tls"]) == (ports["multiplier"], "serial", True)
    assert m["ca_cert"] == str((path / "spe-ca" / spe_ca.CERT_NAME).resolve())
    assert m["metrics_url"] == f"http://127.0.0.1:{ports['metrics']}/metrics" and m["prometheus_url"]
    p = topo["proxies"]
    assert p["sq"]["port"] == ports["sq"] and p["sq"]["collector_limit_kbps"] == 100000
    assert p["sqp"]["twin_of"] == "sq" and p["ats"]["prefetch"] is True
    assert (p["mine"]["kind"], p["mine"]["port"]) == ("external", ports["sq"])
    w = topo["workload"]
    assert (w["rate"], w["users"], w["popularity"], w["args"]) == (8, 1, "zipf:0.9", ["--seq", "0.3", "--post", "0"])
    live = topo["live"]
    assert live["every_s"] == 2 and re.fullmatch(rf"http://127\.0\.0\.1:{live['port']}/[\w-]{{20,}}/", live["url"])


def check_every_key_configs(rundir: Path, path: Path, own_port: int) -> None:
    """The rendered configurations: the Collector's, Traffic Server's remap, Apache's, the prefetch agent's."""
    conf = (rundir / "collector/squid.conf").read_text()
    assert f"cafile={(path / 'own-ca/origin-ca.pem').resolve()}" in conf
    assert f"cafile={rundir / 'origin-tls/origin-ca.pem'}" in conf
    assert "cache_mem 32 MB" in conf and "collector_uncacheable_ttl 60 seconds" in conf
    assert "strip_query_terms off" in conf and "delay_parameters 1 102400000/102400000" in conf
    remap = (rundir / "proxies/ats/rr/etc/remap.config").read_text()
    assert "--fetch-count=1" in remap and r"--fetch-path-pattern=/(seq.[^.]*\D)(\d+)(\.jpg)/$1{$2+1}$3/" in remap
    assert f"CacheEnable disk http://:{own_port}/" in (rundir / "proxies/apache/httpd.conf").read_text()
    hap = (rundir / "proxies/hap/haproxy.cfg").read_text()
    assert "total-max-size 16" in hap and "max-age 600" in hap
    agent = (rundir / "sqp.agent.out").read_text()
    assert "squid-prefetch: following" in agent


def check_every_key_traffic(rundir: Path) -> None:
    """The workload ran through it all, HTTPS intercepted too, without an error."""
    records = [json.loads(line) for line in (rundir / "multiplier.jsonl").read_text().splitlines()]
    https = [r for r in records if r["url"].startswith("https://")]
    assert any(r["url"].startswith("http://") for r in records)
    # the Collector verified the origin with its run's test CA (origin-tls/, private to the lab's user)
    assert [r for r in https if r["collector"].get("status") == 200], https[:3]
    assert not [r for r in https if r["collector"].get("status") == 502], https[:3]
    gets = [r for r in records if r["method"] == "GET" and r["collector"].get("status") == 200]
    assert len(gets) >= 10
    for r in gets:
        assert {leg["name"] for leg in r["proxies"]} == {"sq", "sqp", "ats", "apache", "hap", "dummy", "mine"}
    summary = json.loads((rundir / "workload.json").read_text())
    assert summary["errors"] == 0, summary


def test_a_lab_that_sets_every_key_runs_and_stops(runs):
    path, own_port = runs
    require_every_key_parts()
    ports = {name: free_port() for name in ("collector", "origin", "tls", "multiplier", "sq", "sq-collector",
                                            "mine-collector", "metrics")}
    labfile = path / "every.toml"
    labfile.write_text(every_key_lab(path, own_port, ports))
    check = lab_cli("check", str(labfile))
    assert check.returncode == 0, check.stderr
    seen = run_watching_pids(labfile, "my-runs/*-everykey")
    (rundir,) = path.glob("my-runs/*-everykey")  # runs_dir, relative to the lab file
    # the run's lab.toml (written from the model: the file's relative paths would name other files there)
    assert replace(load_lab(rundir / "lab.toml"), source=None) == replace(load_lab(labfile), source=None)
    assert len(seen) >= 8 and not [p for p in seen if alive(p)], "processes survived the run"
    assert not (rundir / "pids.json").exists()
    check_every_key_lab_json(json.loads((rundir / "lab.json").read_text()), path, ports)
    check_every_key_configs(rundir, path, own_port)
    check_every_key_traffic(rundir)
    # share_group: the run is the group's (test_run_privacy.py checks every file)
    assert (rundir / "lab.json").stat().st_gid == grp.getgrnam("users").gr_gid


def test_an_origin_ca_file_squid_cannot_name_is_refused_by_check(tmp_path):
    """Squid's tls_outgoing_options cannot name a path with a space: `lab check` says so (it was a Python
    traceback from `lab up`)."""
    spaced = tmp_path / "my cas"
    ca_file, _, _ = spe_ca.test_origin_tls(spaced)
    labfile = tmp_path / "lab.toml"
    labfile.write_text(f'[collector]\nkind = "squid"\norigin_ca_files = ["{ca_file}"]\n'
                       '[[proxy]]\nname = "d"\nkind = "dummy"\n')
    result = lab_cli("check", str(labfile))
    assert result.returncode == 1 and "Squid cannot name a file whose path has spaces" in result.stderr, result.stderr
