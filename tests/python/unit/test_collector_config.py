"""The Collector's squid.conf as spe_tools/collector.py renders it, read as text (what Squid makes of it,
`squid -k parse`: real_proxies/test_collector.py, test_connect_authority.py, test_live_traffic.py)."""

from __future__ import annotations

import pytest

from spe_tools import collector
from spe_tools.collector import collector_config, port_limit_rules
from spe_tools.config_template import TemplateError


def test_the_template_has_the_proxies_templates_engine(tmp_path, monkeypatch):
    """The Collector's template is rendered like the proxies' (spe_tools/config_template.py): `{{name}}`
    placeholders, and one without a value is an error naming the file, never left in the config."""
    template = tmp_path / "squid.conf.in"
    template.write_text("visible_hostname {{name}}\ncache_dir {{no_such_value}}\n")
    monkeypatch.setattr(collector, "TEMPLATE", template)
    monkeypatch.setattr(collector, "ROOT", tmp_path)
    with pytest.raises(TemplateError, match="squid.conf.in: no value for {{no_such_value}}"):
        collector_config("spe", tmp_path, 1, {})


def test_the_rules_are_one_delay_pool_per_limited_port():
    """[[proxy]] collector_limit_kbps (a lab's paced port: real_proxies/test_lab_collector_limits.py)."""
    rules = port_limit_rules((("pf", 64), ("other", 1)))
    assert rules.splitlines()[0] == "delay_pools 2"
    assert "acl spe_limited_1 myportname pf" in rules and "delay_parameters 1 65536/65536" in rules
    assert "delay_access 2 allow spe_limited_2" in rules and "delay_parameters 2 1024/1024" in rules
    assert "direct" not in rules and port_limit_rules(()) == ""


@pytest.mark.parametrize("tag_to_origin, allowed", [(False, False), (True, True)])
def test_only_a_har_origin_sees_the_client_requests_tag(tmp_path, tag_to_origin, allowed):
    """A real origin never sees X-SPE-Request; the lab's HAR origin does (one recorded response per client
    request: spe_tools/workload/har/index.py). Squid takes the first request_header_access rule that matches."""
    text = collector_config("squid", tmp_path, 3128, {"p1": 3129}, tag_to_origin=tag_to_origin)
    rules = [line for line in text.splitlines() if line.startswith("request_header_access X-SPE-Request")]
    assert (rules[0] == "request_header_access X-SPE-Request allow all") == allowed
    assert rules[-1] == "request_header_access X-SPE-Request deny all"


def test_localhost_is_the_ipv4_loopback_whatever_etc_hosts_says(tmp_path):
    """Debian's /etc/hosts names ::1 localhost too, where the lab's origin (named localhost, listening on 127.0.0.1)
    is not: from /etc/hosts a Collector fetched every request there first and answered 503. It reads its own."""
    text = collector_config("spe", tmp_path, 3128, {"p1": 3129})
    assert f"hosts_file {tmp_path}/hosts" in text.splitlines()
    assert (tmp_path / "hosts").read_text() == "127.0.0.1 localhost\n"
