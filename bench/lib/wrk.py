"""wrk, the load generator of the closed-loop benchmarks: run pinned with a deadline, its output read."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from bench.lib.harness import LOAD_CPU, BenchError

WRK_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}


def parse_wrk(text: str, latency: bool = False) -> dict:
    """Requests/s, completed requests and errors from wrk's output; p50/p99 in µs too with `latency`
    (`wrk --latency`)."""
    def percentile_us(pct: str) -> float:
        m = re.search(rf"^\s*{pct}(?:\.0+)?%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            raise BenchError(f"no {pct}% line in wrk output:\n{text}")
        return float(m.group(1)) * WRK_UNITS[m.group(2)]
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    total = re.search(r"(\d+) requests in", text)
    if not rps or not total:
        raise BenchError(f"cannot read wrk output:\n{text}")
    errors = []
    m = re.search(r"Socket errors: (.*)", text)
    if m:
        errors.append(f"socket errors: {m.group(1).strip()}")
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errors.append(f"non-2xx/3xx: {m.group(1)}")
    result = {"rps": float(rps.group(1)), "requests": int(total.group(1)), "errors": "; ".join(errors)}
    if latency:
        result |= {"p50": percentile_us("50"), "p99": percentile_us("99")}
    return result


def run_wrk(url: str, script: Path | None, seconds: float, connections: int, workdir: Path,
            latency: bool = False) -> dict:
    """wrk -t1 -c`connections` on LOAD_CPU, with a deadline; adds its own CPU time (rusage) to the result."""
    out_path = workdir / "wrk.out"
    argv = ["taskset", "-c", str(LOAD_CPU), "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "5s"]
    argv += ["--latency"] if latency else []
    argv += ["-s", str(script)] if script else []
    with open(out_path, "wb") as out:
        popen = subprocess.Popen([*argv, url], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 cwd=workdir)
    deadline = time.monotonic() + seconds + 30
    pid = 0
    try:
        while True:
            pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                raise BenchError(f"wrk did not finish within {seconds + 30:g} s")
            time.sleep(0.05)
    finally:
        if not pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(popen.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(popen.pid, 0)
        popen.returncode = 0  # reaped here; keep subprocess from waiting again
    text = out_path.read_text(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise BenchError(f"wrk exited with {code}:\n{text}")
    result = parse_wrk(text, latency)
    result["wrk_cpu"] = usage.ru_utime + usage.ru_stime
    return result
