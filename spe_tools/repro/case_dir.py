"""A repro case's directory, as `./spe repro` writes it: case.json (what the replay reads, case.py), case.har (the
same requests and origin replies as a HAR 1.2 file, case_har.py) and README.txt (what the case shows, for a bug
report). docs/repro.md."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict
from pathlib import Path

from spe_tools.repro.case import FORMAT, Case
from spe_tools.repro.case_har import CASE_HAR, write_case_har
from spe_tools.rundir import access
from spe_tools.rundir.layout import CASE_JSON, RunDir


def default_dir(case: Case) -> Path:
    return RunDir(case.source).repro(case.request_id, case.proxy.name)


def write_case(case: Case, out: Path | None = None) -> Path:
    """DIR/case.json, DIR/case.har and DIR/README.txt (DIR: `out`, default RUN/repro/<ID>-<NAME>/); returns DIR."""
    out = Path(out) if out is not None else default_dir(case)
    access.make_passable_dirs(out)  # a replay's proxy drops to its own user, who must pass through to replay/
    access.open_for_services(out, None)  # 0711: passable, not listable; case.json is private (./spe repro's umask)
    (out / CASE_JSON).write_text(json.dumps({"format": FORMAT, **asdict(case)}, indent=2) + "\n")
    write_case_har(case, out / CASE_HAR)
    (out / "README.txt").write_text(readme(case, out))
    return out


def cite(section: str) -> str:
    """'4' -> 'RFC 9111 section 4'; another RFC's section names it first: '9110 9.3.2'."""
    rfc, _, rest = section.partition(" ")
    return f"RFC {rfc} section {rest}" if rest and rfc.isdigit() else f"RFC 9111 section {section}"


def readme(case: Case, where: Path) -> str:
    shown = "\n".join(f"  - {f.rule} ({cite(f.section)}): {f.reason}" for f in case.expected)
    steps = "\n".join(f"  {s.offset_s:8.3f} s  {s.method} {case.path}" + (
        f"  [{', '.join(f'{k}: {v}' for k, v in s.headers.items())}]" if s.headers else "")
                      + f"  -> origin {s.reply.status}" + ("" if s.fresh else " (earlier reply)") for s in case.steps)
    options = ", ".join(f"{k} = {v!r}" for k, v in case.proxy.options.items()) or "defaults"
    return textwrap.dedent("""\
        SPE repro case: proxy {name} (kind {kind}, options: {options}), request {rid}
        URL: {url}

        What it shows: the proxy's reply to the last request below broke
        {shown}

        The requests, with their time from the first, and the origin's reply in force:
        {steps}

        Replay it (a fresh {kind} behind SPE's patched Collector and a stand-in origin that answers as
        recorded; exit 0 when the violation shows again, 1 when not, 2 on error):
          ./spe repro {here}

        case.json holds everything the replay uses; case.har holds the same requests and origin replies as a
        HAR file (./spe origin --har serves it); docs/repro.md says what a case can and cannot show.
        Credentials in the original requests are replaced by fixed stand-ins.
        """).format(name=case.proxy.name, kind=case.proxy.kind, options=options, rid=case.request_id, url=case.url,
                    shown=shown.lstrip(), steps=steps.strip("\n"), here=where)
