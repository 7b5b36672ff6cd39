"""How fast `./spe report` digests a large run: records per minute, end to end.

Writes a synthetic run (N JSON Lines records with 4 proxies each, the Multiplier's format,
a mix of result classes and a truncated last line) into a temporary directory, then times
build_report + write_report (all formats) on it. Targets: at least 1 million
records per minute on this 2-core machine, and 10 M and 50 M records under 4 GB of peak RSS.

With --parquet the run is compacted as a week-long run would be, while it is written: every --chunk records
appended to the log, `./spe logs compact` (the real command, in a child process, timed apart) adds them to the
Parquet files and the compacted bytes of the log are punched out (a sparse file: its size and first bytes stay,
which is what the compaction's state checks, so only the last chunk's lines take disk). The last records are
left uncompacted, the tail the report reads from the log beside the Parquet files. So 50 M records (72 GB of
JSON Lines) fit in a few GB of disk. --engine memory parses the whole log into memory as before DuckDB. The
peak RSS of the process that builds and writes the report is measured (the compactions', processes of their
own, apart), and so is the disk the report takes while it runs (its scratch database).

With --engine spark the same report is computed by Spark SQL (analysis/readers/spark_engine.py; local[*] on this
machine's cores unless --spark-master names a cluster), which reads Parquet files only: give --parquet so both
engines read the same files (without it, the Spark run compacts the log first, inside its time). Spark's driver
runs in a JVM the report's process starts and keeps: its CPU and peak RSS (VmHWM) are added to the process's own.

Run: ./spe bench report_speed [--records N] [--parquet [--chunk N]] [--engine duckdb|memory|spark]
     [--spark-master URL] [--write-docs]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import itertools
import os
import random
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from analysis.readers.spark_engine import stop_session
from analysis.report import ENGINES, FORMATS, build_report, write_report
from bench import command
from bench.lib.doc import add_write_docs, machine, publish
from bench.lib.meters import cpu_seconds, rss_and_peak_kb
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.parquet_log import HEAD_BYTES, read_state

# the section of docs/benchmarks.md this benchmark writes (its heading starts with it)
TITLE = "Report speed"

RESULTS = ["OK"] * 90 + ["BODY_MISMATCH"] * 4 + ["HEADER_MISMATCH"] * 3 + ["NO_RESPONSE"] * 2 + ["PROTOCOL_ERROR"]
TRUNCATED = '{"ts":1795000000.0,"id":'  # the last line of a run killed mid-write
CHUNK = 1_000_000  # records written, then compacted, at a time (--parquet): about 1.4 GB of JSON Lines
TAIL = 10_000  # records left uncompacted (--parquet): read from the log


POOL = 100_000  # distinct records (all but `ts` and `id`): a 50 M run repeats them rather than drawing each anew


def _record_bodies(n: int, rng: random.Random) -> Iterator[str]:
    """What follows `ts` and `id` in n records (the `position`s those of records 1..n: n a multiple of 4)."""
    template_p = ('{{"name":"p{i}","position":{pos},"status":{status},"http_version":"HTTP/1.1","header_bytes":310,'
                  '"bytes":{bytes},"md5":"{md5}","connect_us":0,"ttfb_us":{ttfb},"total_us":{total},'
                  '"result":"{result}","mismatched_headers":{headers},"error":{error},"error_detail":null}}')
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
        yield (f'"client":"127.0.0.1:40000","method":"GET",'
               f'"url":"http://origin.test/c/{rng.randrange(100000)}","version":"HTTP/1.1","validation":false,'
               f'"client_status":200,"note":null,"collector":{{"status":200,"http_version":"HTTP/1.1",'
               f'"header_bytes":300,"bytes":{size},"md5":"d41d8cd98f00b204e9800998ecf8427e","connect_us":0,'
               f'"ttfb_us":{total // 2},"total_us":{total},"error":null,"error_detail":null}},'
               f'"proxies":[{",".join(proxies)}]}}\n')


def record_lines(n: int, seed: int = 1) -> Iterator[str]:
    """The records 1..n, one JSON line each, a millisecond apart; past POOL records the bodies repeat."""
    bodies = list(_record_bodies(min(n, POOL), random.Random(seed)))
    for rid in range(1, n + 1):
        yield f'{{"ts":{1795000000 + rid / 1000:.6f},"id":{rid},' + bodies[(rid - 1) % POOL]


def write_run(path: Path, n: int, seed: int = 1) -> None:
    with path.open("w") as f:
        f.writelines(record_lines(n, seed))
        f.write(TRUNCATED)


def peak_rss_gb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1e6  # KiB on Linux


def compact(workdir: Path) -> float:
    """`./spe logs compact` on the run, in a process of its own: its seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "spe_tools.logs", "compact", str(workdir)], check=True)
    return time.perf_counter() - start


def punch_out(path: Path, start: int, stop: int) -> None:
    """Frees the file's blocks within [start, stop), which then read as zeros; its size stays (Linux fallocate,
    FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)."""
    block = os.statvfs(path).f_bsize
    start, stop = -(-start // block) * block, stop // block * block
    if stop <= start:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    with path.open("r+b") as f:
        if libc.fallocate(f.fileno(), 0x02 | 0x01, start, stop - start) != 0:
            raise OSError(ctypes.get_errno(), f"fallocate: cannot punch a hole in {path}")


def write_compacted_run(workdir: Path, n: int, chunk: int, progress) -> float:
    """The run written and compacted chunk by chunk, each chunk's log bytes freed once compacted (the first
    HEAD_BYTES kept: the compaction's state checks them); the last TAIL records and the truncated line left in the
    log. The compactions' seconds."""
    log, lines = RunDir(workdir).multiplier_log, record_lines(n)
    compacted, seconds = 0, 0.0
    tail = min(TAIL, n // 10)
    while compacted < n - tail:
        count = min(chunk, n - tail - compacted)
        with log.open("a") as f:
            f.writelines(itertools.islice(lines, count))
        seconds += compact(workdir)
        compacted += count
        punch_out(log, HEAD_BYTES, read_state(RunDir(workdir).parquet).offset)
        progress(f"{compacted:,} records compacted ({seconds:.0f} s), {disk_gb(workdir):.1f} GB on disk")
    with log.open("a") as f:
        f.writelines(lines)
        f.write(TRUNCATED)
    return seconds


def disk_gb(path: Path) -> float:
    """The disk the files under path take (allocated blocks: a punched-out log counts what is left)."""
    return sum(_blocks(p) for p in path.rglob("*")) / 1e9


def _blocks(path: Path) -> int:
    """A file's allocated bytes; 0 for a directory, or a file that went while the tree was walked (an engine's
    spill files come and go)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    return info.st_blocks * 512 if stat.S_ISREG(info.st_mode) else 0


class ScratchWatch:
    """The most disk the files under a directory took (the report's scratch database and its spills), sampled
    every second in a thread."""

    def __init__(self, path: Path):
        self.path, self.peak_gb = path, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1):
            self.peak_gb = max(self.peak_gb, disk_gb(self.path))

    def __enter__(self) -> ScratchWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def descendants() -> list[int]:
    """The processes this one started that still run: Spark's JVM (pyspark keeps it until Python exits)."""
    return [child.pid for child in psutil.Process().children(recursive=True)]


def descendants_peak_gb() -> float:
    """Their peak RSS summed (each one's VmHWM: an upper bound of the peak they held together)."""
    return sum(rss_and_peak_kb(pid)[1] for pid in descendants()) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(prog=command(__spec__.name), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--parquet", action="store_true",
                        help="compact the run while it is written, then report from Parquet")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="with --parquet: records compacted at a time")
    parser.add_argument("--engine", choices=ENGINES, default="duckdb")
    parser.add_argument("--spark-master", metavar="URL",
                        help="with --engine spark: the cluster (default: local[*], this machine's cores)")
    add_write_docs(parser)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="spe-report-bench-"))
    scratch = workdir / "scratch"
    scratch.mkdir()
    tempdir, tempfile.tempdir = tempfile.tempdir, str(scratch)  # the report's scratch database, watched there

    def progress(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    try:
        log = RunDir(workdir).multiplier_log
        if args.parquet:
            compact_s = write_compacted_run(workdir, args.records, args.chunk, progress)
        else:
            write_run(log, args.records)
            compact_s = None
        size_mb, run_gb = log.stat().st_size / 1e6, disk_gb(workdir)
        progress(f"run written: {size_mb:,.0f} MB of log, {run_gb:.1f} GB on disk; reporting")
        start, cpu = time.perf_counter(), cpu_s() + cpu_seconds(descendants())
        with ScratchWatch(scratch) as watch:
            rep = build_report(workdir, engine=args.engine, spark_master=args.spark_master)
            built = time.perf_counter()
            write_report(rep, RunDir(workdir).report, FORMATS)
            done = time.perf_counter()
        cpu = cpu_s() + cpu_seconds(descendants()) - cpu
        peak_gb = peak_rss_gb(resource.RUSAGE_SELF) + descendants_peak_gb()
        assert rep.requests == args.records and rep.bad_lines == 1, (rep.requests, rep.bad_lines)
    finally:
        tempfile.tempdir = tempdir
        stop_session()
        shutil.rmtree(workdir, ignore_errors=True)
    seconds = done - start
    rate = args.records / seconds * 60
    options = (f" --records {args.records}" if args.records != 1_000_000 else "") + \
        (" --parquet" if args.parquet else "") + (f" --chunk {args.chunk}" if args.chunk != CHUNK else "") + \
        (f" --engine {args.engine}" if args.engine != "duckdb" else "") + \
        (f" --spark-master {args.spark_master}" if args.spark_master else "")
    source = "Parquet" if args.parquet and args.engine != "memory" else \
        "JSON Lines, compacted first" if args.engine == "spark" else "JSON Lines"
    compacted = (f"{compact_s:.0f} s, peak RSS {peak_rss_gb(resource.RUSAGE_CHILDREN):.2f} GB"
                 if compact_s is not None else "-")
    text = (f"\n## {TITLE} — {datetime.date.today()}\n\nMachine: {machine()}. Command: `./spe bench report_speed"
            f"{options}`.\n\n"
            f"| records (4 proxies each) | log MB | run on disk GB | engine, read from | compaction | analyse s | "
            f"write s | total s | CPU s | records per minute | peak RSS GB | scratch GB |\n"
            f"|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            f"| {args.records:,} | {size_mb:.0f} | {run_gb:.2f} | {args.engine}, {source} | {compacted} | "
            f"{built - start:.1f} | {done - built:.1f} | {seconds:.1f} | {cpu:.0f} | {rate:,.0f} | "
            f"{peak_gb:.2f} | {watch.peak_gb:.2f} |\n\n"
            f"Target: at least 1,000,000 records per minute. The truncated last line was counted and skipped.\n")
    return publish(text, [], title=TITLE, write=args.write_docs)


if __name__ == "__main__":
    sys.exit(main())
