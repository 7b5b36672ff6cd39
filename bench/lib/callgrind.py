"""Instructions counted by valgrind's callgrind: a server started under it, warmed, its instructions over a
load run dumped, and callgrind_annotate's tables read (repeatable on a busy machine, unlike time)."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bench.lib.harness import BenchError
from bench.lib.wrk import run_wrk
from spe_tools.process import ProcessGroup

ANNOTATE_LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$")


def callgrind_costs(annotate_text: str) -> tuple[int, list[tuple[int, str]]]:
    """(program total, [(self instructions, 'file:function [object]')]) from `callgrind_annotate`.
    A dump taken while the program runs also lists the functions still on the stack (main,
    io_context::run ...) with about the whole total as if it were their own: those are left out."""
    total = 0
    rows = []
    for line in annotate_text.splitlines():
        m = ANNOTATE_LINE.match(line)
        if not m:
            continue
        cost, name = int(m.group(1).replace(",", "")), m.group(2).strip()
        if name == "PROGRAM TOTALS":
            total = cost
        elif cost < 0.9 * total:
            rows.append((cost, name))
    return total, rows


CALLGRIND_NAME = re.compile(r"^(?P<file>[^:]*):(?P<function>.*?)(?: \[(?P<object>[^\]]*)\])?$")
RETURN_TYPE = re.compile(r"^(?:(?:void|auto|bool|int|unsigned long|std::size_t|unsigned int) )+")


def split_name(where: str) -> dict[str, str]:
    """'file:function [object]' -> its parts; a leading return type is dropped from the function."""
    m = CALLGRIND_NAME.match(where)
    parts = m.groupdict(default="") if m else {"file": "", "function": where, "object": ""}
    parts["function"] = RETURN_TYPE.sub("", parts["function"])
    return parts


def callgrind(group: ProcessGroup, name: str, start: Callable[[list[str]], int], url: str, script: Path | None,
              seconds: float, workdir: Path, served: Callable[[], int] | None = None,
              warm_script: Path | None = None) -> dict:
    """Starts a server under callgrind (start(wrapper) -> pid), warms it (with `warm_script` if given, else
    `script`), counts the instructions of `seconds` of load; requests are counted by served() (e.g. log
    records) or else by wrk."""
    dump = workdir / f"callgrind-{name}"
    # One dump per thread: the stack rule of callgrind_costs holds within a thread (a Multiplier with
    # fan-out threads has a call stack per thread, each with its thread's share as its own cost).
    wrapper = ["valgrind", "--tool=callgrind", "--smc-check=all-non-file", "--separate-threads=yes",
               f"--callgrind-out-file={dump}.%p"]
    pid = start(wrapper)
    run_wrk(url, warm_script or script, 3, 10, workdir)
    subprocess.run(["callgrind_control", "-z", str(pid)], capture_output=True, check=True, timeout=60)
    before = served() if served else 0
    result = run_wrk(url, script, seconds, 10, workdir)
    time.sleep(1.0)  # the last replies' fan-out
    subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True, check=True, timeout=60)
    requests = served() - before if served else result["requests"]
    child = next(c for c in group.children if c.pid == pid)
    child.popen.send_signal(signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.popen.wait(timeout=30)
    # the dump asked for above, one file per thread (.{pid} alone: at exit)
    if not thread_dumps(workdir, f"callgrind-{name}.{pid}"):
        raise BenchError(f"{name}: callgrind wrote no dump")
    total, rows = annotated(workdir, f"callgrind-{name}.{pid}", [])
    return {"requests": max(requests, 1), "total": total, "rows": rows}


def thread_dumps(workdir: Path, stem: str) -> list[Path]:
    """The first dump's files, one per thread (stem.1-01, stem.1-02 ...)."""
    return sorted(workdir.glob(f"{stem}.1-*"))


def annotated(workdir: Path, stem: str, options: list[str]) -> tuple[int, list[tuple[int, str]]]:
    """callgrind_costs over every thread's dump: the totals added, the rows of all threads."""
    total, rows = 0, []
    for dump in thread_dumps(workdir, stem):
        text = subprocess.run(["callgrind_annotate", "--auto=no", *options, "--threshold=100", str(dump)],
                              capture_output=True, text=True, check=True, timeout=300).stdout
        thread_total, thread_rows = callgrind_costs(text)
        total += thread_total
        rows += thread_rows
    return total, rows


def inclusive_rows(workdir: Path, name: str) -> list[tuple[int, str]]:
    """callgrind's inclusive table (each function with all it calls) of the dump `callgrind` took, every thread's."""
    stem = next(workdir.glob(f"callgrind-{name}.*.1-*")).name.rsplit(".", 1)[0]
    return annotated(workdir, stem, ["--inclusive=yes"])[1]
