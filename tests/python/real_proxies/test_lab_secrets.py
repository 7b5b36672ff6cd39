"""Private data: a cookie and a bearer token a client sent, and the cookie the origin set,
searched for in every file of the run directory (records, captures, logs, the report), are not found.

One lab: the patched Collector, the synthetic origin (every object sends Set-Cookie; `vary=` adds a
Vary field), every proxy kind installed here, and two purpose-built caches (tests/fixtures/fault_proxy.py):
`careless` keys by URL only (it ignores Vary), `mismatch` changes Content-Type (a capture for every
request). The client sends its Cookie and Authorization, and other values of both, so that the judge
must tell variants apart by their keyed digests. Afterwards every process is stopped (their logs
flushed), `./spe report` runs, and every file of the run directory is searched, case-insensitively (the
judge compares normalized, lowercased values). The proxies' own cache stores are the one exception: a
cache keeps the reply, Set-Cookie included, and what it needs to select a variant (RFC 9111 4.1).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary, read_records
from labsupport import lab_session
from parts import installed_kinds

from spe_tools.lab.definition.model import PROXY_KINDS
from spe_tools.process import ProcessError, ProcessGroup, free_port

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
COOKIE, OTHER_COOKIE = "session=SECRETCOOKIE123", "session=OTHERCOOKIE789"
TOKEN, OTHER_TOKEN = "Bearer SECRETTOKEN456", "Bearer OTHERTOKEN789"
PROXY_TOKEN = "Bearer SECRETPROXYTOKEN321"  # Proxy-Authorization: the Multiplier's own, never forwarded
SECRETS = ("SECRETCOOKIE123", "OTHERCOOKIE789", "SECRETTOKEN456", "OTHERTOKEN789", "SECRETPROXYTOKEN321")
FAULTS = {"careless": "ignore_vary", "mismatch": "content_type"}
# What each kind keeps on disk as a cache (under proxies/<name>/): replies with their Set-Cookie, and the
# request fields a Vary names. The proxies' stores, not SPE's files; private to their users (docs/lab-file.md).
CACHE_STORES = {"apache": "cache/", "apache-gateway": "cache/", "nginx": "cache/", "trafficserver": "rr/cache"}


@dataclass
class Run:
    rundir: Path
    kinds: list[str]
    set_cookie: str  # the origin's cookie, as the client got it
    kept_capture: str  # a capture of the Multiplier run with --capture-secrets
    kept_output: str  # that Multiplier's stderr


def lab_text(kinds: list[str], faults: dict[str, tuple[int, int]], model: Path) -> str:
    text = (f'name = "secrets"\n[collector]\nkind = "spe"\n[multiplier]\ntimeout_s = 20\n'
            f'[origin]\nthink_mean_ms = 0\nmodel = "{model}"\n')
    for name, (port, cport) in faults.items():
        text += (f'[[proxy]]\nname = "{name}"\nkind = "external"\naddress = "127.0.0.1:{port}"\n'
                 f'collector_port = {cport}\n')
    for kind in kinds:
        size = "" if kind in ("tinyproxy", "privoxy", "dummy") else "cache_mb = 16\n"
        text += f'[[proxy]]\nname = "p-{kind}"\nkind = "{kind}"\n{size}'
    return text


def send(port: int, method: str, url: str, headers: dict[str, str]) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, url, body=b"order=1" if method == "POST" else None, headers=headers)
        reply = conn.getresponse()
        reply.read()
        assert reply.status < 500, (method, url, reply.status)
        return reply
    finally:
        conn.close()


def run_kept_multiplier(lab, faults: dict[str, tuple[int, int]], workdir: Path) -> tuple[str, str]:
    """A second Multiplier beside the lab's, with --capture-secrets, its files outside the run directory:
    one request whose reply differs at `mismatch`. Its capture ("" when it made none) and its stderr."""
    workdir.mkdir()
    port, captures, log = free_port(), workdir / "captures", workdir / "kept.jsonl"
    argv = [str(multiplier_binary()), "--listen", f"127.0.0.1:{port}", "--collector",
            f"127.0.0.1:{lab.run.ports.direct}", "--proxy", f"mismatch=127.0.0.1:{faults['mismatch'][0]}",
            "--capture-dir", str(captures), "--capture-secrets", "--log", str(log)]
    with ProcessGroup(workdir) as group:
        try:
            group.start("kept", argv, port=port)
        except ProcessError:  # the test names what it printed
            return "", (workdir / "kept.out").read_text()
        send(port, "GET", f"{lab.origin}/obj/kept-1?think=0", {"Cookie": COOKIE})
        end = time.monotonic() + 30
        while not read_records(log) and time.monotonic() < end:
            time.sleep(0.1)
    files = sorted(captures.glob("*.txt"))
    return (files[0].read_bytes().decode(errors="replace") if files else ""), (workdir / "kept.out").read_text()


@pytest.fixture(scope="module")
def run():
    kinds = installed_kinds([k for k in PROXY_KINDS if k != "external"], multiplier_binary())
    faults = {name: (free_port(), free_port()) for name in FAULTS}  # (proxy, its Collector port)

    def text(workdir: Path) -> str:
        model = workdir / "model.json"
        model.write_text(json.dumps({"cache_shares": {"cookie": 1.0}, "size_mean": 4000}))
        return lab_text(kinds, faults, model)

    def users(group: ProcessGroup) -> None:
        for name, (port, cport) in faults.items():
            group.start(name, [sys.executable, str(ROOT / "tests/fixtures/fault_proxy.py"), "--port", str(port),
                               "--parent", f"127.0.0.1:{cport}", "--mode", FAULTS[name]], port=port, env=ENV)

    with lab_session(text, users) as lab:
        kept_capture, kept_output = run_kept_multiplier(lab, faults, lab.workdir / "kept")
        m, o = lab.multiplier_port, lab.origin
        sent = 0

        def request(method: str, path: str, **headers: str) -> http.client.HTTPResponse:
            nonlocal sent
            reply = send(m, method, o + path, {k.replace("_", "-"): v for k, v in headers.items()})
            sent += 1
            assert len(lab.records("", sent)) == sent, f"no record for {method} {path}"
            return reply

        # A Vary: Cookie reply stored for the client's cookie, then asked for with another one.
        first = request("GET", "/obj/s1?think=0&vary=Cookie", Cookie=COOKIE, Proxy_Authorization=PROXY_TOKEN)
        request("GET", "/obj/s1?think=0&vary=Cookie", Cookie=OTHER_COOKIE)
        request("GET", "/obj/s1?think=0&vary=Cookie", Cookie=COOKIE)
        # The same with Authorization (public: a shared cache may store it, RFC 9111 3.5).
        request("GET", "/obj/s2?think=0&cc=public&vary=Authorization", Authorization=TOKEN)
        request("GET", "/obj/s2?think=0&cc=public&vary=Authorization", Authorization=OTHER_TOKEN)
        # Both, on a reply that varies by neither; a conditional request; an unsafe one (the replay port).
        for _ in range(2):
            request("GET", "/obj/s3?think=0&vary=Accept-Language", Cookie=COOKIE, Authorization=TOKEN)
        request("GET", "/obj/s3?think=0", Cookie=COOKIE, Authorization=TOKEN, If_None_Match='"x"')
        request("POST", "/unsafe/s4?think=0", Cookie=COOKIE, Authorization=TOKEN)
        set_cookie = first.getheader("Set-Cookie", "").split(";")[0]
        assert set_cookie.startswith("spe="), first.getheaders()
        lab.run.group.stop_all()  # every process of the lab: their logs are complete
        report = subprocess.run([str(ROOT / "spe"), "report", str(lab.rundir)], env=ENV, capture_output=True,
                                text=True, timeout=300)
        assert report.returncode == 0, report.stderr
        yield Run(lab.rundir, kinds, set_cookie, kept_capture, kept_output)


def in_cache_store(rundir: Path, path: Path) -> bool:
    """Whether `path` is in a proxy's own cache store (proxies/p-<kind>/<store>)."""
    parts = path.relative_to(rundir).parts
    if len(parts) < 3 or parts[0] != "proxies" or parts[1][2:] not in CACHE_STORES:
        return False
    return "/".join(parts[2:]).startswith(CACHE_STORES[parts[1][2:]])


def test_no_secret_is_in_any_file_of_the_run_directory(run):
    needles = [s.lower().encode() for s in (*SECRETS, run.set_cookie)]
    found, files = {}, 0
    for path in sorted(p for p in run.rundir.rglob("*") if p.is_file() and not p.is_symlink()):
        files += 1
        data = path.read_bytes().lower()
        hits = [n.decode() for n in needles if n in data]
        if hits and not in_cache_store(run.rundir, path):
            found[str(path.relative_to(run.rundir))] = hits
    assert not found, "\n".join(f"{path}: {', '.join(hits)}" for path, hits in found.items())
    # What was searched: the Multiplier's files, its captures, the report, the Collector's and the proxies' logs.
    for name in ("multiplier.jsonl", "multiplier.rope.log", "multiplier.out", "collector/access.log",
                 "report/report.html", "report/report.txt", "report/summary.json"):
        assert (run.rundir / name).is_file(), name
    assert list((run.rundir / "captures").glob("*-mismatch.txt"))
    assert files > 20, files


def test_the_judge_tells_variants_apart_by_their_digests(run):
    records = {r["id"]: r for r in read_records(run.rundir / "multiplier.jsonl")}
    careless = {r["id"]: next(p for p in r["proxies"] if p["name"] == "careless") for r in records.values()}
    # Request 2: the careless cache served the variant stored for another cookie; request 3: for this one.
    (vary,) = [v for v in careless[2]["cache"]["violations"] if v["rule"] == "vary"]
    assert vary["reason"].startswith("the stored variant was selected by cookie: 'hmac:"), vary
    evidence = careless[2]["cache"]["evidence"]["request"]
    assert evidence["cookie"].startswith("hmac:") and evidence["stored variant's cookie"].startswith("hmac:")
    assert evidence["cookie"] != evidence["stored variant's cookie"]
    assert not [v for v in careless[3].get("cache", {}).get("violations", []) if v["rule"] == "vary"]
    # Request 5: another token than the stored variant's.
    (vary,) = [v for v in careless[5]["cache"]["violations"] if v["rule"] == "vary"]
    assert vary["reason"].startswith("the stored variant was selected by authorization: 'hmac:"), vary
    assert records[4]["request_headers"]["authorization"] == records[1]["request_headers"]["cookie"] == "(present)"


def test_a_capture_shows_set_cookie_as_a_digest_and_keeps_it_only_when_asked(run):
    captures = sorted((run.rundir / "captures").glob("*-mismatch.txt"))
    text = captures[0].read_bytes().decode(errors="replace")
    # The Collector's reply and the proxy's: the same cookie, the same digest
    digests = re.findall(r"\r\nSet-Cookie: (hmac:[0-9a-f]{16})\r\n", text)
    assert len(digests) == 2 and digests[0] == digests[1], text
    assert "Set-Cookie: spe=" not in text
    # --capture-secrets: the values as received, and a warning at start
    assert "\r\nSet-Cookie: spe=" in run.kept_capture, run.kept_output
    assert "hmac:" not in run.kept_capture
    assert "--capture-secrets: the captures in" in run.kept_output
    assert "hold users' cookies and credentials" in run.kept_output
