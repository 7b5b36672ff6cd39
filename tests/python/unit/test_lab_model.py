"""The lab file: parsing, validation messages, templates, status line (pure; no process is started)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from spe_tools import collector
from spe_tools.collector import port_lines
from spe_tools.config_template import TEMPLATES, TemplateError, placeholders, render_text
from spe_tools.lab.definition.kinds import KINDS, Context
from spe_tools.lab.definition.labfile import lab_toml, write_run_lab_file
from spe_tools.lab.definition.model import PROXY_KINDS, Lab, LabFileError, ProxySpec, load_lab, parse_lab
from spe_tools.lab.start.checks import check
from spe_tools.lab.start.collector import collector_port_names, connect_ports
from spe_tools.lab.start.multiplier import multiplier_argv
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.prometheus import prometheus_argv, prometheus_config
from spe_tools.lab.start.workload import workload_argv
from spe_tools.lab.watch.status import StatusTracker, format_status

MINIMAL = '[[proxy]]\nname = "sq"\nkind = "squid"\n'


def error(text: str) -> str:
    with pytest.raises(LabFileError) as e:
        parse_lab(text)
    return str(e.value)


def test_minimal_lab_gets_defaults():
    lab = parse_lab(MINIMAL)
    assert lab.name == "lab" and lab.collector.kind == "spe" and lab.origin.host == "localhost"
    assert lab.workload.kind == "none" and lab.multiplier.mode == "sequential" and lab.multiplier.legs == "parallel"
    assert lab.proxies == (ProxySpec(name="sq", kind="squid"),)


def test_every_shipped_lab_file_parses():
    files = sorted((ROOT / "configs/labs").glob("*.toml"))
    assert any(f.name == "default.toml" for f in files)
    for path in files:
        lab = load_lab(path)
        assert lab.proxies, path


def test_default_lab_has_every_caching_proxy_kind_and_the_dummy():
    lab = load_lab(ROOT / "configs/labs/default.toml")
    kinds = [p.kind for p in lab.proxies]
    for kind in ("squid", "trafficserver", "varnish", "apache", "nginx", "dummy"):
        assert kind in kinds
    assert any(p.kind == "trafficserver" and p.prefetch for p in lab.proxies)
    assert lab.collector.kind == "spe" and lab.origin.kind == "synthetic" and lab.workload.kind != "none"


def test_the_conformance_share_reaches_the_load_client_and_the_default_lab_uses_it():
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5})
    plain = workload_argv(parse_lab('[workload]\nkind = "load"\n' + MINIMAL), ports, 10)
    assert parse_lab(MINIMAL).workload.conformance == 0 and "--conformance" not in plain
    argv = workload_argv(parse_lab('[workload]\nkind = "load"\nconformance = 0.25\n' + MINIMAL), ports, 10)
    assert argv[argv.index("--conformance") + 1] == "0.25"
    assert 0 < load_lab(ROOT / "configs/labs/default.toml").workload.conformance < 0.5


@pytest.mark.parametrize("text, expected", [
    ('[[proxy]]\nname = "x"\nkind = "squidd"\n', "unknown kind 'squidd' (known: squid, squid-prefetch, trafficserver"),
    ('[[proxy]]\nname = "x"\n', "[[proxy]] 'x': missing key 'kind'"),
    # Traffic Server 9.2 crashes at its first request with a disk cache under 16 MB
    ('[[proxy]]\nname = "t"\nkind = "trafficserver"\ncache_mb = 8\n', "'t'.cache_mb: 8 is out of range (16 to 65536)"),
    ('[[proxy]]\nname = "a"\nkind = "squid"\ncollector_limit_kbps = -1\n', "collector_limit_kbps: -1 is out of range"),
    ('[[proxy]]\nkind = "squid"\n', "[[proxy]] #1: missing key 'name'"),
    ('[[proxy]]\nname = "direct"\nkind = "squid"\n', "'direct' is reserved"),
    ('[[proxy]]\nname = "a b"\nkind = "squid"\n', "use a letter then"),
    ('[[proxy]]\nname = "x"\nkind = "squid"\ncache = 5\n', "[[proxy]] 'x': unknown key 'cache' (allowed: cache_mb"),
    ('[[proxy]]\nname = "x"\nkind = "squid"\nprefetch = true\n', "unknown key 'prefetch'"),
    ('[[proxy]]\nname = "x"\nkind = "squid"\ncache_mb = "64"\n', "cache_mb: expected an integer, got '64'"),
    ('[[proxy]]\nname = "x"\nkind = "squid"\nport = 70000\n', "port: 70000 is out of range"),
    ('[[proxy]]\nname = "x"\nkind = "external"\n', "kind 'external' needs address"),
    ('[[proxy]]\nname = "x"\nkind = "external"\naddress = "host"\n', "expected HOST:PORT, got 'host'"),
    ('[[proxy]]\nname = "x"\nkind = "squid"\n[[proxy]]\nname = "X"\nkind = "varnish"\n', "the name is used twice"),
    ('[[proxy]]\nname = "a"\nkind = "squid"\nport = 9000\n[[proxy]]\nname = "b"\nkind = "nginx"\nport = 9000\n',
     "port clash: [[proxy]] 'b'.port and [[proxy]] 'a'.port both use port 9000"),
    ('[multiplier]\nlisten = "127.0.0.1:9000"\n[[proxy]]\nname = "a"\nkind = "squid"\ncollector_port = 9000\n',
     "port clash"),
    ('[collector]\nkind = "varnish"\n' + MINIMAL, "[collector].kind: unknown kind 'varnish' (known: spe, squid)"),
    ('[collector]\nreplay_timing = 1\n' + MINIMAL, "[collector].replay_timing: expected true or false, got 1"),
    ('[origin]\nhost = "127.0.0.1"\n' + MINIMAL, "use 'localhost'"),
    ('[origin]\nkind = "none"\n[workload]\nkind = "load"\n' + MINIMAL, "needs [origin].kind = \"synthetic\""),
    ('[workload]\nkind = "builtin"\n' + MINIMAL,
     "[workload].kind: unknown kind 'builtin' (known: none, load, browse, command, replay)"),
    ('[workload]\nkind = "load"\npopularity = "zipf"\n' + MINIMAL, "[workload].popularity: popularity must be"),
    ('[workload]\nkind = "load"\nhit_ratio = 1.5\n' + MINIMAL, "[workload].hit_ratio: 1.5 is out of range"),
    ('[workload]\nkind = "load"\nconformance = 2\n' + MINIMAL, "[workload].conformance: 2 is out of range"),
    ('[origin]\nthink_mean_ms = -1\n' + MINIMAL, "[origin].think_mean_ms: -1 is out of range"),
    ('[origin]\nmodle = "m.json"\n' + MINIMAL, "[origin]: unknown key 'modle'"),
    ('[multiplier]\nmode = "parallel"\n' + MINIMAL, "unknown mode 'parallel'"),
    ('[multiplier]\nlegs = "staggered"\n' + MINIMAL, "unknown legs 'staggered'"),
    ('[multiplier]\nignore_headers = ["X-A", 3]\n' + MINIMAL, "expected a list of strings"),
    ('colector = {}\n' + MINIMAL, "top level: unknown key 'colector'"),
    ('name = "x"\n', "no proxies under test"),
    ('[[proxy]\n', "not valid TOML"),
])
def test_bad_lab_files_say_what_is_wrong(text, expected):
    assert expected in error(text)


@pytest.mark.parametrize("kind", [k for k in PROXY_KINDS if k != "external"])
def test_a_kind_takes_exactly_the_keys_it_declares(kind):
    """Each kind's keys come from its own declaration (kinds.Kind.options): given at their defaults they
    change nothing, and any other kind's key is refused with the kind's own list."""
    options = KINDS[kind].options
    given = "".join(f"{o.key} = {json.dumps(list(o.default) if isinstance(o.default, tuple) else o.default)}\n"
                    for o in options)
    assert parse_lab(MINIMAL.replace("squid", kind) + given).proxies == (ProxySpec(name="sq", kind=kind),)
    foreign = sorted({o.key for k in KINDS.values() for o in k.options} - KINDS[kind].keys - {"address"})
    for key in foreign:
        every_kinds = {"name", "kind", "collector_port", "twin_of", "collector_limit_kbps"}
        allowed = ", ".join(sorted(KINDS[kind].keys | every_kinds))
        assert error(MINIMAL.replace("squid", kind) + f"{key} = 1\n").endswith(
            f"[[proxy]] 'sq': unknown key {key!r} (allowed: {allowed})")


def test_message_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[proxy]]\nname = "x"\nkind = "polipo"\n')
    with pytest.raises(LabFileError, match=r"bad\.toml: \[\[proxy\]\] 'x'\.kind: unknown kind 'polipo'"):
        load_lab(path)
    with pytest.raises(LabFileError, match="cannot read the lab file"):
        load_lab(tmp_path / "missing.toml")


def test_external_proxy_keeps_its_address():
    lab = parse_lab('[[proxy]]\nname = "mine"\nkind = "external"\naddress = "10.0.0.5:3128"\ncollector_port = 4000\n')
    p = lab.proxies[0]
    assert (p.host, p.port, p.collector_port) == ("10.0.0.5", 3128, 4000)


def test_check_loads_the_origin_model(tmp_path):
    (tmp_path / "bad.json").write_text('{"size_mean": "big"}')
    lab = load_lab(write(tmp_path / "lab.toml", '[collector]\nkind = "squid"\n[origin]\nmodel = "bad.json"\n'
                         + MINIMAL))
    assert lab.origin.model == tmp_path / "bad.json"  # relative to the lab file
    assert any(p.startswith(f"[origin].model: {tmp_path / 'bad.json'}: ") for p in check(lab))
    lab = load_lab(write(tmp_path / "lab2.toml", '[collector]\nkind = "squid"\n[origin]\nmodel = "none.json"\n'
                         + MINIMAL))
    assert any("[origin].model" in p and "No such file" in p for p in check(lab))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_check_reports_missing_programs(monkeypatch):
    monkeypatch.setattr(type(KINDS["varnish"]), "programs", ("/nonexistent/varnishd",))
    lab = parse_lab('[collector]\nkind = "squid"\n[[proxy]]\nname = "v"\nkind = "varnish"\n')
    problems = check(lab)
    assert any("'v' (kind varnish): /nonexistent/varnishd is not installed (Debian package varnish" in p
               for p in problems), problems
    problems = check(lab, multiplier=Path("/nonexistent/spe-multiplier"))
    assert any("Multiplier /nonexistent/spe-multiplier is not built" in p for p in problems)


def test_render_refuses_unknown_placeholders():
    assert render_text("listen {{port}};", {"port": 5}) == "listen 5;"
    with pytest.raises(TemplateError, match="no value for {{dir}}"):
        render_text("{{dir}}/x", {})
    assert render_text("proxy_pass http://c$request_uri; %>lp", {}) == "proxy_pass http://c$request_uri; %>lp"


@pytest.mark.parametrize("kind", [k for k in PROXY_KINDS if k not in ("dummy", "external")])
def test_every_template_renders(kind, tmp_path):
    """Each kind renders its templates with this run's ports and paths, and nothing is left unfilled."""
    spec = ProxySpec(name="p1", kind=kind, prefetch=kind == "trafficserver")
    ctx = Context(spec=spec, dir=tmp_path / "p1", port=40001, collector_port=40002, origin_host="localhost",
                  origin_ports=[40003], as_root=False)
    ctx.dir.mkdir()
    files = KINDS[kind].render(ctx)
    argv = KINDS[kind].argv(ctx)
    assert files and argv[0] == KINDS[kind].programs[0]
    text = "\n".join(f.read_text() for f in files) + " ".join(argv)
    assert "40001" in text and "40002" in text and str(ctx.dir) in text
    assert "{{" not in text
    assert "127.0.0.1:40001" in text or "Port 40001" in text or "40001:ip-in=127.0.0.1" in text


def test_trafficserver_prefetch_variant(tmp_path):
    base = dict(name="ats", kind="trafficserver", port=0)
    for prefetch in (False, True):
        ctx = Context(spec=ProxySpec(**base, prefetch=prefetch), dir=tmp_path / str(prefetch), port=1, collector_port=2,
                      origin_host="localhost", origin_ports=[8000], as_root=False)
        ctx.dir.mkdir()
        KINDS["trafficserver"].render(ctx)
        remap = (ctx.dir / "rr/etc/remap.config").read_text()
        assert ("prefetch.so" in remap) == prefetch
        if prefetch:
            assert "map http://localhost:8000/" in remap and "cachekey.so" in remap.split("prefetch.so")[0]


def test_apache_caches_each_origin_port(tmp_path):
    ctx = Context(spec=ProxySpec(name="a", kind="apache", cache_ports=(8080,)), dir=tmp_path, port=1,
                  collector_port=2, origin_host="localhost", origin_ports=[8000], as_root=False)
    text = KINDS["apache"].render(ctx)[0].read_text()
    assert "CacheEnable disk http://:8000/" in text and "CacheEnable disk http://:8080/" in text
    assert "ProxyRemote * http://127.0.0.1:2" in text and "ProxyPass" not in text


def test_apache_gateway_passes_origin_form_to_an_accelerator_port(tmp_path):
    ctx = Context(spec=ProxySpec(name="g", kind="apache-gateway"), dir=tmp_path, port=1, collector_port=2,
                  origin_host="localhost", origin_ports=[8000], as_root=False)
    text = KINDS["apache-gateway"].render(ctx)[0].read_text()
    assert "ProxyPass / http://127.0.0.1:2/" in text and "ProxyPreserveHost On" in text
    assert "ProxyRequests On" not in text and "CacheEnable disk http://:8000/" in text
    lab = parse_lab('[[proxy]]\nname = "g"\nkind = "apache-gateway"\n')
    from spe_tools.lab.start.port_plan import Ports

    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"g": 4}, collector={"g": 7})
    assert collector_port_names(lab, ports) == {"g@accel": 7}


def test_accel_ports_for_origin_form_proxies(tmp_path):
    lab = parse_lab('[[proxy]]\nname = "v"\nkind = "varnish"\n[[proxy]]\nname = "s"\nkind = "squid"\n'
                    '[[proxy]]\nname = "n"\nkind = "nginx"\n')
    from spe_tools.lab.start.port_plan import Ports

    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"v": 4, "s": 5, "n": 6},
                  collector={"v": 7, "s": 8, "n": 9})
    names = collector_port_names(lab, ports)
    assert names == {"v@accel": 7, "s": 8, "n@accel": 9}
    conf = port_lines(names)
    assert "http_port 127.0.0.1:7 accel vhost allow-direct name=v" in conf
    assert "http_port 127.0.0.1:8 name=s" in conf
    argv = multiplier_argv(lab, ports, tmp_path, Path("/m"))
    assert argv[:5] == ["/m", "--listen", "127.0.0.1:3", "--collector", "127.0.0.1:2"]
    assert ["--proxy", "v=127.0.0.1:4"] == argv[argv.index("--proxy"):argv.index("--proxy") + 2]


def test_templates_use_only_known_placeholders():
    known = {"name", "dir", "port", "collector_port", "cache_mb", "origin_host", "origin_port", "user_line", "user",
             "ram_cache_bytes", "prefetch_pattern", "prefetch_count", "cache_enable", "direct_port", "proxy_ports",
             "client_addresses", "access_log", "max_object_bytes", "max_age_s", "parent_lines", "host", "gateway"}
    for path in TEMPLATES.rglob("*"):
        if path.is_file():
            assert placeholders(path.read_text()) <= known, path


def test_status_tracker_reads_only_complete_lines(tmp_path):
    log = tmp_path / "m.jsonl"
    rec = {"id": 1, "proxies": [{"name": "a", "result": "OK"}, {"name": "b", "result": "NO_RESPONSE"}]}
    log.write_text(json.dumps(rec) + "\n" + json.dumps(rec)[:10])
    t = StatusTracker(log)
    t.update()
    assert t.requests == 1
    with open(log, "a") as f:
        f.write(json.dumps(rec)[10:] + "\n")
    t.update()
    assert t.requests == 2 and t.results["a"]["OK"] == 2 and t.results["b"]["NO_RESPONSE"] == 2


def test_format_status():
    line = format_status(3.2, 12, 10, {"a": Counter(OK=9, BODY_MISMATCH=1), "b": Counter(NO_RESPONSE=2)}, ["a", "b"])
    assert line == "     3 s | requests 12 (+2) | a ok 9 diff 1 | b ok 0 none 2"
    # a copy of another origin fetch is no mismatch (the report's OTHER_FETCH): not under "diff"
    line = format_status(3.2, 12, 10, {"a": Counter(OK=9, OTHER_FETCH=2, HEADER_MISMATCH=1)}, ["a"])
    assert line == "     3 s | requests 12 (+2) | a ok 9 other-fetch 2 diff 1"


def ran(lab):
    """What a lab file written into a run directory describes: its paths are absolute there."""
    origin = replace(lab.origin, model=lab.origin.model.resolve() if lab.origin.model else None)
    return replace(lab, source=None, origin=origin, runs_dir=lab.runs_dir.resolve() if lab.runs_dir else None)


def test_the_run_lab_file_is_the_lab_as_it_ran(tmp_path):
    """`./spe demo` changes the lab before it runs (stock Squid, proxies left out): the run directory's
    lab.toml must describe what ran, not the file it started from."""
    for path in sorted((ROOT / "configs/labs").glob("*.toml")):
        lab = load_lab(path)
        assert ran(parse_lab(lab_toml(lab))) == ran(lab), path
    given = tmp_path / "given.toml"
    given.write_text('# my lab\nname = "mine"\n[collector]\nkind = "spe"\n[origin]\nmodel = "m.json"\n'
                     '[multiplier]\nlisten = "0.0.0.0:8080"\nignore_headers = ["X-A\\\\b"]\n'
                     '[[proxy]]\nname = "sq"\nkind = "squid"\n[[proxy]]\nname = "ext"\nkind = "external"\n'
                     'address = "10.0.0.2:3128"\ncollector_port = 3400\n')
    lab = load_lab(given)
    as_given = tmp_path / "as-given.toml"
    write_run_lab_file(lab, as_given)
    assert as_given.read_text() == given.read_text()  # unchanged: the file itself, comments and all
    adapted = replace(lab, collector=replace(lab.collector, kind="squid"), proxies=lab.proxies[1:])
    written = tmp_path / "adapted.toml"
    write_run_lab_file(adapted, written)
    again = load_lab(written)
    assert again.collector.kind == "squid" and [p.name for p in again.proxies] == ["ext"]
    assert again.origin.model == tmp_path / "m.json" and again.multiplier.ignore_headers == ("X-A\\b",)
    assert ran(again) == ran(adapted)


def test_https_keys_reach_the_origin_collector_multiplier_and_workload(tmp_path):
    source = tmp_path / "labs" / "tls.toml"
    source.parent.mkdir()
    (tmp_path / "labs" / "extra-ca.pem").write_text("")
    lab = parse_lab('[origin]\ntls = true\n[collector]\norigin_ca_files = ["extra-ca.pem"]\n'
                    '[multiplier]\nintercept_tls = true\nca_dir = "ca"\nno_intercept = ["*.bank.example"]\n'
                    '[workload]\nkind = "load"\nhttps_share = 0.25\n' + MINIMAL, source)
    assert lab.collector.origin_ca_files == (source.parent / "extra-ca.pem",)
    assert lab.multiplier.ca_dir == source.parent / "ca"
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5}, origin_tls=6)
    argv = multiplier_argv(lab, ports, tmp_path)
    assert "--intercept-tls" in argv and argv[argv.index("--ca-dir") + 1] == str((source.parent / "ca").resolve())
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--connect-port"] == ["443", "6"]
    assert argv[argv.index("--no-intercept") + 1] == "*.bank.example"
    load = workload_argv(lab, ports, 10, tmp_path)
    assert load[load.index("--tls-origin") + 1] == "localhost:6"
    assert load[load.index("--https-share") + 1] == "0.25"
    assert load[load.index("--ca-cert") + 1] == str((source.parent / "ca" / "spe-ca.pem").resolve())
    # Without interception the tunnels are opaque: the client trusts the origin's own test CA.
    opaque = replace(lab, multiplier=replace(lab.multiplier, intercept_tls=False, ca_dir=None, no_intercept=()))
    assert "--intercept-tls" not in multiplier_argv(opaque, ports, tmp_path)
    load = workload_argv(opaque, ports, 10, tmp_path)
    assert load[load.index("--ca-cert") + 1] == str(tmp_path / "origin-tls" / "origin-ca.pem")


def test_https_keys_are_checked():
    assert "need intercept_tls = true" in error('[multiplier]\nno_intercept = ["x"]\n' + MINIMAL)
    assert "only the synthetic origin serves HTTPS" in error('[origin]\nkind = "none"\ntls = true\n' + MINIMAL)
    assert "out of range" in error('[workload]\nhttps_share = 1.5\n' + MINIMAL)


def test_the_default_lab_serves_part_of_its_pages_over_https_and_intercepts_them():
    lab = load_lab(ROOT / "configs/labs/default.toml")
    assert lab.origin.tls and lab.multiplier.intercept_tls and 0 < lab.workload.https_share < 1


def test_a_run_lab_file_elsewhere_keeps_the_lab_files_relative_paths_pointing_at_the_same_files(tmp_path):
    """The run directory is not where the lab file was: copied as is, `model = "m.json"` (or CA files)
    would name files beside the run's lab.toml. Such a lab is written from the model, paths absolute."""
    (tmp_path / "labs").mkdir()
    given = tmp_path / "labs" / "given.toml"
    given.write_text('[origin]\nmodel = "m.json"\n[collector]\norigin_ca_files = ["ca.pem"]\n' + MINIMAL)
    lab = load_lab(given)
    run_copy = tmp_path / "run" / "lab.toml"
    run_copy.parent.mkdir()
    write_run_lab_file(lab, run_copy)
    again = load_lab(run_copy)
    assert again.origin.model == tmp_path / "labs" / "m.json"
    assert again.collector.origin_ca_files == (tmp_path / "labs" / "ca.pem",)


def test_twin_of_names_another_proxy_of_the_lab():
    lab = parse_lab(MINIMAL + '[[proxy]]\nname = "sq2"\nkind = "squid"\ntwin_of = "sq"\n')
    assert lab.proxy("sq2").twin_of == "sq" and lab.proxy("sq").twin_of == ""
    assert "is not another proxy" in error(MINIMAL + '[[proxy]]\nname = "sq2"\nkind = "squid"\ntwin_of = "nope"\n')
    assert "is not another proxy" in error(MINIMAL.replace('kind = "squid"\n', 'kind = "squid"\ntwin_of = "sq"\n'))
    assert 'twin_of = "sq"' in lab_toml(lab)


def test_a_collector_without_delay_pools_is_named_before_the_lab_starts(monkeypatch):
    """Squid without delay pools accepts delay_pools and ignores it: the lab must not run unpaced unawares."""
    monkeypatch.setattr(collector, "missing", lambda kind: [])  # the patched Collector, built here or not
    monkeypatch.setattr(collector, "has_delay_pools", lambda kind: False)
    problems = check(parse_lab('[[proxy]]\nname = "paced"\nkind = "dummy"\ncollector_limit_kbps = 64\n'
                               '[[proxy]]\nname = "free"\nkind = "dummy"\n'))
    assert any("'paced'.collector_limit_kbps: this Collector was built without delay pools" in p for p in problems)


@pytest.mark.parametrize("multiplier, expected", [
    ("", (443,)),  # the Multiplier's default
    ('intercept_tls = true\nca_dir = "ca"\n', (443, 6)),  # 443 and the lab's HTTPS origin
    ('extra_args = ["--connect-port", "8443"]\n', (8443,)),  # a --connect-port replaces the default
    ('intercept_tls = true\nca_dir = "ca"\nextra_args = ["--connect-port=8443", "--connect-port", "443"]\n',
     (443, 6, 8443)),
    ('extra_args = ["--config", "m.conf"]\n', (8443, 563)),  # a config file's connect-port lines
    ('extra_args = ["--config=m.conf", "--connect-port", "9443"]\n', (9443,)),  # flags win over the file
    ('intercept_tls = true\nca_dir = "ca"\nextra_args = ["--config", "m.conf"]\n', (443, 6)),  # the lab's flags too
])
def test_the_lab_gives_the_collector_the_multipliers_connect_ports(tmp_path, multiplier, expected):
    """The Collector refuses CONNECT to any port outside the Multiplier's list (real_proxies/
    test_connect_authority.py): both get the same list."""
    (tmp_path / "m.conf").write_text("# the Multiplier's own options\nconnect-port = 8443\nconnect-port=563  # nntps\n")
    lab = parse_lab(f'[origin]\ntls = true\n[multiplier]\n{multiplier}'
                    '[[proxy]]\nname = "sq"\nkind = "squid"\n', tmp_path / "lab.toml")
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5}, origin_tls=6)
    assert connect_ports(lab, ports) == expected
    argv = multiplier_argv(lab, ports, tmp_path)
    # what the Multiplier takes: its flags, else the file's lines (its --config path is the lab file's, resolved)
    listed = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--connect-port"]
    listed += [int(a.split("=")[1]) for a in argv if a.startswith("--connect-port=")]
    if not listed and any(a.startswith("--config") for a in argv):
        listed = [8443, 563]
        assert str(tmp_path / "m.conf") in " ".join(argv)
    assert tuple(dict.fromkeys(listed or [443])) == expected


def test_the_bounds_on_how_far_the_client_runs_ahead_are_lab_keys(tmp_path):
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"dummy": 4}, collector={"dummy": 5})
    argv = multiplier_argv(parse_lab(DUMMY), ports, tmp_path)
    assert not {"--max-fanout-backlog", "--max-queued-legs", "--turn-timeout", "--order-wait"} & set(argv)
    lab = parse_lab('[multiplier]\nmax_fanout_backlog = 0\nmax_queued_legs = 8\nturn_timeout_s = 2.5\n'
                    'order_wait_s = 0.5\n' + DUMMY)
    argv = multiplier_argv(lab, ports, tmp_path)
    flags = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    assert (flags["--max-fanout-backlog"], flags["--max-queued-legs"], flags["--turn-timeout"],
            flags["--order-wait"]) == ("0", "8", "2.5", "0.5")
    assert parse_lab(lab_toml(lab)).multiplier == lab.multiplier
    with pytest.raises(LabFileError, match=r"turn_timeout_s"):
        parse_lab('[multiplier]\nturn_timeout_s = 0\n' + DUMMY)
    with pytest.raises(LabFileError, match=r"order_wait_s"):
        parse_lab('[multiplier]\norder_wait_s = 0\n' + DUMMY)


def test_a_config_file_the_multiplier_cannot_read_is_the_lab_files_mistake(tmp_path):
    with pytest.raises(LabFileError, match=r"extra_args: --config nowhere.conf: no such file"):
        parse_lab('[multiplier]\nextra_args = ["--config", "nowhere.conf"]\n' + DUMMY, tmp_path / "lab.toml")


DUMMY = '[[proxy]]\nname = "dummy"\nkind = "dummy"\n[origin]\nthink_mean_ms = 0\n'


def command(*words: str) -> str:
    return "[workload]\nkind = \"command\"\ncommand = " + json.dumps(list(words)) + "\n"


def test_command_workloads_are_checked_when_the_file_is_read():
    """[workload] kind = "command" (a lab running one: real_proxies/test_lab_command_workload.py)."""
    assert 'kind "command" needs the program' in error('[workload]\nkind = "command"\n' + DUMMY)
    assert "unknown placeholder {proxyy}" in error(command("wrk", "{proxyy}") + DUMMY)
    assert "only for kind" in error('[workload]\nkind = "load"\ncommand = ["x"]\n' + DUMMY)
    assert "need [origin].kind" in error(command("wrk", "{origin_url}") + '[[proxy]]\nname = "d"\nkind = "dummy"\n'
                                         '[origin]\nkind = "none"\n')
    assert "needs [origin].tls" in error(command("x", "{tls_origin}") + DUMMY)
    lab = parse_lab(command("polygraph-client", "--proxy", "{proxy}", "--origin", "{origin}") + DUMMY)
    assert lab.workload.command == ("polygraph-client", "--proxy", "{proxy}", "--origin", "{origin}")
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"dummy": 4}, collector={"dummy": 5})
    assert workload_argv(lab, ports, 60, Path("/r")) == ["polygraph-client", "--proxy", "127.0.0.1:3",
                                                         "--origin", "localhost:1"]
    braces = parse_lab(command("sh", "-c", "echo ${{HOME}} {{}} {duration_s}") + DUMMY)
    assert workload_argv(braces, ports, 7.5, Path("/r"))[-1] == "echo ${HOME} {} 7.5"


# Squid with its link-prefetching agent under browsing users, no robots (such a lab running:
# real_proxies/test_lab_squid_prefetch.py).
PREFETCH_LAB = ('[workload]\nkind = "load"\nrate = 0\nusers = 4\n'
                '[[proxy]]\nname = "linkpf"\nkind = "squid-prefetch"\nprefetch_depth = 1\nprefetch_rate = 200\n')


def test_the_squid_prefetch_kinds_keys_are_checked():
    lab = parse_lab(PREFETCH_LAB)
    assert lab.proxy("linkpf").prefetch_depth == 1 and lab.proxy("linkpf").prefetch_rate == 200
    with pytest.raises(LabFileError, match="prefetch_depth: 9 is out of range"):
        parse_lab(PREFETCH_LAB.replace("prefetch_depth = 1", "prefetch_depth = 9"))
    with pytest.raises(LabFileError, match="unknown key 'prefetch_depth'"):
        parse_lab(PREFETCH_LAB.replace('kind = "squid-prefetch"', 'kind = "squid"'))
    with pytest.raises(LabFileError, match="users: only for kind"):
        parse_lab(PREFETCH_LAB.replace('kind = "load"', 'kind = "browse"'))
    with pytest.raises(LabFileError, match="rate: 0 leaves the load client nothing to do"):
        parse_lab(PREFETCH_LAB.replace("users = 4", "users = 0"))


def test_metrics_listen_is_off_by_default_and_reaches_the_multiplier(tmp_path):
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5}, metrics=9464)
    assert "--metrics-listen" not in multiplier_argv(parse_lab(MINIMAL), ports, tmp_path)
    lab = parse_lab('[multiplier]\nmetrics_listen = "127.0.0.1:0"\n' + MINIMAL)
    assert lab.multiplier.metrics_address == ("127.0.0.1", 0)
    argv = multiplier_argv(lab, ports, tmp_path)
    assert argv[argv.index("--metrics-listen") + 1] == "127.0.0.1:9464"
    assert "expected HOST:PORT" in error('[multiplier]\nmetrics_listen = "9464"\n' + MINIMAL)


def test_prometheus_needs_metrics_listen():
    assert "prometheus = true needs metrics_listen" in error('[multiplier]\nprometheus = true\n' + MINIMAL)
    lab = parse_lab('[multiplier]\nmetrics_listen = "127.0.0.1:0"\nprometheus = true\n' + MINIMAL)
    assert lab.multiplier.prometheus and not parse_lab(MINIMAL).multiplier.prometheus


def test_the_runs_prometheus_scrapes_the_multiplier_every_second(tmp_path):
    config = json.loads(prometheus_config("lab", "20261126-run", "127.0.0.1:9464"))
    (job,) = config["scrape_configs"]
    assert config["global"]["scrape_interval"] == "1s" and job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [{"targets": ["127.0.0.1:9464"], "labels": {"lab": "lab", "run": "20261126-run"}}]
    argv = prometheus_argv(tmp_path, 9090)
    assert f"--storage.tsdb.path={tmp_path / 'data'}" in argv and "--web.listen-address=127.0.0.1:9090" in argv


def replay_lab(tmp_path: Path, files: list[str], origin: str = "") -> Lab:
    """A lab replaying `files` (beside its lab file, in labs/), its [origin] table as given."""
    source = tmp_path / "labs" / "replay.toml"
    source.parent.mkdir(exist_ok=True)
    return parse_lab(f'[workload]\nkind = "replay"\nspeed = 2\nfiles = {json.dumps(files)}\n{origin}' + MINIMAL,
                     source)


def test_a_replay_workload_sends_its_recordings_through_the_multiplier(tmp_path):
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5})
    lab = replay_lab(tmp_path, ["a.har", "sub/b.HAR"])
    assert lab.workload.files == (tmp_path / "labs" / "a.har", tmp_path / "labs" / "sub" / "b.HAR")
    argv = workload_argv(lab, ports, 30)
    assert argv[1:5] == ["-m", "spe_tools.workload.replay", str(tmp_path / "labs" / "a.har"),
                         str(tmp_path / "labs" / "sub" / "b.HAR")]
    assert argv[argv.index("--via") + 1] == "127.0.0.1:3" and argv[argv.index("--speed") + 1] == "2"
    assert argv[argv.index("--duration") + 1] == "30" and "--json" in argv
    # HAR files ask the HAR origin (which serves every recorded host); with the synthetic one, their own URLs
    assert "--origin" not in argv
    har_origin = replace(lab, origin=replace(lab.origin, kind="har"))
    argv = workload_argv(har_origin, ports, 30)
    assert argv[argv.index("--origin") + 1] == "localhost:1"
    # An access log's hosts become the synthetic origin's, as ./spe replay --origin does
    log = workload_argv(replay_lab(tmp_path, ["access.log"]), ports, 30)
    assert log[3] == str(tmp_path / "labs" / "access.log") and log[log.index("--origin") + 1] == "localhost:1"
    assert "--origin" not in workload_argv(replay_lab(tmp_path, ["access.log"], '[origin]\nkind = "none"\n'), ports, 30)


def test_a_replay_workloads_files_are_checked(tmp_path):
    assert 'kind "replay" needs the recordings' in error('[workload]\nkind = "replay"\n' + MINIMAL)
    assert "only for kind" in error('[workload]\nkind = "load"\nfiles = ["a.har"]\n' + MINIMAL)
    assert "cannot be replayed together" in error('[workload]\nkind = "replay"\nfiles = ["a.har", "b.log"]\n' + MINIMAL)
    assert "one access log at a time" in error('[workload]\nkind = "replay"\nfiles = ["a.log", "b.log"]\n' + MINIMAL)
    assert "out of range" in error('[workload]\nkind = "replay"\nfiles = ["a.har"]\nspeed = 0\n' + MINIMAL)
    lab = replay_lab(tmp_path, ["gone.har", "bad.har", "good.har"])
    (tmp_path / "labs" / "bad.har").write_text("{}")
    (tmp_path / "labs" / "good.har").write_text('{"log": {"entries": []}}')
    problems = [p for p in check(lab) if p.startswith("[workload]")]
    assert problems == [f"[workload].files: {tmp_path / 'labs' / 'gone.har'} is not a file",
                        f"[workload].files: {tmp_path / 'labs' / 'bad.har'}: no log.entries (is it a HAR file?)"]


def test_a_replay_labs_run_file_names_the_same_recordings(tmp_path):
    lab = replay_lab(tmp_path, ["a.har"])
    run_copy = tmp_path / "run" / "lab.toml"
    run_copy.parent.mkdir()
    write_run_lab_file(lab, run_copy)
    again = load_lab(run_copy)
    assert again.workload.files == (tmp_path / "labs" / "a.har",) and again.workload.speed == 2


def test_fanout_threads_takes_a_count_or_auto_as_documented(tmp_path):
    """docs/lab-file.md gives "auto" as the default: written out, it is the Multiplier's own choice (no flag)."""
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 10}, collector={"sq": 100}, replay=5)

    def argv(value: str) -> list[str]:
        return multiplier_argv(parse_lab(f"[multiplier]\nfanout_threads = {value}\n" + MINIMAL), ports, tmp_path)

    assert "--fanout-threads" not in argv('"auto"')
    given = argv("0")
    assert given[given.index("--fanout-threads") + 1] == "0"
    assert 'expected an integer or "auto", got \'many\'' in error('[multiplier]\nfanout_threads = "many"\n' + MINIMAL)
    assert "out of range" in error("[multiplier]\nfanout_threads = 65\n" + MINIMAL)


def test_a_lab_load_and_the_load_command_share_each_default():
    """One default per setting: a lab's [workload] key left out is what `./spe load` does without its flag."""
    from spe_tools.workload.load import build_parser

    command = build_parser().parse_args(["--origin", "127.0.0.1:1", "--rate", "1", "--duration", "1"])
    lab = parse_lab('[workload]\nkind = "load"\n' + MINIMAL).workload
    assert lab.popularity == command.popularity
