"""Your own site, offline, on both sides (a user's path to a HAR workload): headless Chromium browses a real web
application packaged by Debian (DokuWiki: session cookies, `Vary: Cookie`, validators, 304s; dokuwiki_site.py),
reloading each page, and `./spe browse --har` writes what it loaded. The wiki is then stopped, and `./spe lab run`
puts the recording on both sides of the default lab's kinds of proxies: the HAR origin answers as the wiki did,
the HAR replay sends the browser's requests with their headers and timing. The client gets each recorded status
back, every request is multiplied, the recorded revalidations are answered 304 again, and the dummy (no cache)
never differs from the Collector. Each proxy's results are printed (`-s`) for the record."""

from __future__ import annotations

import subprocess
import sys

import dokuwiki_site
from conftest import ROOT
from har_site import both_sides
from labsupport import results_per_proxy, scratch_dir
from parts import installed_kinds, missing_program, require

from spe_tools import collector
from spe_tools.process import ProcessGroup, free_port
from spe_tools.squid import start_squid
from spe_tools.workload.browse import CHROMIUM
from spe_tools.workload.har.read import read_har

KINDS = ("squid", "trafficserver", "varnish", "apache", "nginx")


def record_the_wiki(workdir) -> None:
    """The wiki browsed through a stock Squid that caches nothing (a proxy is how `./spe browse` reaches a site;
    a cache would answer the browser's conditional requests itself, with its own 200s), reloading each page as a
    user pressing F5 does (Chromium's conditional requests), into workdir/wiki.har; the wiki stops."""
    with ProcessGroup(workdir) as group:
        port = free_port()
        dokuwiki_site.start(group, workdir, port)
        squid = start_squid(group, "recording-squid", free_port(), cache_mb=0)
        site = f"http://localhost:{port}/"
        run = subprocess.run([sys.executable, "-m", "spe_tools.workload.browse", "--via", f"127.0.0.1:{squid.port}",
                              "--reload", "--think-s", "0.5", "--har", str(workdir / "wiki.har"),
                              *[site + page for page in dokuwiki_site.PAGES]],
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(workdir)},
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr


def test_a_real_site_recorded_by_the_browser_is_replayed_on_both_sides_through_every_proxy():
    require(missing_program(CHROMIUM), "Chromium")
    require(dokuwiki_site.missing(), "DokuWiki (a real site)")
    require(collector.missing("spe"), "the patched Collector")
    from conftest import multiplier_binary
    kinds = installed_kinds(KINDS, multiplier_binary())
    with scratch_dir("spe-real-site-har-") as runs:
        record_the_wiki(runs)
        recorded = list(read_har(runs / "wiki.har"))
        summary, records = both_sides(runs, "real-site-har", "wiki.har", kinds, 120, timeout=400)

    results, differing = results_per_proxy(records, kinds)
    print("recorded:", len(recorded), "replayed:", summary["sent"],
          "results per proxy:", {kind: dict(counts) for kind, counts in results.items()})
    assert summary["format"] == "har" and summary["errors"] == 0, summary
    assert summary["status_matched"] == summary["status_compared"] >= 60, summary
    assert len(records) == summary["sent"], (len(records), summary["sent"])
    assert all({p["name"] for p in r["proxies"]} == {*kinds, "dummy"} for r in records)
    assert [r for r in records if r["collector"]["status"] == 304], "the recorded revalidations, answered 304"
    assert not differing, differing
