"""The Multiplier's one table of flags (multiplier/src/core/flag_table.cpp) agrees with everything that
spells a flag: its --help, the lab's command line for it (spe_tools/lab/start/bring_up.py), and the parsing of a
value of each kind (`--check` parses and validates as a start would, then exits). The lab's command
line comes from its own function, multiplier_argv, called on each shipped lab file."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, multiplier_binary

from spe_tools.lab.definition.model import load_lab
from spe_tools.process import ProcessGroup, free_port

try:  # the lab split by job (start_multiplier.py, port_plan.py)
    from spe_tools.lab.start.multiplier import multiplier_argv
    from spe_tools.lab.start.port_plan import Ports
except ImportError:  # the lab before it: runner.py
    from spe_tools.lab.start.bring_up import Ports, multiplier_argv

COLLECTOR = ["--collector", "127.0.0.1:3128"]
# The flags that need another one to be accepted at all (config.cpp, check_combinations).
NEEDS = {"ca-dir": [*COLLECTOR, "--intercept-tls"], "no-intercept": [*COLLECTOR, "--intercept-tls"],
         "leaf-validity": [*COLLECTOR, "--intercept-tls"], "parent": ["--dummy"],
         "dummy": ["--parent", "127.0.0.1:3128"], "collector": []}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(multiplier_binary()), *args], capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def table() -> list[dict]:
    listed = run("--list-flags")
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def names(table: list[dict]) -> set[str]:
    return {flag["name"] for flag in table}


def test_the_table_names_each_flag_once_with_its_kind_help_and_default(table):
    assert len(names(table)) == len(table) > 40
    for flag in table:
        assert flag["help"], flag
        assert flag["kind"] in {"action", "switch", "text", "number", "list"}, flag
        assert flag["takes_value"] == (flag["kind"] in {"text", "number", "list"}), flag
        if flag["kind"] == "number":
            assert flag["default"].isdigit(), flag
        if flag["takes_value"]:
            assert flag["example"], flag
    by_name = {flag["name"]: flag for flag in table}
    assert by_name["timeout"]["default"] == "30" and by_name["listen"]["field"] == "listen"
    assert by_name["no-cache-judge"]["field"] == "cache_judge" and not by_name["no-cache-judge"]["takes_value"]


def test_help_lists_exactly_the_flags_of_the_table(table):
    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    # "  -h [ --help ]   print ...", "  --timeout arg (=30)   time ...": an option line starts with its name.
    listed = re.findall(r"^  (?:-\w \[ )?--([a-z][a-z0-9-]*)", helped.stdout, re.MULTILINE)
    assert len(listed) == len(set(listed))
    assert set(listed) == names(table)


def lab_argv(lab_file: Path, rundir: Path) -> list[str]:
    lab = load_lab(lab_file)
    ports = Ports(origin=1, direct=2, multiplier=3, proxies={p.name: 10 + i for i, p in enumerate(lab.proxies)},
                  collector={p.name: 40 + i for i, p in enumerate(lab.proxies)}, origin_tls=4, replay=5)
    return multiplier_argv(lab, ports, rundir, multiplier_binary())[1:]


@pytest.mark.parametrize("lab_file", sorted((ROOT / "configs/labs").glob("*.toml")), ids=lambda p: p.stem)
def test_every_flag_the_lab_passes_is_in_the_table_and_its_values_parse(table, lab_file, tmp_path):
    argv = lab_argv(lab_file, tmp_path)
    passed = {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}
    assert passed and passed <= names(table), passed - names(table)
    checked = run("--check", *argv)
    assert checked.returncode == 0, (argv, checked.stderr)


def flags_of(table: list[dict], kind: str) -> list[dict]:
    return [flag for flag in table if flag["kind"] == kind]


@pytest.mark.parametrize("kind", ["text", "number", "list", "switch"])
def test_a_value_of_each_kind_round_trips_through_the_parser(table, kind):
    flags = flags_of(table, kind)
    assert flags
    for flag in flags:
        if flag["name"] == "config":
            continue  # a file of other flags: below
        value = [flag["example"]] if flag["takes_value"] else []
        checked = run("--check", *NEEDS.get(flag["name"], COLLECTOR), f"--{flag['name']}", *value)
        assert checked.returncode == 0, (flag["name"], value, checked.stderr)


@pytest.mark.parametrize(("args", "message"), [
    (["--threads", "many"], "--threads"),  # number
    (["--timeout", "soon"], "expected a duration"),  # text
    (["--proxy", "noequals"], "NAME=HOST:PORT"),  # list
    (["--dummy=yes"], "dummy"),  # switch: takes no value
])
def test_a_bad_value_of_each_kind_is_refused_with_the_flag_named(args, message):
    checked = run("--check", *COLLECTOR, *args)
    assert checked.returncode == 2
    assert message in checked.stderr


def test_a_config_file_takes_the_same_keys_for_every_kind(table, tmp_path):
    by_kind = {kind: next(f for f in flags_of(table, kind) if f["name"] not in NEEDS and f["name"] != "config")
               for kind in ("text", "number", "list", "switch")}
    lines = [f"{f['name']} = {f['example'] if f['takes_value'] else 'true'}" for f in by_kind.values()]
    conf = tmp_path / "spe.conf"
    conf.write_text("\n".join(["collector = 127.0.0.1:3128", *lines]) + "\n")
    checked = run("--check", "--config", str(conf))
    assert checked.returncode == 0, (lines, checked.stderr)
    conf.write_text("collector = 127.0.0.1:3128\nthreads = many\n")
    assert run("--check", "--config", str(conf)).returncode == 2


@pytest.mark.parametrize(("cpus", "placement"), [("0", "fan-out on the clients' threads, 1 usable CPU"),
                                                 ("0,1", "fan-out on 1 thread of its own, 2 usable CPUs")])
def test_fanout_threads_auto_follows_the_cpus_the_process_may_run_on(tmp_path, cpus, placement):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("this test needs two usable CPUs (taskset -c 0,1)")
    port = free_port()
    with ProcessGroup(tmp_path) as group:
        child = group.start("mult", ["taskset", "-c", cpus, str(multiplier_binary()), *COLLECTOR,
                                     "--listen", f"127.0.0.1:{port}"], ready_line="listening on")
        assert placement in child.log.read_text()
