"""python -m analysis.live RUNDIR --listen 127.0.0.1:PORT [--every 5s]: the live scorecard of a running lab.

The same page as report.html (analysis/report.py html_report, one template, the same figures), rebuilt from the
run directory's current log in a thread of its own, at most every --every seconds (and never busier than half the
time: a rebuild that took 4 s waits 4 s), and only when the log has grown. Each request gets the latest good page
with, under its title, what only a live run has (templates/live.html.j2): every process's state from the lab's
status.json (spe_tools/rundir/status_json.py), the elapsed time, and the last rebuild's error if it failed. Each
rule's example of a violation is its latest request (the report shows the first): what the proxies do now.

The lab starts this ([live] enabled, spe_tools/lab/start/live.py) and stops it first when the run ends: told to
stop (SIGTERM, SIGINT), it serves for GRACE_S more a page that says when the run ended, on which every open page
stops fetching itself, then exits. A page that finds the server gone (killed, or a tab asleep through the grace)
says so and stops too; a status.json the lab stopped rewriting shows as the lab's last word, not as "up".
Served by Starlette on uvicorn, under the secret path $SPE_LIVE_TOKEN when set; the run's captures/ and repro/ are
served too, so the page's links work.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from analysis.report import HTML, build_report, html_report
from analysis.section import LATEST
from spe_tools.duration import parse_duration
from spe_tools.rundir import layout
from spe_tools.rundir.lab_json import LIVE_TOKEN_ENV
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.status_json import LabStatus

SLOT = "<!--spe-live-->"  # where each request's banner goes in the page built by the rebuild thread
REFRESH_MS = 2000  # how often the page fetches itself again
GRACE_S = 1.5 * REFRESH_MS / 1000  # told to stop, the "run ended" page is served this long: every open page fetches it
STALE_S = 5  # the lab rewrites status.json every second: older than this, it is no longer running (or is stuck)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return (f"{seconds // 3600} h " if seconds >= 3600 else "") + f"{seconds // 60 % 60} min {seconds % 60} s"


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


class LivePage:
    """The latest good page of a run and its live banner; `rebuild` is called by one thread, `page` by any."""

    def __init__(self, run: Path, every_s: float):
        self.run, self.every_s = Path(run), every_s
        self.html: str | None = None  # the latest good report page, SLOT where the banner goes
        self.built: float | None = None
        self.error: str | None = None  # why the last rebuild failed
        self.ended: float | None = None  # when the lab told the page to stop: the run's end
        self._seen: tuple[int, int] | None = None  # the log's size and mtime at the last rebuild

    def _log_state(self) -> tuple[int, int] | None:
        try:
            st = RunDir(self.run).multiplier_log.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def rebuild(self) -> None:
        """The report from the log as it is now, unless it has not changed; a failure keeps the last good page."""
        state = self._log_state()
        if state is None or state == self._seen:
            return
        try:
            html = html_report(build_report(self.run, examples=LATEST), self.run, live=SLOT)
        except Exception as e:  # noqa: BLE001 (any failure: shown on the page, the last good page kept)
            self.error = f"{type(e).__name__}: {e}"
            traceback.print_exc(file=sys.stderr)
            return
        self.html, self.built, self.error, self._seen = html, time.time(), None, state

    def end(self) -> None:
        """The run has ended: the page says so (and when) from now on, and is no longer rebuilt."""
        if self.ended is None:
            self.ended = time.time()

    def rebuild_forever(self) -> None:
        while self.ended is None:
            start = time.monotonic()
            self.rebuild()
            took = time.monotonic() - start
            time.sleep(max(self.every_s - took, took))

    def _module(self):
        status = LabStatus.read(self.run)
        built = time.strftime("%H:%M:%S", time.localtime(self.built)) if self.built else "not yet"
        silent = status is not None and self.ended is None and time.time() - status.updated > STALE_S
        return HTML.get_template("live.html.j2").make_module({
            "run": str(self.run), "status": status, "elapsed": _duration(status.elapsed_s) if status else "?",
            "built": built, "every": f"{self.every_s:g} s", "error": self.error, "refresh_ms": REFRESH_MS,
            "ended": _when(self.ended) if self.ended else None, "report": str(RunDir(self.run).report),
            "silent_since": _when(status.updated) if silent else None})

    def page(self) -> str:
        module = self._module()
        if self.html is None:
            return str(module.waiting())
        return self.html.replace(SLOT, str(module.banner()), 1)


class RunFiles(StaticFiles):
    """A folder of the run, which may not exist yet (no capture, no repro case so far): 404 until it does."""

    async def check_config(self) -> None:
        if not Path(self.directory).is_dir():
            raise HTTPException(404)


def app(page: LivePage, token: str = "") -> Starlette:
    """The page at /TOKEN/ (at / without a token), the run's captures and repro cases beside it; nothing else."""

    def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page.page(), headers={"Cache-Control": "no-store"})

    files = RunDir(page.run)
    routes = [Route("/", index), *(Mount(f"/{name}", RunFiles(directory=files / name, check_dir=False))
                                   for name in (layout.CAPTURES, layout.REPRO))]
    return Starlette(routes=[Mount(f"/{token}", routes=routes)] if token else routes)


class LiveServer(uvicorn.Server):
    """uvicorn's server, except that the first signal to stop (the lab stopping: the run has ended) ends the page,
    which is served GRACE_S more so that every open page learns it; a second stops at once."""

    def __init__(self, config: uvicorn.Config, page: LivePage):
        super().__init__(config)
        self.page = page

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.page.ended is not None:
            super().handle_exit(sig, frame)
            return
        self.page.end()
        threading.Timer(GRACE_S, super().handle_exit, (sig, frame)).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.live", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the run directory of a running lab")
    parser.add_argument("--listen", required=True, metavar="HOST:PORT", help="where to serve the page")
    parser.add_argument("--every", type=parse_duration, default=5.0,
                        help="rebuild the page at most this often (default 5s)")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    page = LivePage(args.run, args.every)
    threading.Thread(target=page.rebuild_forever, name="rebuild", daemon=True).start()
    LiveServer(uvicorn.Config(app(page, os.environ.get(LIVE_TOKEN_ENV, "")), host=host, port=int(port),
                              log_level="warning"), page).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
