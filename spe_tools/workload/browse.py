"""The real-browser driver: Debian's headless Chromium through a proxy, pages loaded with their
embedded objects like a user with think times, page load times reported.

Run: ./spe browse --via HOST:PORT URL... [--think-s S] [--json FILE]
     ./spe browse --via HOST:PORT --origin HOST:PORT --pages N [--seed N]
         [--think-s S] [--session-pages N] [--profile DIR] [--chromium PATH] [--timeout S] [--no-cache]
         [--all-through-proxy] [--json FILE] [--har FILE]
With --pages N it browses the synthetic origin in sessions (the model of spe_tools/workload/client/sessions.py):
a session starts at a random /page/<k>.html and, after each page and a think time, follows a random link
of the page to another page, or with probability 1/--session-pages ends; N pages in all.
Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: no port that another
local user could connect to); its own background traffic is kept down
by flags, and what remains (a few Google hosts, see docs/workloads.md) fails inside Chromium without a
DNS query; with --all-through-proxy it goes to the proxy instead, which must then refuse destinations
outside the lab.
With --har FILE everything the tab loaded is written as a HAR 1.2 file (har_recorder.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from spe_tools import ca as spe_ca
from spe_tools.duration import parse_duration
from spe_tools.hostport import add_via, parse_hostport
from spe_tools.process import ProcessGroup, tail
from spe_tools.workload.client.sessions import SessionModel
from spe_tools.workload.client.stats import distribution, fmt_ms
from spe_tools.workload.har.recorder import HarRecorder

CHROMIUM = "/usr/bin/chromium"
# Flags that keep Chromium's own traffic down (proxy-lab-notes section 5); what still goes out is
# listed in docs/workloads.md.
QUIET_FLAGS = [
    "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--no-pings", "--disable-domain-reliability", "--disable-breakpad",
    "--disable-client-side-phishing-detection", "--metrics-recording-only", "--mute-audio", "--password-store=basic",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
]


# Hosts Chromium contacts on its own (seen through a proxy; docs/workloads.md), plus their relatives.
GOOGLE_HOSTS = ["*.google.com", "*.googleapis.com", "*.gstatic.com", "*.gvt1.com", "*.gvt2.com",
                "*.googleusercontent.com", "*.doubleclick.net", "*.google-analytics.com"]


def chromium_argv(binary: str, proxy: str, profile: Path, all_through_proxy: bool = False,
                  trust_spki: str | None = None) -> list[str]:
    """The command line: the proxy for loopback URLs (<-loopback> undoes Chromium's implicit bypass),
    a private profile, DevTools on the pipe of file descriptors 3 and 4 (`Browser` sets it up): a DevTools
    port, even on 127.0.0.1, would let any local user drive the browser.

    By default Chromium's own requests to Google hosts never reach the proxy: they bypass it and
    the resolver rules fail every name but loopback without asking DNS. With all_through_proxy
    they go to the proxy too, which must refuse destinations outside the lab.
    """
    bypass = ["<-loopback>"] if all_through_proxy else ["<-loopback>", *GOOGLE_HOSTS]
    argv = [binary, *QUIET_FLAGS, f"--proxy-server=http://{proxy}", f"--proxy-bypass-list={';'.join(bypass)}",
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
            f"--user-data-dir={profile}", "--remote-debugging-pipe"]
    if trust_spki:  # SPE's CA, for an intercepting Multiplier: trusted by its key, this profile only
        argv.append(f"--ignore-certificate-errors-spki-list={trust_spki}")
    if os.geteuid() == 0:  # Chromium refuses to run as root with its sandbox
        argv.append("--no-sandbox")
    return argv + ["about:blank"]


# Chromium's ends of the DevTools pipe (--remote-debugging-pipe): it reads commands on 3, writes on 4.
PIPE_IN_FD, PIPE_OUT_FD = 3, 4
MAX_MESSAGE = 64 << 20  # a DevTools message (a page's evaluated value, a big event) at most


class DevToolsPipe:
    """Chromium's DevTools pipe: JSON messages, each ended by a NUL byte, sent on one pipe and read from
    the other. Only the process that holds the pipes can talk to the browser."""

    def __init__(self, reader: asyncio.StreamReader, incoming: asyncio.ReadTransport,
                 transport: asyncio.WriteTransport):
        self.reader, self.incoming, self.transport = reader, incoming, transport

    @classmethod
    async def open(cls, to_browser: int, from_browser: int) -> DevToolsPipe:
        """Our ends of the two pipes (file descriptors), taken over by the running event loop."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        incoming, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                   os.fdopen(from_browser, "rb", 0))
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(to_browser, "wb", 0))
        return cls(reader, incoming, transport)

    async def send(self, text: str) -> None:
        if self.transport.is_closing():
            raise RuntimeError("the DevTools pipe to Chromium is closed")
        self.transport.write(text.encode() + b"\0")

    async def __aiter__(self):
        """Chromium's messages until it closes its end (it exited)."""
        while True:
            try:
                message = await self.reader.readuntil(b"\0")
            except asyncio.IncompleteReadError:
                return
            yield message[:-1]

    async def close(self) -> None:
        self.transport.close()
        self.incoming.close()


class DevTools:
    """A minimal Chrome DevTools Protocol client: commands by id, events to listeners."""

    def __init__(self, ws):
        self.ws = ws  # a DevToolsPipe (anything with send, close and messages by async iteration)
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.listeners: list = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            await self._dispatch()
        finally:  # Chromium is gone: no reply will come
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(RuntimeError("Chromium closed its DevTools connection"))

    async def _dispatch(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg:
                future = self.pending.pop(msg["id"], None)
                if future and not future.done():
                    if "error" in msg:
                        future.set_exception(RuntimeError(f"DevTools error: {msg['error']}"))
                    else:
                        future.set_result(msg.get("result", {}))
            else:
                for listener in list(self.listeners):
                    listener(msg)

    async def call(self, method: str, params: dict | None = None, session: str | None = None,
                   timeout: float = 30.0) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.ws.send(json.dumps(msg))
        return await asyncio.wait_for(future, timeout)

    async def close(self) -> None:
        self.reader.cancel()
        await self.ws.close()


@dataclass
class PageResult:
    url: str
    load_ms: float = 0.0  # navigation start to the end of the load event (Navigation Timing)
    wall_ms: float = 0.0  # navigate command to the load event, as the driver saw it
    requests: int = 0
    failed: int = 0
    objects: list[str] = field(default_factory=list)
    error: str = ""
    reload: bool = False  # the page reloaded (--reload), not a new one


class Browser:
    """One Chromium process and one tab."""

    def __init__(self, argv: list[str], profile: Path, workdir: Path):
        """Chromium in a session of its own (its helpers with it), its output in workdir/chromium.out,
        DevTools on a pipe only this process holds (`argv` says --remote-debugging-pipe)."""
        self.profile = profile
        commands_in, self.commands = os.pipe()  # Chromium reads on its fd 3
        self.replies, replies_out = os.pipe()  # and writes on its fd 4
        try:
            self.process = ProcessGroup(workdir).start("chromium", argv, ready=False,
                                                       fds={PIPE_IN_FD: commands_in, PIPE_OUT_FD: replies_out})
        except BaseException:
            for fd in (self.commands, self.replies):
                os.close(fd)
            raise
        finally:  # Chromium's ends are its own now: its exit closes the pipe
            os.close(commands_in)
            os.close(replies_out)
        self.log = self.process.log
        self.recorder: HarRecorder | None = None

    async def connect(self, deadline_s: float = 30.0) -> None:
        self.cdp = DevTools(await DevToolsPipe.open(self.commands, self.replies))
        try:
            target = await self.cdp.call("Target.createTarget", {"url": "about:blank"}, timeout=deadline_s)
        except (TimeoutError, RuntimeError) as e:
            state = "exited with " + str(self.process.popen.returncode) if not self.process.alive() else "runs"
            raise RuntimeError(f"chromium answers no DevTools command ({e or 'timeout'}; it {state}): "
                               f"{tail(self.log, 10)}") from None
        attached = await self.cdp.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self.session = attached["sessionId"]
        for method in ("Page.enable", "Network.enable"):
            await self.cdp.call(method, session=self.session)

    def record_har(self) -> HarRecorder:
        """Record what the tab loads from now on (after connect)."""
        recorder = HarRecorder(lambda method, params: self.cdp.call(method, params, session=self.session))

        def on_event(msg: dict) -> None:
            if msg.get("sessionId") == self.session and "method" in msg:
                recorder.on_event(msg["method"], msg.get("params", {}))

        self.cdp.listeners.append(on_event)
        self.recorder = recorder
        return recorder

    async def no_cache(self) -> None:
        await self.cdp.call("Network.setCacheDisabled", {"cacheDisabled": True}, session=self.session)

    async def load(self, url: str, timeout: float, reload: bool = False) -> PageResult:
        """Navigate to `url`, or with `reload` reload the page shown (F5: Chromium revalidates the page
        itself with the validators it holds), until its load event; what it requested meanwhile. When recording,
        the load is a page of the HAR, and its bodies are collected before the next page replaces them."""
        if self.recorder is None:
            return await self._load(url, timeout, reload)
        self.recorder.begin_page(url)
        try:
            return await self._load(url, timeout, reload)
        finally:
            await self.recorder.settle()

    async def _load(self, url: str, timeout: float, reload: bool) -> PageResult:
        result = PageResult(url, reload=reload)
        loaded = asyncio.Event()
        started: dict[str, str] = {}

        def on_event(msg: dict) -> None:
            if msg.get("sessionId") != self.session:
                return
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Network.requestWillBeSent":
                started[params["requestId"]] = params["request"]["url"]
            elif method == "Network.loadingFailed":
                result.failed += 1
            elif method == "Page.loadEventFired":
                loaded.set()

        self.cdp.listeners.append(on_event)
        start = time.monotonic()
        try:
            if reload:
                nav = await self.cdp.call("Page.reload", {"ignoreCache": False}, session=self.session, timeout=timeout)
            else:
                nav = await self.cdp.call("Page.navigate", {"url": url}, session=self.session, timeout=timeout)
            if nav.get("errorText"):
                result.error = nav["errorText"]
                return result
            await asyncio.wait_for(loaded.wait(), timeout)
            result.wall_ms = (time.monotonic() - start) * 1000
            await asyncio.sleep(0.05)  # let loadEventEnd be set
            timing = await self.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
            nav_entry = json.loads(timing) if timing else {}
            result.load_ms = round(nav_entry.get("loadEventEnd") or nav_entry.get("duration") or result.wall_ms, 1)
        except (TimeoutError, RuntimeError) as e:
            result.error = f"{type(e).__name__}: {e}" if str(e) else "timeout"
        finally:
            self.cdp.listeners.remove(on_event)
        result.objects = list(started.values())
        result.requests = len(started)
        result.wall_ms = round(result.wall_ms, 1)
        return result

    async def evaluate(self, expression: str):
        reply = await self.cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                    session=self.session)
        return reply.get("result", {}).get("value")

    async def links(self) -> list[str]:
        return await self.evaluate("Array.from(document.links).map(a => a.href)") or []

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.cdp.call("Browser.close"), 5)
        with contextlib.suppress(Exception):
            await self.cdp.close()
        self.process.stop(deadline_s=5)  # the whole session: Chromium's helpers are in it


def next_page(links: list[str], origins: list[str], rng: random.Random) -> str | None:
    """A random link to another page of the synthetic origin (a user clicking on); `origins` are its
    base URLs (http://host:port, and https://host:port when it serves HTTPS). Links are relative, so
    a page keeps the scheme it was loaded with."""
    pages = [u for u in links if any(u.startswith(f"{base}/page/") for base in origins)]
    return rng.choice(pages) if pages else None


def origin_bases(args: argparse.Namespace) -> list[str]:
    return [f"http://{args.origin}"] + ([f"https://{args.tls_origin}"] if args.tls_origin else [])


def random_page(args: argparse.Namespace, rng: random.Random) -> str:
    """A new start page: over HTTPS with probability --https-share."""
    base = f"https://{args.tls_origin}" if args.tls_origin and rng.random() < args.https_share else \
        f"http://{args.origin}"
    return f"{base}/page/{rng.randrange(args.start_pages)}.html"


async def browse(args: argparse.Namespace, profile: Path, scratch: Path) -> tuple[list[PageResult], dict | None]:
    """The pages browsed, and with --har what the file written holds and left out (else None)."""
    proxy = f"{args.proxy[0]}:{args.proxy[1]}"
    trust = spe_ca.spki_sha256(Path(args.ca_cert)) if args.ca_cert else None
    argv = chromium_argv(args.chromium, proxy, profile, args.all_through_proxy, trust)
    browser = Browser(argv, profile, scratch)
    har = None
    try:
        await browser.connect()
        if args.no_cache:
            await browser.no_cache()
        recorder = browser.record_har() if args.har else None
        results = await browse_pages(browser, args)
        if recorder:  # before Chromium closes: it still holds the last bodies
            await recorder.settle()
            har = {"file": args.har, **recorder.write(args.har)}
    finally:
        await browser.close()
    return results, har


async def browse_pages(browser: Browser, args: argparse.Namespace) -> list[PageResult]:
    """The URLs in order, or --pages N pages of the synthetic origin in sessions, with think times."""
    rng = random.Random(args.seed)
    sessions = SessionModel(args.think_s, args.session_pages)  # when a session goes on (sessions.py)
    results: list[PageResult] = []
    urls = list(args.urls)
    if args.pages:
        urls = [random_page(args, rng)]
    pages = 0
    while urls and pages < max(args.pages, len(args.urls)):
        url = urls.pop(0)
        pages += 1
        for reload in (False, True) if args.reload else (False,):
            result = await browser.load(url, args.timeout, reload=reload)
            results.append(result)
            print(f"browse: {'reload ' if reload else ''}{url}: "
                  f"{'error ' + result.error if result.error else f'load {result.load_ms:.0f} ms'}, "
                  f"{result.requests} requests, {result.failed} failed", file=sys.stderr, flush=True)
            if result.error:
                break
        if args.pages and pages < args.pages:
            following = next_page(await browser.links(), origin_bases(args), rng) if sessions.go_on(rng) else None
            urls.append(following or random_page(args, rng))
        if urls and args.think_s > 0:
            await asyncio.sleep(rng.expovariate(1 / args.think_s))
    return results


def summarize(args: argparse.Namespace, results: list[PageResult]) -> dict:
    ok = [r for r in results if not r.error]
    return {"tool": "browse", "proxy": f"{args.proxy[0]}:{args.proxy[1]}", "pages": len(results),
            "loaded": len(ok), "errors": len(results) - len(ok),
            "reloads": sum(r.reload for r in results),
            "load_ms": distribution([r.load_ms for r in ok]), "wall_ms": distribution([r.wall_ms for r in ok]),
            "requests": sum(r.requests for r in results), "failed_requests": sum(r.failed for r in results),
            "per_page": [r.__dict__ for r in results]}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./spe browse", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("urls", nargs="*", help="pages to load, in order")
    add_via(p, "the HTTP proxy Chromium uses for everything, the Multiplier in a lab", required=True, type=str)
    p.add_argument("--pages", type=int, default=0, help="browse N pages of the synthetic origin (needs --origin)")
    p.add_argument("--origin", help="HOST:PORT of the synthetic origin (for --pages)")
    p.add_argument("--start-pages", type=int, default=1000, help="first page drawn from /page/0..N-1.html")
    p.add_argument("--tls-origin", help="HOST:PORT where the synthetic origin serves HTTPS (for --pages)")
    p.add_argument("--https-share", type=float, default=0.5,
                   help="with --tls-origin: share of start pages loaded over HTTPS (links keep the scheme)")
    p.add_argument("--ca-cert", help="trust this CA (SPE's, ./spe ca --path) for HTTPS through an intercepting "
                                     "Multiplier; default: SPE's CA when it exists and HTTPS is browsed")
    p.add_argument("--think-s", type=parse_duration, default=2.0, help="mean think time between pages, exponential (s)")
    p.add_argument("--session-pages", type=float, default=5.0,
                   help="mean pages per session (geometric): then a new session starts at a random page (default 5)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--timeout", type=parse_duration, default=60.0, help="per page load (s)")
    p.add_argument("--no-cache", action="store_true", help="disable Chromium's own cache")
    p.add_argument("--reload", action="store_true",
                   help="reload each page once after it loaded, as a user pressing F5 (Chromium revalidates the "
                        "page with the validators it holds: conditional requests)")
    p.add_argument("--profile", help="user-data-dir to use (default: a fresh temporary one, removed after)")
    p.add_argument("--all-through-proxy", action="store_true",
                   help="send Chromium's own requests to other hosts to the proxy too (default: refused locally)")
    p.add_argument("--chromium", default=CHROMIUM, help=f"browser binary (default {CHROMIUM})")
    p.add_argument("--json", help="write the summary as JSON here")
    p.add_argument("--har", help="write everything the browser loaded here as a HAR 1.2 file (docs/workloads.md)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    results, har = _browse_in_scratch(args)
    summary = summarize(args, results)
    print(f"browse: {summary['loaded']} of {summary['pages']} pages loaded, {summary['requests']} requests "
          f"({summary['failed_requests']} failed); page load {fmt_ms(summary['load_ms'])}")
    if har:
        summary["har"] = har
        print(f"browse: {har['file']}: {har['entries']} entries, {har['bodies_missing']} bodies Chromium no longer "
              f"held; left out {har['failed']} failed, {har['from_cache']} from its cache, {har['unfinished']} "
              "unfinished requests")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if summary["errors"] == 0 else 1


def _check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Stop at the first bad argument (parser.error exits), in the order the checks were always made."""
    _check_targets(parser, args)
    if not 0 <= args.https_share <= 1:
        parser.error("--https-share must be between 0 and 1")
    if args.session_pages < 1:
        parser.error("--session-pages must be at least 1")
    _resolve_ca_cert(parser, args)
    if not Path(args.chromium).exists():
        parser.error(f"{args.chromium} not found: install Debian's chromium (./spe setup does)")


def _check_targets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The proxy and origin addresses, and something to browse; args.proxy becomes a (host, port) pair."""
    try:
        args.proxy = parse_hostport(args.proxy)
        if args.origin:
            parse_hostport(args.origin)
    except ValueError as e:
        parser.error(str(e))
    if not args.urls and not args.pages:
        parser.error("give URLs or --pages N")
    if args.pages and not args.origin:
        parser.error("--pages needs --origin HOST:PORT")
    if args.tls_origin:
        try:
            parse_hostport(args.tls_origin)
        except ValueError as e:
            parser.error(str(e))


def _resolve_ca_cert(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Trust SPE's CA by default when HTTPS is browsed and the CA exists; a given --ca-cert must exist."""
    browses_https = bool(args.tls_origin) or any(u.startswith("https://") for u in args.urls)
    if args.ca_cert is None and browses_https and (spe_ca.default_dir() / spe_ca.CERT_NAME).exists():
        args.ca_cert = str(spe_ca.default_dir() / spe_ca.CERT_NAME)
    if args.ca_cert and not Path(args.ca_cert).is_file():
        parser.error(f"--ca-cert {args.ca_cert}: no such file (./spe ca creates SPE's CA)")


def _browse_in_scratch(args: argparse.Namespace) -> tuple[list[PageResult], dict | None]:
    """Browse with a scratch directory (the profile too unless --profile) that is removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="spe-browse-"))
    profile = Path(args.profile) if args.profile else scratch / "profile"
    profile.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(browse(args, profile, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
