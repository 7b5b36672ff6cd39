"""The lab's cost sampler (spe_tools/lab/watch/proxy_costs.py) on real processes started here: a process tree's CPU and
memory are its root's, a worker that exited keeps the CPU it used, the cache's disk is what its files take, and
proxy-costs.json is written while it samples and once more, final, at the end."""

from __future__ import annotations

import os
import sys
import time

from spe_tools.lab.watch.proxy_costs import CostSampler, Piece, disk_usage
from spe_tools.process import Child, ProcessGroup
from spe_tools.rundir.proxy_costs_json import PROXY, PSS, ProcessCost, ProxyCosts

MB = 2**20
BURN_S = 1.0
# The proxy: a process that forks a worker, which holds 50 MB and burns a CPU second, then exits; the proxy
# waits for it and then sleeps.
PROXY_TREE = f"""
import os, time
pid = os.fork()
if pid == 0:
    ballast = bytearray(50 * {MB})
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # resident, not only reserved
    end = time.process_time() + {BURN_S}
    while time.process_time() < end:
        pass
    os._exit(0)
os.waitpid(pid, 0)
print("worker gone", flush=True)
time.sleep(600)
"""

# A proxy that uses some CPU (more than a clock tick: the kernel counts in ticks), then idles.
BUSY_THEN_IDLE = """
import time
end = time.process_time() + 0.2
while time.process_time() < end:
    pass
print("up", flush=True)
time.sleep(600)
"""


def sampled_tree(group: ProcessGroup, name: str, deadline_s: float = 60.0) -> tuple[Child, Piece, CostSampler]:
    """PROXY_TREE started as proxy `name`, sampled every 0.05 s until its worker is gone."""
    child = group.start(name, [sys.executable, "-c", PROXY_TREE], ready=False)
    piece = Piece(ProcessCost(name, PROXY, name, [name]), [child])
    sampler = CostSampler(group.workdir, [piece])
    end = time.monotonic() + deadline_s
    while "worker gone" not in child.log.read_text() and time.monotonic() < end:
        sampler.sample()
        time.sleep(0.05)
    assert "worker gone" in child.log.read_text(), "the worker did not finish"
    return child, piece, sampler


def test_a_tree_costs_its_workers_cpu_and_memory_even_once_they_exited(tmp_path):
    with ProcessGroup(tmp_path) as group:
        _, piece, sampler = sampled_tree(group, "squid")
        for _ in range(3):  # the worker is gone: only the proxy is left in the tree
            sampler.sample()
            time.sleep(0.05)
        cost = piece.cost
        assert cost.pids == 2  # the proxy and its worker
        # the worker's CPU as last sampled (every 0.05 s while it burnt), and the proxy's own start-up
        assert BURN_S * 0.85 < cost.cpu_s < BURN_S + 2.0, cost
        assert cost.cpu_s == cost.cpu_user_s + cost.cpu_system_s
        assert cost.memory == PSS
        assert cost.memory_peak_bytes > 50 * MB  # the worker's ballast, counted in its proxy's tree
        assert cost.memory_mean_bytes < cost.memory_peak_bytes
        assert cost.samples >= 4


def test_a_proxy_that_died_keeps_its_cost(tmp_path):
    with ProcessGroup(tmp_path) as group:
        child, piece, sampler = sampled_tree(group, "nginx")
        before = (piece.cost.cpu_s, piece.cost.samples)
        child.stop()
        sampler.sample()
        assert (piece.cost.cpu_s, piece.cost.samples) == before  # nothing live: no sample, nothing lost


def test_the_disk_of_a_cache_is_its_files_blocks_each_counted_once(tmp_path):
    cache = tmp_path / "cache"
    (cache / "a" / "b").mkdir(parents=True)
    for name in ("a/1", "a/b/2", "3"):
        (cache / name).write_bytes(os.urandom(100_000))
    os.link(cache / "3", cache / "a" / "3-again")  # the same blocks under two names
    used = disk_usage(cache)
    assert 300_000 <= used < 300_000 + 64 * 1024
    assert disk_usage(tmp_path / "none") is None


def test_the_file_is_written_while_sampling_and_once_more_final(tmp_path):
    (tmp_path / "proxies/nginx/cache").mkdir(parents=True)
    (tmp_path / "proxies/nginx/cache/object").write_bytes(os.urandom(50_000))
    with ProcessGroup(tmp_path) as group:
        child = group.start("nginx", [sys.executable, "-c", BUSY_THEN_IDLE], ready_line="up")
        piece = Piece(ProcessCost("nginx", PROXY, "nginx", ["nginx"], cache_dir="proxies/nginx/cache"), [child],
                      tmp_path / "proxies/nginx/cache")
        sampler = CostSampler(tmp_path, [piece])
        sampler.tick()  # the first tick writes at once: a run killed early has a file
        written = ProxyCosts.read(tmp_path)
        assert written is not None and not written.final and written.costs[0].samples == 1
        sampler.tick()
        assert ProxyCosts.read(tmp_path).costs[0].samples == 1  # not rewritten each second
        (tmp_path / "proxies/nginx/cache/more").write_bytes(os.urandom(50_000))
        sampler.finish()
    final = ProxyCosts.read(tmp_path)
    assert final.final and final.costs[0].samples == 3 and final.costs[0].disk_bytes >= 100_000
    assert final.costs[0].cpu_s > 0
    assert not list(tmp_path.glob("*.tmp"))
