"""Several Multipliers in one lab ([[multiplier]]): client groups sharing the Collector and the proxies under test.
The file's checks, each Multiplier's command line and workload, and the Collector's routing of each proxy's unsafe
copy to the replay port of the Multiplier that sent it (pure; no process is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spe_tools import collector
from spe_tools.lab.definition.labfile import lab_toml
from spe_tools.lab.definition.model import LabFileError, parse_lab
from spe_tools.lab.start.multiplier import multiplier_argv
from spe_tools.lab.start.multipliers import lab_multipliers
from spe_tools.lab.start.port_plan import MultiplierPorts, Ports
from spe_tools.lab.start.workload import workload_argv

PROXY = '[[proxy]]\nname = "sq"\nkind = "squid"\n'
TWO = ('[[multiplier]]\nname = "east"\nlisten = "127.0.0.1:0"\n'
       '[[multiplier]]\nname = "west"\ntimeout_s = 5\n[workload]\nkind = "load"\nseed = 7\n' + PROXY)


def ports() -> Ports:
    return Ports(origin=1, direct=2, multiplier=3, proxies={"sq": 4}, collector={"sq": 5}, replay=6,
                 others={"west": MultiplierPorts(listen=13, replay=16)})


def error(text: str) -> str:
    with pytest.raises(LabFileError) as e:
        parse_lab(text)
    return str(e.value)


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_two_multiplier_tables_are_two_named_multipliers_the_first_the_runs_own():
    lab = parse_lab(TWO)
    assert [m.name for m in lab.multipliers] == ["east", "west"] and lab.multiplier.name == "east"
    assert lab.other_multipliers[0].timeout_s == 5
    assert parse_lab(lab_toml(lab)) == lab  # the run's lab.toml starts the same lab again
    one = parse_lab('[multiplier]\nname = "solo"\n' + PROXY)
    assert one.multipliers == (one.multiplier,) and one.multiplier.name == "solo"


@pytest.mark.parametrize(("text", "message"), [
    ('[[multiplier]]\nname = "a"\n[[multiplier]]\ntimeout_s = 3\n', "[[multiplier]] #2: missing key 'name'"),
    ('[[multiplier]]\nname = "a"\n[[multiplier]]\nname = "A"\n', "[[multiplier]] 'A': the name is used twice"),
    ('[[multiplier]]\nname = "a b"\n', "[[multiplier]] 'a b'.name: use a letter"),
    ('[[multiplier]]\nname = "a"\n[[multiplier]]\nname = "b"\nintercept_tls = true\n',
     "[[multiplier]] 'b'.intercept_tls: differs from the first Multiplier's"),
    ('[[multiplier]]\nname = "a"\n[[multiplier]]\nname = "b"\nmetrics_listen = "127.0.0.1:0"\nprometheus = true\n',
     "[[multiplier]] 'b'.prometheus: only the first Multiplier's counters are scraped"),
    ('[[multiplier]]\nname = "a"\nlisten = "127.0.0.1:9000"\n[[multiplier]]\nname = "b"\nlisten = "127.0.0.1:9000"\n',
     "port clash: [[multiplier]] 'b'.listen and [[multiplier]] 'a'.listen both use port 9000"),
    ('[[multiplier]]\nname = "a"\nmode = "fast"\n', "[[multiplier]] 'a'.mode: unknown mode 'fast'"),
    ("multiplier = []\n", "[[multiplier]]: an empty list"),
])
def test_the_files_mistakes_name_the_multiplier(text, message):
    assert message in error(text + PROXY)


def test_each_multiplier_listens_logs_and_tags_on_its_own_and_names_itself(tmp_path: Path):
    lab = parse_lab(TWO)
    east, west = lab_multipliers(lab, ports(), tmp_path)
    first = multiplier_argv(lab, ports(), tmp_path, Path("/m"), east)
    second = multiplier_argv(lab, ports(), tmp_path, Path("/m"), west)
    assert first == multiplier_argv(lab, ports(), tmp_path, Path("/m"))  # the first is the default
    assert (flag(first, "--listen"), flag(second, "--listen")) == ("127.0.0.1:3", "127.0.0.1:13")
    assert (flag(first, "--replay-listen"), flag(second, "--replay-listen")) == ("127.0.0.1:6", "127.0.0.1:16")
    assert flag(first, "--log") == str(tmp_path / "multiplier.jsonl")
    assert flag(second, "--log") == str(tmp_path / "multipliers/west/multiplier.jsonl")
    assert flag(second, "--capture-dir") == str(tmp_path / "multipliers/west/captures")
    assert (flag(first, "--name"), flag(second, "--name")) == ("east", "west")
    assert (flag(first, "--tag-prefix"), flag(second, "--tag-prefix")) == ("m1", "m2")
    assert flag(second, "--timeout") == "5" and flag(second, "--collector") == "127.0.0.1:2"
    assert west.process("multiplier") == "multipliers/west/multiplier" and east.process("workload") == "workload"


def test_one_multiplier_has_no_tag_prefix_and_its_hosts_name():
    argv = multiplier_argv(parse_lab(PROXY), ports(), Path("/r"), Path("/m"))
    assert "--tag-prefix" not in argv and "--name" not in argv


def test_each_client_group_goes_through_its_own_multiplier_with_its_own_seed(tmp_path: Path):
    lab = parse_lab(TWO)
    east, west = lab_multipliers(lab, ports(), tmp_path)
    first, second = (workload_argv(lab, ports(), 10, tmp_path, which) for which in (east, west))
    assert (flag(first, "--via"), flag(second, "--via")) == ("127.0.0.1:3", "127.0.0.1:13")
    assert (flag(first, "--seed"), flag(second, "--seed")) == ("7", "8")


def test_the_collector_sends_each_unsafe_copy_to_the_replay_port_of_its_tags_multiplier(tmp_path: Path):
    conf = collector.collector_config("squid", tmp_path, 2, {"sq": 5}, replay_routes=(("m1", 6), ("m2", 16)))
    assert "acl spe_tag_m1 req_header X-SPE-Request ^m1\\." in conf
    for prefix, port in (("m1", 6), ("m2", 16)):
        assert f"cache_peer 127.0.0.1 parent {port} 0 no-query no-digest no-netdb-exchange name=spe_replay_{prefix}" \
            in conf
        assert f"cache_peer_access spe_replay_{prefix} allow spe_tag_{prefix}\n" \
               f"cache_peer_access spe_replay_{prefix} deny all" in conf
    assert " default name=" not in conf  # no copy goes to a Multiplier by default: only by its tag
    assert "never_direct allow !spe_direct_port !spe_safe_methods" in conf
    with pytest.raises(ValueError):
        collector.tagged_replay_rules((("m.1", 6),))
