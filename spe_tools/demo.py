"""./spe demo: a small SPE lab on loopback, driven for a few seconds, summarised.

Brings up the test origin, Debian Squid as the Collector stand-in, four proxies
under test (two Squid children of the Collector, the Multiplier's own --dummy
pass-through as the no-caching baseline, and a deliberately broken proxy that
corrupts every fifth body), the Multiplier in front of them, then sends a mixed
workload through it, stops everything by PID and prints ROPE's per-proxy table.
Everything stays in one run directory.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from analysis.report import build_report, text_table, write_report
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid

ROOT = Path(__file__).resolve().parents[1]
MULTIPLIER = ROOT / "build/release/multiplier/spe-multiplier"
FAULT_PROXY = ROOT / "tests/fixtures/fault_proxy.py"


def workload(rng: random.Random, origin: str) -> tuple[str, str, bytes]:
    """One request: mostly cacheable objects with a skewed popularity, some of everything else."""
    roll = rng.random()
    obj = int(rng.paretovariate(1.2)) % 40
    if roll < 0.60:
        return "GET", f"{origin}/c/{obj}?size={1000 + obj * 700}", b""
    if roll < 0.75:
        return "GET", f"{origin}/chunked/{obj}?size={5000 + obj * 300}", b""
    if roll < 0.85:
        return "GET", f"{origin}/u/{obj}", b""
    if roll < 0.95:
        return "HEAD", f"{origin}/c/{obj}?size={1000 + obj * 700}", b""
    return "POST", f"{origin}/post", f"form={obj}".encode()


def drive(port: int, origin: str, requests: int, clients: int, seed: int) -> int:
    """Send `requests` through the proxy on `clients` keep-alive connections; returns replies received."""
    sys.path.insert(0, str(ROOT / "tests/python"))
    from httpclient import Connection  # the tests' raw client: exact bytes, keep-alive

    done = Counter()

    def run(i: int) -> None:
        rng = random.Random(seed + i)
        with Connection(port) as c:
            for _ in range(requests // clients):
                method, url, body = workload(rng, origin)
                c.get(url, method=method, body=body)
                done[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return sum(done.values())


def run_dir(base: Path | None) -> Path:
    base = base or ROOT / "runs"
    path = base / time.strftime("demo-%Y%m%d-%H%M%S")
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)  # Squid runs as user `proxy` and must reach its directory
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="client requests to send (default 400)")
    parser.add_argument("--clients", type=int, default=4, help="keep-alive client connections (default 4)")
    parser.add_argument("--out", type=Path, help="where to create the run directory (default: runs/)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not MULTIPLIER.exists():
        print(f"spe demo: {MULTIPLIER} is missing: run ./spe setup", file=sys.stderr)
        return 1
    workdir = run_dir(args.out)
    print(f"spe demo: run directory {workdir}")
    with ProcessGroup(workdir) as group:
        origin_port = free_port()
        group.start("origin", [sys.executable, "-m", "spe_tools.mini_origin", "--port", str(origin_port)],
                    port=origin_port, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        # The Collector gives each proxy under test a port of its own, so its access.log
        # tells them apart (the report derives hit ratios and bandwidth from it).
        names = ["squid-a", "squid-b", "dummy", "broken"]
        collector_ports = {"direct": free_port(), **{n: free_port() for n in names}}
        collector = start_squid(group, "collector", collector_ports["direct"],
                                extra_ports={n: collector_ports[n] for n in names})
        proxies = {n: start_squid(group, n, free_port(), parent_port=collector_ports[n]).port
                   for n in ("squid-a", "squid-b")}
        dummy_port = free_port()
        group.start("dummy", [str(MULTIPLIER), "--dummy", "--parent", f"127.0.0.1:{collector_ports['dummy']}",
                              "--listen", f"127.0.0.1:{dummy_port}"], port=dummy_port)
        proxies["dummy"] = dummy_port
        broken_port = free_port()
        group.start("broken", [sys.executable, str(FAULT_PROXY), "--port", str(broken_port), "--parent",
                               f"127.0.0.1:{collector_ports['broken']}", "--mode", "flip_byte", "--every", "5"],
                    port=broken_port)
        proxies["broken"] = broken_port
        port = free_port()
        (workdir / "lab.json").write_text(json.dumps({
            "collector": {"kind": "squid", "ports": collector_ports, "access_log": "collector/access.log"},
            "proxies": {n: {"port": p} for n, p in proxies.items()}, "multiplier": {"port": port},
            "origin": {"port": origin_port}}, indent=2))
        multiplier = group.start("multiplier", [
            str(MULTIPLIER), "--listen", f"127.0.0.1:{port}", "--collector", f"127.0.0.1:{collector.port}",
            *[a for name, p in proxies.items() for a in ("--proxy", f"{name}=127.0.0.1:{p}")],
            "--timeout", "10", "--log", str(workdir / "multiplier.jsonl"),
            "--rope-log", str(workdir / "multiplier.rope.log"), "--capture-dir", str(workdir / "captures")],
            port=port)
        print(f"spe demo: origin :{origin_port}, Collector (squid) :{collector.port}, proxies "
              + ", ".join(f"{n} :{p}" for n, p in proxies.items()) + f", Multiplier :{port}")
        started = time.monotonic()
        sent = drive(port, f"http://127.0.0.1:{origin_port}", args.requests, args.clients, args.seed)
        elapsed = time.monotonic() - started
        multiplier.stop()  # SIGTERM: in-flight fan-outs finish, every record is flushed
    records = [json.loads(line) for line in (workdir / "multiplier.jsonl").read_text().splitlines()]
    print(f"spe demo: {sent} replies in {elapsed:.1f} s, {len(records)} records\n")
    report = build_report(workdir)
    written = write_report(report, workdir / "report", {"html", "csv", "json", "text"})
    print(text_table(report.rows))
    print(f"\nLogs: {workdir}/multiplier.jsonl (JSON Lines), multiplier.rope.log (ROPE text), "
          f"captures/ ({len(list((workdir / 'captures').glob('*.txt')))} mismatches), <name>/access.log (Squid)")
    print(f"Report: {written[-1]} (and summary.csv, summary.json, PNG figures beside it)")
    print("Note: the stock Squid Collector does not yet cache uncacheable replies for the proxies (the patched "
          "Collector will), so /u/ objects differ for every proxy.")
    return 0 if records and len(records) == sent else 1


if __name__ == "__main__":
    sys.exit(main())
