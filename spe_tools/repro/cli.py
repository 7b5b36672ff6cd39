"""./spe repro: write a self-contained case of one proxy's cache-rule violation and replay it.

  ./spe repro RUN --proxy NAME --request ID [--out DIR] [--no-replay]
      write the case of proxy NAME's violation on request ID of the run in RUN (default DIR:
      RUN/repro/<ID>-<NAME>/: case.json, case.har and README.txt), then replay it
  ./spe repro DIR
      replay a written case: a fresh proxy of the recorded kind behind the patched Collector and a
      stand-in origin that answers as recorded, the requests with their recorded timing

Prints "reproduced: RULE (SECTION) — reason" or "not reproduced: ...". Exit status: 0 reproduced
(or the case written, with --no-replay), 1 not reproduced, 2 error. Reference: docs/repro.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from spe_tools.lab.errors import LabError
from spe_tools.process import ProcessError
from spe_tools.repro.case import CaseError, extract_case
from spe_tools.repro.case_dir import write_case
from spe_tools.repro.replay_case import ReplayError, replay
from spe_tools.rundir import access
from spe_tools.rundir.layout import CASE_JSON

ERROR = 2


class Stopped(Exception):  # noqa: N818 (a request to stop, not an error)
    """SIGTERM or SIGINT during a replay: leave, stopping every process on the way out."""


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signal.Signals(signum).name)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe repro", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path, metavar="RUN|DIR", help="a run directory (with --proxy and --request), "
                   "or a case directory to replay")
    p.add_argument("--proxy", metavar="NAME", help="the proxy under test whose violation to reproduce")
    p.add_argument("--request", type=int, metavar="ID", help="the record id (the log's `id`) of the violation")
    p.add_argument("--out", type=Path, metavar="DIR", help="where to write the case (default: RUN/repro/<ID>-<NAME>/)")
    p.add_argument("--no-replay", action="store_true", help="write the case only")
    return p


def _write(args: argparse.Namespace) -> Path:
    case = extract_case(args.path, args.proxy, args.request)
    out = write_case(case, args.out)
    rules = ", ".join(f"{f.rule} ({f.section})" for f in case.expected)
    print(f"spe repro: case of {case.proxy.name}'s {rules} on request {case.request_id}, {len(case.steps)} "
          f"request(s): {out}", flush=True)
    return out


def _replay(case_dir: Path) -> int:
    old = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        verdict = replay(case_dir, say=lambda text: print(text, flush=True))
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    for line in verdict.lines():
        print(line, flush=True)
    return 0 if verdict.ok else 1


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    writing = args.proxy is not None or args.request is not None
    if writing and (args.proxy is None or args.request is None):
        p.error("a case is written from a run with both --proxy NAME and --request ID")
    if not writing and not (args.path / CASE_JSON).exists():
        p.error(f"{args.path} has no case.json: give a case directory, or a run with --proxy and --request")
    if not writing and (args.out or args.no_replay):
        p.error("--out and --no-replay go with --proxy and --request (writing a case)")
    try:
        with access.umask(None):  # the case (headers, URLs) and the replay's run directory are private
            case_dir = _write(args) if writing else args.path
            return 0 if args.no_replay else _replay(case_dir)
    except (CaseError, ReplayError, LabError, ProcessError, OSError) as e:
        print(f"spe repro: error: {e}", file=sys.stderr)
        return ERROR
    except Stopped as e:
        print(f"spe repro: {e}: stopped", file=sys.stderr)
        return ERROR


if __name__ == "__main__":
    sys.exit(main())
