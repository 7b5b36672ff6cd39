"""A real web application packaged by Debian, DokuWiki, as a site on loopback: PHP's built-in server runs
Debian's code from /usr/share/dokuwiki on a private copy of its configuration and pages, so a test writes
nothing outside its own directory and two tests never share a wiki.

What makes it a fair test of a caching proxy: every page is `no-store` with a session cookie and `Vary: Cookie`;
its CSS and JavaScript are `public, max-age=31536000` with an `ETag` and `Last-Modified`; its media
(`lib/exe/fetch.php`) are `public, proxy-revalidate, no-transform, max-age=86400` with an `Expires` and
answered 304 on a matching validator; its static images carry no validator at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from spe_tools.process import ProcessGroup

CODE = Path("/usr/share/dokuwiki")  # Debian's dokuwiki package
CONFIG, DATA = Path("/etc/dokuwiki"), Path("/var/lib/dokuwiki/data")
PHP = "/usr/bin/php"  # php-cli, whose -S is the built-in web server

# Pages a user would look at: the start page, the syntax page (many images through fetch.php), the index.
PAGES = ("doku.php?id=wiki:welcome", "doku.php?id=wiki:syntax", "doku.php?id=wiki:dokuwiki",
         "lib/exe/fetch.php?media=wiki:dokuwiki-128.png", "doku.php?id=playground:playground",
         "doku.php?id=wiki:welcome&do=index", "doku.php?id=wiki:welcome")


def missing() -> list[str]:
    """Why the site cannot run here ([] if it can): for parts.require."""
    problems = [] if shutil.which(PHP) else [f"{PHP} (php-cli) is not installed"]
    return problems + ([] if (CODE / "doku.php").exists() else [f"{CODE} (dokuwiki) is not installed"])


def prepare(workdir: Path) -> Path:
    """A private wiki under workdir: its configuration (saving into its own data directory) and the PHP file
    that points DokuWiki at it before each request (DOKU_CONF, which DokuWiki reads if already defined)."""
    conf, data = workdir / "dokuwiki-conf", workdir / "dokuwiki-data"
    shutil.copytree(CONFIG, conf, symlinks=False)
    shutil.copytree(DATA, data, symlinks=False)
    with open(conf / "local.php", "a") as f:
        f.write(f"\n$conf['savedir'] = '{data}';\n")
    prepend = workdir / "dokuwiki-prepend.php"
    prepend.write_text(f"<?php define('DOKU_CONF', '{conf}/');\n")
    return prepend


def start(group: ProcessGroup, workdir: Path, port: int) -> None:
    """The wiki on 127.0.0.1:port, started in `group` (which stops it)."""
    prepend = prepare(workdir)
    group.start("dokuwiki", [PHP, "-d", f"auto_prepend_file={prepend}", "-S", f"127.0.0.1:{port}", "-t", str(CODE)],
                port=port, cwd=CODE, env={"PATH": "/usr/bin:/bin"})
