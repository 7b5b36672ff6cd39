"""./spe export: a run as a HAR 1.2 file, for HAR viewers (a browser's DevTools), for a bug report, or to serve
and replay again (./spe origin --har, ./spe replay).

  ./spe export RUN --har OUT.har
      every request of the run in time order, answered by the Collector's reply (what the client got)
  ./spe export RUN --har OUT.har --proxy NAME
      the same requests answered by what proxy NAME sent (its leg of each record)
  ./spe export RUN --har OUT.har --request ID [--proxy NAME]
      request ID only, after the requests for its URL before it (the sequence a repro case has): one finding
      as a HAR to attach to a bug report

RUN is a run directory (or its multiplier.jsonl). Each entry holds what the run kept and says in its comments what
it did not: the record keeps request and reply fields caches decide by, body sizes and MD5s, not bodies; where the
Multiplier captured a mismatch (RUN/captures/), the whole reply header and the first body bytes. Cookies and
credentials stay as the run keeps them: "(present)" or an hmac: digest; with --keep-secrets, the values a capture
holds as received (a run with --capture-secrets) are written as received (the file is private: mode 0600). Exit
status: 0 written, 2 error (no run directory, no such proxy or request, a file that cannot be written). Reference:
docs/report.md, "Export as a HAR".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spe_tools.export.run_har import ExportError, export_run, write_export
from spe_tools.rundir import access

ERROR = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, metavar="RUN", help="a run directory, or its multiplier.jsonl")
    p.add_argument("--har", type=Path, required=True, metavar="OUT.har", help="the HAR file to write")
    p.add_argument("--proxy", metavar="NAME", help="what this proxy under test answered, instead of the Collector")
    p.add_argument("--request", type=int, metavar="ID",
                   help="only this record (the log's `id`) and the requests for its URL before it")
    p.add_argument("--keep-secrets", action="store_true",
                   help="write the cookies and credentials a capture holds as received (--capture-secrets) as they "
                        "are, not as (present); the records' digests stay digests")
    return p


def summary(export_count: int, captured: int, left_out: dict[str, int], out: Path) -> str:
    text = f"spe export: {export_count:,} entries to {out}"
    if captured:
        text += f" ({captured:,} with the reply header and first body bytes of a mismatch capture)"
    for why, count in sorted(left_out.items()):
        text += f"; {count:,} record(s) left out: {why}"
    return text


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        export = export_run(args.run, args.proxy, args.request, args.keep_secrets)
        with access.umask(None):  # what the run's records hold (URLs, fields) stays as private as the run
            write_export(export, args.har)
    except ExportError as e:
        print(f"spe export: error: {e}", file=sys.stderr)
        return ERROR
    except OSError as e:
        print(f"spe export: error: cannot write {args.har}: {e.strerror or e}", file=sys.stderr)
        return ERROR
    print(summary(len(export.entries), export.captured, export.left_out, args.har))
    return 0


if __name__ == "__main__":
    sys.exit(main())
