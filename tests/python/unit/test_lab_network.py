"""[network]: the lab file's keys and their mistakes, the addresses every piece is given, and what the
Collector's and each proxy's configuration make of them (the namespaces themselves are made in
tests/python/real_proxies/test_lab_namespaces.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from spe_tools import collector
from spe_tools.lab.definition.kinds import KINDS, Context
from spe_tools.lab.definition.labfile import lab_toml
from spe_tools.lab.definition.model import LabFileError, parse_lab
from spe_tools.lab.definition.proxy_spec import ProxySpec
from spe_tools.lab.errors import LabError
from spe_tools.lab.network import netns
from spe_tools.lab.network.addresses import Addresses
from spe_tools.lab.start.collector import placed_options
from spe_tools.lab.start.multiplier import multiplier_argv
from spe_tools.lab.start.network import placed_pieces
from spe_tools.lab.start.port_plan import Ports

LAB = '[[proxy]]\nname = "sq"\nkind = "squid"\n[[proxy]]\nname = "ext"\nkind = "external"\naddress = "10.1.1.1:3128"\n'
HOSTS = {"sq": netns.Host("sq", "spe5-sq", "spe5h", "10.213.0.22", "10.213.0.21"),
         "origin": netns.Host("origin", "spe6-origin", "spe6h", "10.213.0.26", "10.213.0.25")}


def test_every_piece_is_on_the_loopback_unless_the_file_says_otherwise():
    lab = parse_lab(LAB)
    assert (lab.network.proxies, lab.network.origin, lab.network.isolated) == ("loopback", "loopback", False)
    assert placed_pieces(lab) == []
    hosted = parse_lab('[network]\nproxies = "namespace"\norigin = "namespace"\n' + LAB)
    assert placed_pieces(hosted) == ["sq", "origin"]  # an external proxy is the user's to place
    assert replace(parse_lab(lab_toml(hosted)), source=None) == hosted


# Each mistake, and how the message names it.
NETWORK_MISTAKES = {
    'proxies = "netns"': r"\[network\].proxies: unknown proxies 'netns' \(known: loopback, namespace\)",
    'subnet = "10.213.0.0/31"': r"\[network\].subnet: .* /30 or larger",
    'subnet = "8.8.0.0/16"': r"\[network\].subnet: .*private IPv4",
    'subnet = "fd00::/64"': r"\[network\].subnet: .*private IPv4",
    'subnet = "10.213.0.1/16"': r"\[network\].subnet: 10.213.0.1/16 has host bits set",
    'delay = "5ms"': r"\[network\]: unknown key 'delay'",
}


@pytest.mark.parametrize("table", NETWORK_MISTAKES)
def test_mistakes_in_the_network_table_are_named(table):
    with pytest.raises(LabFileError, match=NETWORK_MISTAKES[table]):
        parse_lab(f"[network]\n{table}\n" + LAB)


def test_an_origin_namespace_needs_the_labs_own_origin():
    with pytest.raises(LabFileError, match=r'\[network\].origin: "namespace" needs the lab\'s own origin'):
        parse_lab('[network]\norigin = "namespace"\n[origin]\nkind = "none"\n' + LAB)


def test_addresses_default_to_the_loopback_and_name_each_host():
    loopback, hosted = Addresses(), Addresses(HOSTS)
    assert (loopback.of("sq"), loopback.gateway("sq"), loopback.argv("sq", ["x"])) == ("127.0.0.1", "127.0.0.1", ["x"])
    assert (hosted.of("sq"), hosted.gateway("sq")) == ("10.213.0.22", "10.213.0.21")
    assert hosted.argv("sq", ["squid", "-N"]) == ["ip", "netns", "exec", "spe5-sq", "squid", "-N"]
    assert hosted.client_networks() == ("127.0.0.0/8", "10.213.0.22/32", "10.213.0.26/32")


def test_the_collector_listens_on_each_hosts_link_and_resolves_the_origin_there(tmp_path):
    lab = parse_lab('[network]\nproxies = "namespace"\norigin = "namespace"\n' + LAB)
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4, "ext": 3128}, collector={"sq": 5, "ext": 6},
                  addresses=Addresses(HOSTS))
    options = placed_options(lab, ports)
    conf = collector.collector_config("spe", tmp_path, 2, {"sq": 5, "ext": 6}, **options)
    assert "http_port 127.0.0.1:2 name=direct" in conf
    assert "http_port 10.213.0.21:5 name=sq" in conf  # the other end of sq's link
    assert "http_port 127.0.0.1:6 name=ext" in conf
    assert "acl spe_clients src 127.0.0.0/8 10.213.0.22/32 10.213.0.26/32" in conf
    assert f"hosts_file {tmp_path / 'hosts'}" in conf
    assert (tmp_path / "hosts").read_text() == "10.213.0.26 localhost\n"  # the origin's host, not the loopback
    plain = collector.collector_config("spe", tmp_path / "plain", 2, {"sq": 5})
    assert (tmp_path / "plain/hosts").read_text() == "127.0.0.1 localhost\n"
    assert "acl spe_clients src 127.0.0.0/8\n" in plain


def test_the_multiplier_reaches_each_proxy_at_its_own_address(tmp_path):
    lab = parse_lab('[network]\nproxies = "namespace"\n' + LAB)
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4, "ext": 3128}, collector={"sq": 5, "ext": 6},
                  addresses=Addresses(HOSTS))
    argv = multiplier_argv(lab, ports, tmp_path, Path("/m"))
    assert "sq=10.213.0.22:4" in argv and "ext=10.1.1.1:3128" in argv


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "external"])
def test_every_kind_listens_on_its_host_and_uses_its_gateway(kind, tmp_path):
    """No kind's configuration or command line keeps a loopback address where its host's belongs."""
    ctx = Context(spec=ProxySpec(name="p", kind=kind, cache_mb=16), dir=tmp_path, port=4001, collector_port=4002,
                  origin_host="localhost", origin_ports=[80], host="10.213.0.22", gateway="10.213.0.21",
                  multiplier=Path("/m"))
    files = KINDS[kind].render(ctx)
    text = "\n".join(f.read_text() for f in files) + "\n" + " ".join(KINDS[kind].argv(ctx))
    companions = " ".join(" ".join(c.argv) for c in KINDS[kind].companions(ctx))
    assert "10.213.0.22" in text + companions  # where it listens
    assert "10.213.0.21" in text  # its parent, and the client it lets in
    assert "127.0.0.1:4001" not in text and "127.0.0.1:4002" not in text


def test_namespaces_need_root(monkeypatch, tmp_path):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert "network namespaces need root" in netns.missing_privilege()
    with pytest.raises(LabError, match="need root"):
        netns.make_hosts(["sq"], "10.213.0.0/16", tmp_path)
