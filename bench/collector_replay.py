"""Fidelity of the Collector's timing replay: replayed hit time versus the original miss time.

For objects with known origin think times and body pacing (tests/fixtures/collector_origin.py),
each object is fetched once through the patched Collector's `direct` port (the miss) and then
through the ports of two proxies under test (the replayed hits), each on a new client connection,
as a proxy under test fetching a miss would. Reported per object: the client-measured miss time,
the median hit time, the difference, and the target (within 5 % or 2 ms, whichever is larger).
Debian's stock Squid, run beside it with the same configuration, shows what a hit costs
without replay.

Run: ./spe bench collector_replay [--repeat N] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import ROOT, command
from bench.lib.clients import timed_get
from bench.lib.doc import add_write_docs, machine, write_section
from spe_tools.collector import BINARIES, start_collector
from spe_tools.process import ProcessGroup, free_port
from spe_tools.summary_stats import median

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Collector timing replay: replayed hit vs original miss"

# (label, size bytes, think ms, body writes, gap ms)
OBJECTS = [
    ("1 KB, 50 ms think", 1024, 50, 1, 0),
    ("13 KB, 300 ms think", 13 * 1024, 300, 1, 0),
    ("13 KB, 300 ms think, 4 writes 50 ms apart", 13 * 1024, 300, 4, 50),
    ("200 KB, 100 ms think, 10 writes 30 ms apart", 200 * 1024, 100, 10, 30),
    ("1 MB, 20 ms think, 20 writes 10 ms apart", 1024 * 1024, 20, 20, 10),
    ("1 MB, no think, one write", 1024 * 1024, 0, 1, 0),
]
HIT_PORTS = ("p1", "p2")
ORIGIN = ROOT / "tests/fixtures/collector_origin.py"


def measure(repeat: int) -> list[dict]:
    workdir = Path(tempfile.mkdtemp(prefix="spe-bench-replay-"))
    workdir.chmod(0o755)
    rows = []
    try:
        with ProcessGroup(workdir) as group:
            origin = free_port()
            group.start("origin", [sys.executable, str(ORIGIN), str(origin)], port=origin)
            ports = {kind: {name: free_port() for name in ("direct", *HIT_PORTS)} for kind in ("spe", "squid")}
            for kind, p in ports.items():
                start_collector(group, f"collector-{kind}", kind, p["direct"], {n: p[n] for n in HIT_PORTS})
            for round_ in range(repeat):
                for label, size, think, writes, gap in OBJECTS:
                    query = f"think={think}&size={size}&chunks={writes}&gap={gap}"
                    path = f"/obj/bench-{round_}-{size}-{think}-{writes}?{query}"
                    target = f"http://127.0.0.1:{origin}{path}"
                    row = {"label": label}
                    for kind, p in ports.items():
                        row[f"{kind}_miss"] = timed_get(p["direct"], target)
                        row[f"{kind}_hits"] = [timed_get(p[n], target) for n in HIT_PORTS]
                    rows.append(row)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    out = []
    for label in dict.fromkeys(r["label"] for r in rows):
        mine = [r for r in rows if r["label"] == label]
        miss = median(r["spe_miss"] for r in mine)
        hits = [h for r in mine for h in r["spe_hits"]]
        diffs = [h - r["spe_miss"] for r in mine for h in r["spe_hits"]]  # each hit vs its own miss
        worst = max(diffs, key=abs)
        allowed = max(0.05 * miss, 0.002)
        out.append({"label": label, "n": len(hits), "miss_ms": miss * 1e3, "hit_ms": median(hits) * 1e3,
                    "median_diff_ms": median(diffs) * 1e3, "worst_diff_ms": worst * 1e3,
                    "allowed_ms": allowed * 1e3, "met": all(abs(d) <= max(0.05 * r["spe_miss"], 0.002)
                                                            for r in mine for d in
                                                            (h - r["spe_miss"] for h in r["spe_hits"])),
                    "stock_miss_ms": median(r["squid_miss"] for r in mine) * 1e3,
                    "stock_hit_ms": median(h for r in mine for h in r["squid_hits"]) * 1e3})
    return out


def table(summary: list[dict]) -> str:
    lines = ["| object | hits | miss ms | replayed hit ms | hit − miss, median ms | worst ms | allowed ms | "
             "target | stock Squid miss / hit ms |", "|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['label']} | {s['n']} | {s['miss_ms']:.1f} | {s['hit_ms']:.1f} | "
                     f"{s['median_diff_ms']:+.1f} | {s['worst_diff_ms']:+.1f} | ±{s['allowed_ms']:.1f} | "
                     f"{'met' if s['met'] else 'NOT met'} | {s['stock_miss_ms']:.1f} / {s['stock_hit_ms']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="fresh objects per row (default 5)")
    add_write_docs(parser)
    args = parser.parse_args()
    if not BINARIES["spe"].exists():
        print(f"the patched Collector is not built ({BINARIES['spe']}): run ./spe setup", file=sys.stderr)
        return 2
    started = time.monotonic()
    summary = summarise(measure(args.repeat))
    text = table(summary)
    print(text)
    print(f"({time.monotonic() - started:.0f} s)")
    if args.write_docs:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        intro = (f"\n## {TITLE} — {stamp}\n\n"
                 f"Machine: {machine()}. Command: `./spe bench collector_replay --repeat {args.repeat}`. "
                 "Every request on a new client connection; the origin (tests/fixtures/collector_origin.py) "
                 "waits the think time, then writes the body in the given writes and gaps. Each hit is "
                 "compared with the miss of the same object; target: within 5 % or 2 ms, whichever is "
                 "larger. The last column is Debian's stock Squid with the same configuration, run beside "
                 "it: its hits cost only what serving from memory costs.\n\n")
        write_section(TITLE, intro + text)
    return 0 if all(s["met"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
