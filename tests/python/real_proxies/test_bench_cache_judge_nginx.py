"""The cache-judge benchmark's nginx configuration, checked by nginx itself (nginx -t; the benchmark's pure
parts: unit/test_bench_cache_judge.py)."""

import subprocess

from parts import missing_program, require

from bench import cache_judge
from bench.lib.servers import NGINX_HEAD
from spe_tools.config_template import render_text


def test_nginx_accepts_the_upstreams_configuration(tmp_path):
    require(missing_program("nginx"), "nginx")
    conf = tmp_path / "nginx.conf"
    conf.write_text(render_text(NGINX_HEAD, {"dir": tmp_path})
                    + cache_judge.upstream_servers([1001, 1002], tmp_path) + "}\n")
    done = subprocess.run(["nginx", "-t", "-e", str(tmp_path / "error.log"), "-p", str(tmp_path), "-c", str(conf)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
