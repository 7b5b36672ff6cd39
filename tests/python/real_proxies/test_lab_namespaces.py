"""A lab whose proxies under test and origin are hosts of their own ([network]: a network namespace each, joined
to the machine's by a veth pair): every installed caching kind caches through its own Collector port over its
link, none can reach the origin past its parent, and the namespaces are gone once the lab stops, as they are
when a set-up fails half way."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import multiplier_binary
from labsupport import ALL_CACHEABLE, REAL_KINDS, lab_cli, lab_session, lab_up, scratch_dir
from parts import installed_kinds, require

from spe_tools.lab.errors import LabError
from spe_tools.lab.network import netns
from spe_tools.rundir.access_log import BadLineError, read_access_log

KINDS = (*REAL_KINDS, "dummy")


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def connects(namespace: str, host: str, port: int) -> bool:
    """Whether a TCP connection from inside the namespace to host:port succeeds (within 2 s)."""
    code = ("import socket, sys\ntry:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)\n"
            "except OSError:\n    sys.exit(1)\n")
    return subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-c", code, host, str(port)],
                          capture_output=True, timeout=10).returncode == 0


@pytest.fixture(scope="module")
def hosted_lab():
    require(filter(None, [netns.missing_privilege()]), "network namespaces")
    kinds = installed_kinds(KINDS, multiplier_binary())

    def text(workdir: Path) -> str:
        model = workdir / "model.json"
        model.write_text(json.dumps(ALL_CACHEABLE))
        lab = ('name = "hosts"\n[collector]\nkind = "spe"\n[multiplier]\ntimeout_s = 20\n'
               f'[origin]\nthink_mean_ms = 0\nmodel = "{model}"\n'
               '[network]\nproxies = "namespace"\norigin = "namespace"\n')
        return lab + "".join(f'[[proxy]]\nname = "{k}"\nkind = "{k}"\n' for k in kinds)

    with lab_session(text) as lab:
        yield lab, kinds


def test_each_proxy_caches_through_its_own_link(hosted_lab):
    lab, kinds = hosted_lab
    hosts = lab.run.ports.addresses.hosts
    assert set(hosts) == {*kinds, "origin"}
    blocks = {ipaddress.ip_interface(f"{h.address}/30").network for h in hosts.values()}
    assert len(blocks) == len(hosts)  # a link, and a /30, each
    path = "/obj/hosted?size=2000"
    for _ in range(3):
        lab.get(path)
    records = lab.records(path, 3)
    for r in records:
        for leg in r["proxies"]:
            assert (leg["result"], leg["md5"]) == ("OK", r["collector"]["md5"]), (leg["name"], leg)
    # Each caching proxy fetched the object once, on its own Collector port, from its own address; the Collector
    # fetched it from the origin's host.
    lines = [line for line in read_access_log(lab.files.access_log)
             if not isinstance(line, BadLineError) and line.url.endswith(path)]
    for kind in kinds:
        on_its_port = [line for line in lines if lab.port_names.get(line.port) == kind]
        assert len(on_its_port) == (3 if kind == "dummy" else 1), (kind, on_its_port)
        assert {line.client for line in on_its_port} == {hosts[kind].address}
    assert any(line.hierarchy.endswith("/" + hosts["origin"].address) for line in lines)
    assert lab.topology.proxies[kinds[0]].host == hosts[kinds[0]].address  # lab.json names each one's own address


def test_no_proxy_reaches_the_origin_past_its_collector_port(hosted_lab):
    lab, kinds = hosted_lab
    addresses, ports = lab.run.ports.addresses, lab.run.ports
    for kind in kinds:
        host = addresses.hosts[kind]
        assert connects(host.namespace, host.gateway, ports.collector[kind])
        assert not connects(host.namespace, addresses.of("origin"), ports.origin)
        assert not connects(host.namespace, "127.0.0.1", ports.direct)  # its loopback is its own
        assert not connects(host.namespace, "10.0.0.1", 80)  # and nothing is routed beyond its link


def test_the_namespaces_go_with_the_lab(tmp_path):
    require(filter(None, [netns.missing_privilege()]), "network namespaces")
    made: list[netns.Host] = []

    def text(workdir: Path) -> str:
        return ('name = "gone"\n[collector]\nkind = "spe"\n[network]\nproxies = "namespace"\n'
                '[[proxy]]\nname = "a"\nkind = "dummy"\n[[proxy]]\nname = "b"\nkind = "dummy"\n')

    with lab_session(text) as lab:
        made = list(lab.run.ports.addresses.hosts.values())
        assert {h.namespace for h in made} <= namespaces()
        assert {h.link for h in made} <= links()
    assert not {h.namespace for h in made} & namespaces()
    assert not {h.link for h in made} & links()


def test_a_set_up_that_fails_half_way_removes_what_it_made(tmp_path, monkeypatch):
    require(filter(None, [netns.missing_privilege()]), "network namespaces")
    real_make = netns._make
    seen: list[netns.Host] = []

    def make_then_fail(host: netns.Host) -> None:
        seen.append(host)
        if len(seen) == 2:  # the second host's link cannot be made: a name that is too long for a link
            real_make(netns.Host(host.piece, host.namespace, "x" * 20, host.address, host.gateway))
        real_make(host)

    monkeypatch.setattr(netns, "_make", make_then_fail)
    with pytest.raises(LabError, match="network namespaces: ip .* failed"):
        netns.make_hosts(["a", "b", "c"], "10.213.0.0/16", tmp_path)
    assert len(seen) == 2
    assert not {h.namespace for h in seen} & namespaces()
    assert not {h.link for h in seen} & links()
    assert not (tmp_path / netns.RECORD).exists()


def test_lab_down_removes_the_namespaces_of_a_lab_whose_runner_died(tmp_path):
    """`./spe lab down RUN` from another shell, after `up` was killed (SIGKILL: it could not clean up): the
    processes and the namespaces netns.json lists are gone."""
    require(filter(None, [netns.missing_privilege()]), "network namespaces")
    with scratch_dir("spe-netns-down-") as runs:
        labfile = runs / "hosted.toml"
        labfile.write_text('name = "hosted"\n[collector]\nkind = "spe"\n[network]\nproxies = "namespace"\n'
                           '[[proxy]]\nname = "a"\nkind = "dummy"\n')
        with lab_up(labfile, runs) as lab:
            made = netns.recorded_hosts(lab.rundir)
            assert [h.piece for h in made] == ["a"] and {h.namespace for h in made} <= namespaces()
            lab.up.kill()
            lab.up.wait(timeout=10)
            down = lab_cli("down", str(lab.rundir))
            assert down.returncode == 0, down.stderr
            assert f"network namespace {made[0].namespace}" in down.stdout
        assert not {h.namespace for h in made} & namespaces()
        assert not {h.link for h in made} & links()
