"""The cache-judge benchmark's pure parts: the upstreams' stamps (nginx maps), the per-round ratios, the
judge's rows in callgrind's tables and what its log check counts."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench import cache_judge


def nginx_map(entries: str, value: str) -> str | None:
    """What an nginx map of regex entries ('"~re" "result";' lines) gives for `value`: the first match,
    with $1 and $name captures put in (PCRE's (?<name>) is Python's (?P<name>))."""
    for pattern, result in re.findall(r'"~(.*?)" "(.*?)";', entries):
        m = re.search(pattern.replace("\\\\", "\\").replace("(?<", "(?P<"), value)
        if m:
            return re.sub(r"\$\{?(\w+)\}?", lambda v, m=m: m.group(int(v.group(1)) if v.group(1).isdigit()
                                                                    else v.group(1)), result)
    return None


@pytest.mark.parametrize("number", ["1", "42", "1234567"])
def test_the_serial_parts_are_padded_to_a_fixed_width_so_each_reply_has_its_own_serial(number):
    assert nginx_map(cache_judge.pad_map(7), number) == number.rjust(7, "0")


def test_a_proxys_copy_is_fetched_at_the_start_of_the_current_100_s_and_its_age_says_so():
    maps = cache_judge.render_text(cache_judge.PAD_MAPS, {"conn": "", "req": ""})
    fetched = next(line for line in maps.splitlines() if "$spe_fetched" in line)
    age = next(line for line in maps.splitlines() if "$spe_age" in line)
    assert nginx_map(fetched, "1732412345.123") == "1732412300.123"
    assert nginx_map(age, "1732412345.123") == "45"
    assert nginx_map(age, "1732412307.999") == "7"
    assert nginx_map(age, "1732412300.001") == "0"


def test_a_proxys_copy_of_a_url_is_a_new_fetch_each_100_s_so_its_serial_never_names_two_fetch_times():
    # The same serial with a new time looks, to the judge, like its first fetch served too young (age
    # violations, with evidence: a costlier case than the one measured).
    maps = cache_judge.render_text(cache_judge.PAD_MAPS, {"conn": "", "req": ""})
    window = next(line for line in maps.splitlines() if "$spe_window" in line)
    assert nginx_map(window, "1732412345.123") == "17324123"
    assert nginx_map(window, "1732412399.999") == "17324123"
    assert nginx_map(window, "1732412400.000") == "17324124"
    proxy = cache_judge.upstream_servers([1001, 1002], Path("/www")).split("    server {")[2]
    assert f'"{cache_judge.COLLECTOR_ID}.$spe_window$spe_copy; t=$spe_fetched"' in proxy


def test_the_reference_is_a_fresh_fetch_and_every_proxy_a_reuse_with_the_same_collector_id():
    body = cache_judge.upstream_servers([1001, 1002, 1003, 1004, 1005], Path("/www"))
    servers = body.split("    server {")[1:]
    assert len(servers) == 5
    assert "t=$msec" in servers[0] and "$http_x_spe_request" in servers[0] and "Age" not in servers[0]
    for server in servers[1:]:
        assert f'"{cache_judge.COLLECTOR_ID}.$spe_window$spe_copy; t=$spe_fetched"' in server  # one per URL
        assert '"some-old-tag"' in server and "add_header Age $spe_age always;" in server
    assert all("max-age=600" in s and "Vary" in s for s in servers)


def test_the_wrk_script_asks_for_each_url_in_turn():
    script = cache_judge.wrk_script(8080, 3)
    assert "n = (n + 1) % 3" in script and '"http://127.0.0.1:8080/1k?v=" .. n' in script


def run(build, rnd, cpu, rps=1000.0, p50=100.0, p99=200.0):
    return {"build": build, "round": rnd, "cpu_us": cpu, "rps": rps, "p50": p50, "p99": p99}


def test_ratios_pair_the_builds_of_the_same_round_and_skip_an_unpaired_round():
    runs = [run("judge", 0, 110), run("no-judge", 0, 100), run("no-judge", 1, 50), run("judge", 1, 60, rps=800),
            run("judge", 2, 999)]
    ratios = cache_judge.round_ratios(runs)
    assert ratios["cpu_us"] == pytest.approx([1.1, 1.2])
    assert ratios["rps"] == pytest.approx([1.0, 0.8])


def test_the_control_is_paired_with_the_judge_of_its_round():
    runs = [run("judge", 0, 110), run("no-judge", 0, 100), run(cache_judge.CONTROL, 0, 100),
            run(cache_judge.CONTROL, 1, 50), run("judge", 1, 55)]
    assert cache_judge.round_ratios(runs, ("judge", cache_judge.CONTROL))["cpu_us"] == pytest.approx([1.1, 1.1])
    assert cache_judge.round_ratios(runs)["cpu_us"] == pytest.approx([1.1])  # round 1 has no no-judge


def test_each_build_takes_each_place_in_the_order_over_as_many_rounds_as_builds():
    orders = [cache_judge.round_order(rnd) for rnd in range(len(cache_judge.MEASURED))]
    assert all(sorted(o) == sorted(cache_judge.MEASURED) for o in orders)
    for place in range(len(cache_judge.MEASURED)):
        assert sorted(o[place] for o in orders) == sorted(cache_judge.MEASURED)


ROWS = [
    (5000, "/work/main/multiplier/src/cache_rules.cpp:spe::freshness(spe::ReuseQuestion const&) [/x/spe-multiplier]"),
    (900, "/work/main/multiplier/src/http_date.cpp:spe::parse_http_date(std::basic_string_view<char>) [/x/m]"),
    (7000, "/work/main/multiplier/src/result_log.cpp:spe::ResultLog::write(spe::RequestRecord const&) [/x/m]"),
    (40, "/usr/include/c++/12/bits/basic_string.h:spe::CacheJudge::judge(spe::RequestRecord&, std::string_view)"),
    (8000, "/work/main/multiplier/src/cache_judge.cpp:spe::CacheJudge::judge(spe::RequestRecord&, std::string_view)"
           " [/x/m]"),
]


def test_the_judges_own_functions_are_those_of_its_files_most_first():
    own = cache_judge.judge_functions(ROWS)
    assert [cost for cost, _ in own] == [8000, 5000, 900]
    assert cache_judge.short_function(own[0][1]) == "cache_judge.cpp: spe::CacheJudge::judge()"


def test_an_entry_point_counts_once_with_its_main_row():
    costs = cache_judge.entry_point_costs(ROWS)
    assert costs["CacheJudge::judge (at the end of each fan-out: every verdict)"] == 8000
    assert costs["↳ parse_http_date (Date, Last-Modified, Expires; once per fetch)"] == 900
    assert costs["take_cache_headers (copying the fields off each reply)"] == 0  # not in these rows


def test_the_log_check_counts_what_the_judge_saw(tmp_path):
    verdict = {"provenance": "origin", "reused": False, "violations": [], "conservative": "passed on: vary"}
    leg = {"result": "OK", "cache": {"provenance": "unknown", "reused": True,
                                     "violations": [{"rule": "age", "section": "4", "reason": "x"}]}}
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"collector": {"cache": verdict}, "proxies": [leg, leg]}) + "\n"
                           for _ in range(3)))
    facts = cache_judge.log_facts(log, limit=2)
    assert facts["records"] == 2
    assert facts["collector"] == {"origin": 2} and facts["proxy_reused"] == {"reused": 4}
    assert facts["violations"] == {"age": 4} and facts["conservative"] == {"passed on: vary": 2}


def test_a_violation_after_the_records_read_is_still_counted_and_reported(tmp_path):
    # The records past the limit are not parsed, only looked through for a violation (as the Multiplier
    # writes them: compact, and the key only when there is one).
    clean = {"collector": {"cache": {"provenance": "origin", "reused": False}}, "proxies": [{"result": "OK"}]}
    bad = {"collector": {"cache": {"provenance": "origin", "reused": False,
                                   "violations": [{"rule": "age", "section": "4.2.3", "reason": "x"}]}},
           "proxies": [{"result": "OK"}]}
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in (clean, clean, clean, bad, clean)))
    facts = cache_judge.log_facts(log, limit=2)
    assert facts["records"] == 2 and not facts["violations"]
    assert facts["later"] == 3 and facts["later_with_violations"] == 1
    facts_of = {b: {**facts, "violations": Counter()} for b in cache_judge.MEASURED}
    facts_of["judge"] = {**facts, "collector": Counter(origin=2), "proxy_reused": Counter(reused=8)}
    assert any("judge: 1 of the 3 records after" in p for p in cache_judge.problems([], facts_of))


def test_the_tables_fill_up_to_their_bound():
    assert cache_judge.table_entries(1000, 70000) == {"fetches": 2000, "urls": 1000, "deliveries": 1000}
    assert cache_judge.table_entries(80000, 70000) == {"fetches": 16384, "urls": 16384, "deliveries": 16384}
    assert cache_judge.table_entries(80000, 500) == {"fetches": 16384, "urls": 500, "deliveries": 16384}


def test_mixed_legs_make_half_the_proxies_forward():
    body = cache_judge.upstream_servers([1001, 1002, 1003, 1004, 1005], Path("/www"), "mixed")
    servers = body.split("server {")[1:]
    assert ['"some-old-tag"' in s for s in servers] == [False, True, True, False, False]
