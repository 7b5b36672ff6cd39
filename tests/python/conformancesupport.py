"""The conformance sequences as the real-proxy tests send them: each on a URL and a client
connection of its own, every dependent request sent the moment the reply it depends on is in, through a lab
with every Debian caching kind behind the patched Collector (tests/python/real_proxies/
test_conformance_real_proxies.py)."""

from __future__ import annotations

import threading
import time

import httpclient

from spe_tools.workload.client.conformance_mix import scenario_steps
from spe_tools.workload.content import conformance as cf
from spe_tools.workload.http11 import CLIENT_HEADER

# each named after its kind
KINDS_UNDER_TEST = ("squid", "trafficserver", "nginx", "varnish", "apache", "apache-gateway", "dummy")

# sequence -> (case, scenario, unsafe method); each runs on /c/<case>/<sequence-id>
SEQUENCES = {
    "post-then-get": ("invalidated", "unsafe-then-get", "POST"),
    "put-then-get": ("invalidated", "unsafe-then-get", "PUT"),
    "delete-then-get": ("invalidated", "unsafe-then-get", "DELETE"),
    "m-search-then-get": ("invalidated", "unsafe-then-get", "M-SEARCH"),
    "proppatch-then-get": ("invalidated", "unsafe-then-get", "PROPPATCH"),
    "no-cache-update": ("no-cache,update", "revalidate", ""),
    "update-length": ("no-cache,update-length", "revalidate", ""),
    "max-age-update": ("max-age=2,update", "revalidate", ""),
    "max-age-update-field": ("max-age=2,update-field", "revalidate", ""),
    "max-age-update-length": ("max-age=2,update-length", "revalidate", ""),
    "expires-update": ("expires-past,update", "revalidate", ""),
    "expires-double-space": ("expires-double-space", "reuse-now", ""),
    "expires-one-digit-hour": ("expires-one-digit-hour", "reuse-now", ""),
    "expires-gMT": ("expires-gMT", "reuse-now", ""),
    "expires-rfc850": ("expires-rfc850", "reuse-now", ""),
    "expires-asctime": ("expires-asctime", "reuse-now", ""),
    "expires=0": ("expires=0", "reuse-now", ""),
    "expires=date": ("expires=date", "reuse-now", ""),
    "expires-twice": ("expires-twice", "reuse-now", ""),
    "max-age-twice": ("max-age-twice", "reuse-now", ""),
    "max-age=non-integer": ("max-age=non-integer", "reuse-now", ""),
    "huge-age": ("age=2147483648,max-age=3600", "reuse-now", ""),
    "precedence": ("validators", "precedence", ""),
    "etag-vary-304": ("etag,vary", "conditional-vary", ""),
    "set-cookie-reuse": ("set-cookie,reuse", "reuse-now", ""),
    "connection-field": ("connection=x-hop-field", "reuse-now", ""),
    "private-set-cookie": ("private=set-cookie", "reuse-now", ""),
    "no-cache-set-cookie": ("no-cache=set-cookie", "reuse-now", ""),
    "date-stored": ("date-stored", "repeat", ""),
    "interim-103": ("interim=103", "reuse-now", ""),
    "interim-102": ("interim=102", "reuse-now", ""),
}


def lab_text(kinds: tuple[str, ...]) -> str:
    """The lab: the patched Collector, the synthetic origin (its /c/ cases), each kind under its own name."""
    t = ('name = "conformance-real"\n[collector]\nkind = "spe"\nuncacheable_ttl_s = 180\nreplay_timing = true\n'
         '[origin]\nkind = "synthetic"\nhost = "localhost"\nthink_mean_ms = 0\n'
         '[multiplier]\nmode = "sequential"\ntimeout_s = 10\n')
    for kind in kinds:
        t += f'[[proxy]]\nname = "{kind}"\nkind = "{kind}"\n' + ('cache_mb = 16\n' if kind != "dummy" else "")
    return t


INTERIM: dict[str, list[list[int]]] = {}  # sequence -> the 1xx the client got before each reply


def run_sequence(lab, name: str, out: dict, errors: dict) -> None:
    """One sequence on its own connection; each step `delay_s` after the previous reply (0: at once)."""
    case, scenario, unsafe = SEQUENCES[name]
    oid = f"t27-{name}"
    path = f"{cf.PREFIX}{case}/{oid}"
    conn = httpclient.Connection(lab.multiplier_port, timeout=30)
    statuses: list[int] = []  # each request's final status
    interim: list[list[int]] = []  # the 1xx the client got before each (RFC 9110 15.2)
    out[name] = (path, statuses)  # what was sent so far, should a step fail
    INTERIM[name] = interim
    try:
        for step in scenario_steps(scenario, case, oid, unsafe or "POST"):
            if step.delay_s:
                time.sleep(step.delay_s)
            # Each sequence is a client of its own (they share an address): one's order is not another's.
            headers = {**(step.headers or {}), CLIENT_HEADER: f"sequence-{name}"}
            reply = conn.get(lab.origin + path, step.method, headers, step.body or b"")
            interim.append([])
            while 100 <= reply.status < 200:
                interim[-1].append(reply.status)
                reply = conn.read_reply(head=step.method == "HEAD")
            statuses.append(reply.status)
    except Exception as e:  # a thread's exception would go unseen: the test reports it
        errors[name] = repr(e)
    finally:
        conn.close()


def run_all(lab, names) -> dict:
    """Every named sequence at once, one thread each; name -> (path, each request's final status)."""
    sent: dict = {}
    errors: dict = {}
    threads = [threading.Thread(target=run_sequence, args=(lab, name, sent, errors)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert not errors and not any(t.is_alive() for t in threads), errors or "a sequence did not finish in 90 s"
    return sent
