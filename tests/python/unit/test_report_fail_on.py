"""--fail-on for CI: the threshold grammar, and `./spe report`'s exit codes on a hand-made run directory whose
right answers are worked out here (a lab run with --fail-on: test_lab_fail_on.py)."""

from __future__ import annotations

import pytest
from test_analysis import measure, proxy, record
from test_report_cache_rules import cache
from test_report_trust import topology, write_run

from analysis.cli import main as report_main
from spe_tools.thresholds import CROSSED_EXIT, Threshold, parse_thresholds


@pytest.mark.parametrize(("text", "parsed"), [
    ("violations>0", [Threshold("violations", ">", 0, False)]),
    ("mismatches>1%", [Threshold("mismatches", ">", 1, True)]),
    ("noise>=0.5%", [Threshold("noise", ">=", 0.5, True)]),
    (" violations[squid] > 2 , mismatches[ats-1]>=10 ", [Threshold("violations", ">", 2, False, "squid"),
                                                          Threshold("mismatches", ">=", 10, False, "ats-1")]),
])
def test_the_grammar(text, parsed):
    assert parse_thresholds(text) == parsed


@pytest.mark.parametrize(("text", "why"), [
    ("", "expected thresholds"), ("violations", "expected thresholds"), ("violations<1", "expected thresholds"),
    ("violations>-1", "expected thresholds"), ("violations>1%%", "expected thresholds"),
    ("violations>0,", "expected thresholds"), ("hits>0", "unknown metric 'hits'"),
    ("noise[dummy]>0", "noise is per run"), ("violations[]>0", "expected thresholds"),
])
def test_a_malformed_threshold_is_refused_with_the_form_named(text, why):
    with pytest.raises(ValueError, match=why):
        parse_thresholds(text)


def ci_run(path):
    """10 requests. squid: cache-rule violations on requests 1 and 2, every reply OK. nginx: 1 HEADER_MISMATCH
    (10 %), 1 OTHER_FETCH (a copy of another origin fetch, not a mismatch), no violation. dummy: 1 mismatch
    of 10 (the noise floor: 10 %)."""
    records = []
    for i in range(1, 11):
        squid = {**proxy("squid"), "cache": cache(reused=True, violations=["age"] if i <= 2 else [])}
        nginx = {**proxy("nginx", result="HEADER_MISMATCH" if i == 3 else "OTHER_FETCH" if i == 4 else "OK",
                         headers=["etag"] if i in (3, 4) else []), "cache": cache()}
        dummy = {**proxy("dummy", result="BODY_MISMATCH" if i == 5 else "OK"), "cache": cache()}
        records.append(record(i, {**measure(), "cache": cache()}, [squid, nginx, dummy]))
    return write_run(path, records, topology({"squid": "squid", "nginx": "nginx", "dummy": "dummy"}))


@pytest.mark.parametrize(("fail_on", "code", "lines"), [
    ("violations>0", CROSSED_EXIT, ["violations>0: squid 2 violations"]),
    ("violations>2", 0, []),
    ("violations>=2", CROSSED_EXIT, ["violations>=2: squid 2 violations"]),
    ("violations>10%", CROSSED_EXIT, ["violations>10%: squid 20.00 % violations"]),
    ("violations[nginx]>0", 0, []),
    # OTHER_FETCH is no mismatch: nginx has 1 (10 %), the dummy 1
    ("mismatches>0", CROSSED_EXIT, ["mismatches>0: nginx 1 mismatches", "mismatches>0: dummy 1 mismatches"]),
    ("mismatches>1", 0, []),
    ("mismatches[nginx]>=10%", CROSSED_EXIT, ["mismatches[nginx]>=10%: nginx 10.00 % mismatches"]),
    ("mismatches>10%", 0, []),
    ("noise>0", CROSSED_EXIT, ["noise>0: noise floor 1"]),
    ("noise>10%", 0, []),
    ("violations>0,mismatches[squid]>0,noise>=10%", CROSSED_EXIT,
     ["violations>0: squid 2 violations", "noise>=10%: noise floor 10.00 %"]),
])
def test_report_exits_3_and_names_each_threshold_crossed(tmp_path, capsys, fail_on, code, lines):
    assert report_main([str(ci_run(tmp_path)), "--fail-on", fail_on, "--format", "json"]) == code
    out = capsys.readouterr()
    crossed = [line.removeprefix("spe report: threshold crossed: ") for line in (out.err + out.out).splitlines()
               if line.startswith("spe report: threshold crossed: ")]
    assert crossed == lines
    if code:
        assert f"threshold(s) crossed (--fail-on {','.join(map(str, parse_thresholds(fail_on)))}): exit 3" in out.err
    else:
        assert "no threshold crossed" in out.out


def test_without_fail_on_the_report_exits_0_whatever_it_found(tmp_path):
    assert report_main([str(ci_run(tmp_path)), "--format", "json"]) == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--fail-on", "violations>"], "expected thresholds"),
    (["--fail-on", "violations[varnish]>0"], "proxies this run does not have: varnish"),
])
def test_a_malformed_threshold_or_unknown_proxy_is_a_usage_error(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        report_main([str(ci_run(tmp_path)), "--format", "json", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_thresholds_with_nothing_to_measure_are_named_and_pass(tmp_path, capsys):
    """No dummy and no noise pair: no floor; no judge verdicts in the log: no violations to count."""
    records = [record(i, measure(), [proxy("squid"), proxy("ats")]) for i in range(1, 3)]
    run = write_run(tmp_path, records, topology({"squid": "squid", "ats": "trafficserver"}))
    assert report_main([str(run), "--fail-on", "noise>0,violations>0", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "threshold noise>0: not checked, the noise floor was not measured (this lab has no dummy" in out
    assert "threshold violations>0: not checked for squid (no cache-rule verdicts in the log)" in out
