"""The run directory's contract (spe_tools/rundir): its layout and lab.json as the lab writes and everyone reads it."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from conftest import ROOT

from spe_tools.collector import CollectorOptions
from spe_tools.lab.definition.model import CollectorSpec, load_lab
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.running_lab import RunningLab
from spe_tools.lab.start.topology import topology
from spe_tools.rundir import layout
from spe_tools.rundir.access_log import (
    FIELDS,
    SPE_LOGFORMAT,
    AccessRecord,
    BadLineError,
    logformat,
    parse_line,
    read_access_log,
)
from spe_tools.rundir.lab_json import DEFAULT_UNCACHEABLE_TTL_S, LabJson, ProxyOfRun
from spe_tools.rundir.layout import RunDir
from spe_tools.rundir.port_usage import parse_access_log
from spe_tools.version import describe


@pytest.fixture(autouse=True)
def no_version_queries(monkeypatch):
    """lab.json names each program's version (`squid -v`, ...): here a fixed one, with no program started."""
    monkeypatch.setattr("spe_tools.collector.version", lambda kind: "5.7")
    monkeypatch.setattr("spe_tools.lab.definition.kinds.Kind.version", lambda self: "1.0")
    monkeypatch.setattr("spe_tools.lab.start.topology._version", lambda command: "spe-multiplier 0.1")


def lab_json_of(labfile: str) -> LabJson:
    lab = load_lab(ROOT / "configs/labs" / labfile)
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={p.name: 10 + i for i, p in enumerate(lab.proxies)},
                  collector={p.name: 100 + i for i, p in enumerate(lab.proxies)}, replay=5)
    return topology(RunningLab(lab, Path("/nonexistent"), None, ports=ports))  # type: ignore[arg-type]


def test_the_layout_names_each_file_relative_to_the_run():
    run = RunDir(Path("/runs/x"))
    assert run.lab_json == Path("/runs/x/lab.json") and run.multiplier_log == Path("/runs/x/multiplier.jsonl")
    assert run.access_log == Path("/runs/x/collector/access.log") and run.output("origin") == Path("/runs/x/origin.out")
    assert run.proxy_dir("squid") == Path("/runs/x/proxies/squid")
    assert run.repro(6, "nginx") == Path("/runs/x/repro/6-nginx")
    assert run / layout.proxy_dir("squid") == run.proxy_dir("squid")


def test_lab_json_survives_a_round_trip_key_for_key():
    written = lab_json_of("default.toml").to_json()
    assert list(written) == ["name", "lab_file", "started", "spe_version", "collector", "proxies", "multiplier",
                             "origin", "workload", "noise_pairs"]
    assert written["spe_version"] == describe()  # the SPE that ran the lab
    text = json.dumps(written, indent=2)
    assert json.dumps(LabJson.from_json(json.loads(text)).to_json(), indent=2) == text


def test_lab_json_writes_optional_proxy_keys_only_where_they_apply():
    proxies = lab_json_of("default.toml").to_json()["proxies"]
    assert "prefetch" in proxies["ats"] and "prefetch" not in proxies["squid"]
    assert proxies["ats-prefetch"]["twin_of"] == "ats" and "twin_of" not in proxies["ats"]
    assert proxies["squid"]["dir"] == "proxies/squid" and proxies["squid"]["stdout"] == "squid.out"


def test_every_collector_setting_of_the_lab_file_reaches_lab_json():
    """The lab file's [collector] keys, but the port (in "ports") and the kind and CA files (written apart)."""
    written = lab_json_of("default.toml").to_json()["collector"]
    assert {f.name for f in fields(CollectorSpec)} - {"port"} <= set(written)
    assert DEFAULT_UNCACHEABLE_TTL_S == CollectorOptions.uncacheable_ttl_s


def test_an_old_or_partial_lab_json_still_loads(tmp_path):
    """Runs from before keep working: unknown keys are ignored, missing ones read as 'not said'."""
    RunDir(tmp_path).lab_json.write_text(json.dumps({"collector": {"ports": {"direct": 5000, "a": 5001}, "gone": 1},
                                                     "proxies": {"pf": {"twin_of": "a"}, "a": {}}, "extra": []}))
    read = LabJson.read(tmp_path)
    assert read is not None and read.collector.port_names() == {5000: "direct", 5001: "a"}
    assert read.collector.kind is None and not read.collector.strips_query_terms()
    assert read.twins() == {"pf": "a"} and read.proxies["a"] == ProxyOfRun() and read.noise_pairs == []
    assert LabJson.read(tmp_path / "nowhere") is None
    assert LabJson.from_json("not an object") == LabJson()


def test_the_logformat_and_the_record_come_from_one_field_list():
    assert SPE_LOGFORMAT == "%ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt %>lp %>st %{X-SPE-Request}>h"
    assert logformat(patched=True) == SPE_LOGFORMAT + " %ln"
    assert AccessRecord._fields == tuple(f.name for f in FIELDS)


LINE = "1700000000.250    120 127.0.0.1 TCP_MISS/200 5120 GET http://localhost:8080/a - HIER_DIRECT/127.0.0.1 text/html"


def test_a_line_reads_by_name():
    old = parse_line(f"{LINE} 5001 310")  # a log from before the request tag
    assert old.port == 5001 and old.bytes_received == 310 and old.request_tag is None and old.tag == ""
    assert old.code == "TCP_MISS" and old.from_origin and old.bytes_sent == 5120
    assert old.start == pytest.approx(1700000000.130)
    tagged = parse_line(f"{LINE} 5001 310 42-7 squid")
    assert tagged.tag == "42-7" and tagged.port_name == "squid" and tagged.url == "http://localhost:8080/a"
    assert parse_line(f"{LINE} 5001 310 -").tag == ""


def test_lines_without_a_request_are_skipped_and_bad_ones_counted(tmp_path):
    probe = "1700000000.250      0 127.0.0.1 NONE_NONE/000 0 - error:transaction-end-before-headers - HIER_NONE/- -" \
            " 5000 0 -"
    assert parse_line("") is None and parse_line(probe) is None
    for bad in ("too short", LINE + " port 310"):
        with pytest.raises(BadLineError):
            parse_line(bad)
    log = tmp_path / "access.log"
    log.write_text("\n".join([f"{LINE} 5001 310", probe, "too short", "", f"{LINE} 5000 300 -"]) + "\n")
    usage, bad = parse_access_log(log, {5000: "direct", 5001: "squid", 5002: "idle"})
    assert bad == 1 and usage["squid"].requests == 1 and usage["direct"].origin_urls == {"http://localhost:8080/a"}
    assert usage["idle"].requests == 0
    assert [type(r) for r in read_access_log(log)] == [AccessRecord, BadLineError, AccessRecord]


def test_the_access_log_is_read_line_by_line_as_it_was_split_whole(tmp_path, monkeypatch):
    """A week's access log is gigabytes: never read whole (read_text), and split into the same lines as before
    (str.splitlines: a form feed inside a line, a bare CR, CRLF)."""
    log = tmp_path / "access.log"
    log.write_bytes("\n".join([f"{LINE} 5001 310", f"{LINE} 5001 3\x0c10", f"{LINE} 5000 300 -\r",
                               f"{LINE} 5002 1\r{LINE} 5002 2", "\xff too short"]).encode("latin-1") + b"\n")
    expected = [type(r) for r in (parse_or_bad(line) for line in log.read_text(errors="replace").splitlines())
                if r is not None]
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("the whole access log read at once"))
    assert [type(r) for r in read_access_log(log)] == expected
    assert expected.count(AccessRecord) == 5 and expected.count(BadLineError) == 2


def parse_or_bad(line: str) -> AccessRecord | BadLineError | None:
    try:
        return parse_line(line)
    except BadLineError as bad:
        return bad
