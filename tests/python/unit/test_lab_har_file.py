"""A lab whose origin serves recordings: [origin] kind = "har" parsed and validated, its files checked by
`./spe lab check`, its command line, the Collector's destinations and the run's lab.toml (pure; nothing starts)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from har_site import write_site

from spe_tools.lab.definition.labfile import lab_toml
from spe_tools.lab.definition.model import LabFileError, load_lab, parse_lab
from spe_tools.lab.start.checks import check
from spe_tools.lab.start.collector import lab_destinations, strip_query_terms
from spe_tools.lab.start.origin import START_S, origin_argv, ready_deadline_s
from spe_tools.lab.start.port_plan import Ports
from spe_tools.lab.start.workload import workload_argv

PROXY = '[[proxy]]\nname = "sq"\nkind = "squid"\n'
PORTS = Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5})


def har_lab(tmp_path: Path, origin: str = "", workload: str = "") -> Path:
    (tmp_path / "rec").mkdir(exist_ok=True)
    write_site(tmp_path / "rec" / "site.har")
    path = tmp_path / "lab.toml"
    path.write_text(f'[origin]\nkind = "har"\nhar = ["rec/site.har"]\n{origin}{workload}' + PROXY)
    return path


def error(text: str) -> str:
    with pytest.raises(LabFileError) as e:
        parse_lab(text)
    return str(e.value)


def test_the_recordings_are_relative_to_the_lab_file_and_reach_the_har_origin(tmp_path):
    lab = load_lab(har_lab(tmp_path, "think_scale = 0.5\n"))
    assert lab.origin.kind == "har" and lab.origin.har == (tmp_path / "rec" / "site.har",)
    assert origin_argv(lab, PORTS, tmp_path / "run") == [
        sys.executable, "-m", "spe_tools.workload.har_origin", "--listen", "127.0.0.1:1",
        str(tmp_path / "rec" / "site.har"), "--think-scale", "0.5"]
    assert "--think-scale" not in origin_argv(load_lab(har_lab(tmp_path)), PORTS, tmp_path / "run")


def test_the_collector_fetches_only_from_the_lab_origin_and_logs_its_queries(tmp_path):
    lab = load_lab(har_lab(tmp_path))
    assert lab_destinations(lab) == ("localhost", "127.0.0.1") and not strip_query_terms(lab)


def test_a_command_workload_gets_the_origin_and_a_generated_one_is_refused(tmp_path):
    command = '[workload]\nkind = "command"\ncommand = ["curl", "{origin_url}/_har/https/shop.example/"]\n'
    lab = load_lab(har_lab(tmp_path, workload=command))
    assert workload_argv(lab, PORTS, 10) == ["curl", "http://localhost:1/_har/https/shop.example/"]
    with pytest.raises(LabFileError, match="needs \\[origin\\].kind = \"synthetic\""):
        load_lab(har_lab(tmp_path, workload='[workload]\nkind = "load"\n'))


@pytest.mark.parametrize("origin, message", [
    ('kind = "har"\n', "[origin].har: kind \"har\" needs the recordings it serves"),
    ('kind = "har"\nhar = "site.har"\n', "[origin].har: expected a list"),
    ('har = ["site.har"]\n', "[origin].har: only for kind = \"har\""),
    ('think_scale = 2\n', "[origin].think_scale: only for kind = \"har\""),
    ('kind = "har"\nhar = ["site.har"]\nthink_scale = -1\n', "[origin].think_scale: -1 is out of range"),
    ('kind = "har"\nhar = ["site.har"]\nthink_mean_ms = 5\n', "[origin].think_mean_ms: only for the synthetic"),
    ('kind = "har"\nhar = ["site.har"]\nmodel = "m.json"\n', "[origin].model: only for the synthetic"),
    ('kind = "har"\nhar = ["site.har"]\ntls = true\n', "only the synthetic origin serves HTTPS"),
    ('kind = "har"\nhar = ["site.har"]\nhost = "127.0.0.1"\n', "use 'localhost'"),
])
def test_mistakes_are_named(origin, message):
    assert message in error(f"[origin]\n{origin}" + PROXY)


def test_the_origin_gets_time_to_read_large_recordings(tmp_path):
    lab = load_lab(har_lab(tmp_path))
    with open(tmp_path / "rec" / "site.har", "r+b") as f:
        f.truncate(60 * 2**20)  # a 60 MB file that takes no disk (only its size is looked at)
    assert ready_deadline_s(lab) == START_S + 2  # 30 MB a second
    assert ready_deadline_s(replace(lab, origin=replace(lab.origin, kind="synthetic", har=()))) == START_S


def test_check_reads_each_recording(tmp_path):
    lab = load_lab(har_lab(tmp_path))
    assert not [p for p in check(lab) if p.startswith("[origin]")]
    (tmp_path / "notes.har").write_text('{"log": {}}')
    broken = replace(lab, origin=replace(lab.origin, har=(tmp_path / "none.har", tmp_path / "notes.har")))
    assert [p for p in check(broken) if p.startswith("[origin]")] == [
        f"[origin].har: {tmp_path / 'none.har'} is not a file",
        f"[origin].har: {tmp_path / 'notes.har'}: no log.entries (is it a HAR file?)"]


def test_the_run_lab_file_names_the_recordings_absolute(tmp_path):
    lab = load_lab(har_lab(tmp_path, "think_scale = 0\n"))
    text = lab_toml(lab)
    assert f'har = ["{tmp_path / "rec" / "site.har"}"]' in text
    assert replace(parse_lab(text), source=None) == replace(lab, source=None)
    synthetic = parse_lab(PROXY)  # its run file says har = [], which reads back as no recordings
    assert replace(parse_lab(lab_toml(synthetic)), source=None) == synthetic
