"""SPE's noise floor on a real site: headless Chromium browses a real web application packaged by Debian
(DokuWiki: session cookies, `Vary: Cookie`, validators, 304s; dokuwiki_site.py) through the default lab's kinds
of proxies, reloading each page as a user pressing F5 does (Chromium's conditional requests). The dummy, which
has no cache and forwards each request to its Collector port, must get from it what the client got: any
difference is SPE's own, not a proxy's. Each proxy's results are printed (`-s`) for the record.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import dokuwiki_site
from conftest import ROOT
from labsupport import lab_session, results_per_proxy
from parts import installed_kinds, missing_program, require

from spe_tools.process import free_port
from spe_tools.workload.browse import CHROMIUM

KINDS = ("squid", "trafficserver", "varnish", "apache", "nginx")


def lab_text(kinds: list[str], port: int) -> str:
    proxies = "".join(f'[[proxy]]\nname = "{kind}"\nkind = "{kind}"\ncache_mb = 32\n'
                      + (f"cache_ports = [{port}]\n" if kind == "apache" else "") for kind in kinds)
    return ('name = "real-site"\n[collector]\nkind = "spe"\n[origin]\nkind = "none"\n'
            f'[multiplier]\ntimeout_s = 20\n{proxies}[[proxy]]\nname = "dummy"\nkind = "dummy"\n')


def browse(workdir, multiplier_port: int, urls: list[str]) -> dict:
    out = workdir / "browse.json"
    run = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--via",
                          f"127.0.0.1:{multiplier_port}", "--reload", "--think-s", "0.5", "--json", str(out), *urls],
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(workdir)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(out.read_text())


def settled_records(lab, at_least: int, quiet_s: float = 5, deadline_s: float = 90) -> list[dict]:
    """The Multiplier's records once there are `at_least` and no new one came for quiet_s (each is written when
    every proxy has answered)."""
    end, count, since = time.monotonic() + deadline_s, -1, time.monotonic()
    while True:
        log = lab.files.multiplier_log
        lines = log.read_text().split("\n")[:-1] if log.exists() else []
        if len(lines) != count:
            count, since = len(lines), time.monotonic()
        if (count >= at_least and time.monotonic() - since >= quiet_s) or time.monotonic() > end:
            return [json.loads(line) for line in lines]
        time.sleep(0.2)


def test_the_dummy_never_differs_from_the_collector_on_a_real_site():
    require(missing_program(CHROMIUM), "Chromium")
    require(dokuwiki_site.missing(), "DokuWiki (a real site)")
    from conftest import multiplier_binary
    kinds = installed_kinds(KINDS, multiplier_binary())
    port = free_port()
    with lab_session(lambda _: lab_text(kinds, port),
                     before=lambda users: dokuwiki_site.start(users, users.workdir, port)) as lab:
        site = f"http://localhost:{port}/"
        summary = browse(lab.workdir, lab.multiplier_port, [site + page for page in dokuwiki_site.PAGES])
        assert summary["errors"] == 0 and summary["reloads"] == len(dokuwiki_site.PAGES), summary
        records = settled_records(lab, summary["requests"] - summary["failed_requests"])
        results, differing = results_per_proxy(records, kinds)
        evidence = collector_lines(lab, {entry[1].split("?")[0] for entry in differing})

    print("results per proxy:", {kind: dict(counts) for kind, counts in results.items()})
    conditional = [r for r in records if r["collector"]["status"] == 304]
    assert len(records) >= 60 and conditional, (len(records), len(conditional))  # a site, and its 304s
    print("\n".join(["the Collector's lines of the URLs the dummy got otherwise:", *evidence]))
    assert not differing, differing


def collector_lines(lab, urls: set[str]) -> list[str]:
    """The Collector's access-log lines of these URLs (logged without their query; tag, port, Squid's result):
    how a difference came about, in a failure's message, since the lab's files go with it."""
    log = lab.files.access_log
    if not urls or not log.exists():
        return []
    return [line for line in log.read_text().split("\n") if any(url in line for url in urls)]
