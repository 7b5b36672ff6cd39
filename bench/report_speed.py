"""How fast `./spe report` digests a large run: records per minute, end to end.

Writes a synthetic run (N JSON Lines records with 4 proxies each, the Multiplier's format,
a mix of result classes and a truncated last line) into a temporary directory, then times
build_report + write_report (all formats) on it. Target (issue 6): at least 1 million
records per minute on this 2-core machine.

With --parquet the run is first compacted (`./spe logs compact`, in a child process, timed apart) and the report
reads the Parquet files; --engine memory parses the whole log into memory as before DuckDB. The peak RSS of the
process that builds and writes the report is measured (the compaction's, a process of its own, apart).

Run: ./spe bench report_speed [--records N] [--parquet] [--engine duckdb|memory] [--no-append]
"""

from __future__ import annotations

import argparse
import datetime
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis.report import ENGINES, FORMATS, build_report, write_report
from bench.lib.doc import machine, publish
from spe_tools.rundir.layout import RunDir

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Report speed"

RESULTS = ["OK"] * 90 + ["BODY_MISMATCH"] * 4 + ["HEADER_MISMATCH"] * 3 + ["NO_RESPONSE"] * 2 + ["PROTOCOL_ERROR"]


def write_run(path: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    template_p = ('{{"name":"p{i}","position":{pos},"status":{status},"http_version":"HTTP/1.1","header_bytes":310,'
                  '"bytes":{bytes},"md5":"{md5}","connect_us":0,"ttfb_us":{ttfb},"total_us":{total},'
                  '"result":"{result}","mismatched_headers":{headers},"error":{error},"error_detail":null}}')
    with path.open("w") as f:
        for rid in range(1, n + 1):
            size = int(rng.expovariate(1 / 13000))
            proxies = []
            for i in range(4):
                result = rng.choice(RESULTS)
                total = int(rng.lognormvariate(7, 1))
                proxies.append(template_p.format(
                    i=i, pos=(rid + i) % 4, status="null" if result == "NO_RESPONSE" else 200, bytes=size,
                    md5="d41d8cd98f00b204e9800998ecf8427e", ttfb=total // 2, total=total, result=result,
                    headers='["etag"]' if result == "HEADER_MISMATCH" else "[]",
                    error='"timeout"' if result == "NO_RESPONSE" else "null"))
            total = int(rng.lognormvariate(7.5, 1))
            f.write(f'{{"ts":{1795000000 + rid / 1000:.6f},"id":{rid},"client":"127.0.0.1:40000","method":"GET",'
                    f'"url":"http://origin.test/c/{rng.randrange(100000)}","version":"HTTP/1.1","validation":false,'
                    f'"client_status":200,"note":null,"collector":{{"status":200,"http_version":"HTTP/1.1",'
                    f'"header_bytes":300,"bytes":{size},"md5":"d41d8cd98f00b204e9800998ecf8427e","connect_us":0,'
                    f'"ttfb_us":{total // 2},"total_us":{total},"error":null,"error_detail":null}},'
                    f'"proxies":[{",".join(proxies)}]}}\n')
        f.write('{"ts":1795000000.0,"id":')  # a run killed mid-write


def peak_rss_gb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1e6  # KiB on Linux


def compact(workdir: Path) -> float:
    """`./spe logs compact` on the run, in a process of its own: its seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spe_tools.logs", "compact", str(workdir)], check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--parquet", action="store_true", help="compact the run first, then report from Parquet")
    parser.add_argument("--engine", choices=ENGINES, default="duckdb")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="spe-report-bench-"))
    try:
        log = RunDir(workdir).multiplier_log
        write_run(log, args.records)
        size_mb = log.stat().st_size / 1e6
        compact_s = compact(workdir) if args.parquet else None
        start = time.perf_counter()
        rep = build_report(workdir, engine=args.engine)
        built = time.perf_counter()
        write_report(rep, RunDir(workdir).report, FORMATS)
        done = time.perf_counter()
        assert rep.requests == args.records and rep.bad_lines == 1, (rep.requests, rep.bad_lines)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    seconds = done - start
    rate = args.records / seconds * 60
    options = (f" --records {args.records}" if args.records != 1_000_000 else "") + \
        (" --parquet" if args.parquet else "") + (f" --engine {args.engine}" if args.engine != "duckdb" else "")
    source = "Parquet" if args.parquet and args.engine == "duckdb" else "JSON Lines"
    compacted = (f"{compact_s:.1f} s, peak RSS {peak_rss_gb(resource.RUSAGE_CHILDREN):.2f} GB"
                 if compact_s is not None else "-")
    text = (f"\n## {TITLE} — {datetime.date.today()}\n\nMachine: {machine()}. Command: `./spe bench report_speed"
            f"{options}`.\n\n"
            f"| records (4 proxies each) | log MB | engine, read from | compaction | analyse s | write s | total s | "
            f"records per minute | peak RSS GB |\n|---|---|---|---|---|---|---|---|---|\n"
            f"| {args.records:,} | {size_mb:.0f} | {args.engine}, {source} | {compacted} | {built - start:.1f} | "
            f"{done - built:.1f} | {seconds:.1f} | {rate:,.0f} | {peak_rss_gb(resource.RUSAGE_SELF):.2f} |\n\n"
            f"Target: at least 1,000,000 records per minute. The truncated last line was counted and skipped.\n")
    return publish(text, [], title=TITLE, write=not args.no_append)


if __name__ == "__main__":
    sys.exit(main())
