"""`./spe report --engine spark` on a real Spark cluster: a standalone master and a worker started on 127.0.0.1 (and
stopped by PID however the test ends), the report's own queries translated to Spark SQL. On the hand-made runs of
the report's other tests (between them every section: the per-proxy table, mismatches, noise, paired ranking, cache
rules, prefetching, skipped fan-outs, CONNECTs) and on a generated run, summary.json must equal DuckDB's, number
for number (floats to 1e-9 relative: a sum may be added up in another order), and report.txt must be the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from parts import missing_program, require

# The hand-made runs are the unit layer's (tests/python/unit): the same runs, read by the other engine.
sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_analysis import conformance_like_run, paired_run
from test_prefetch import prefetch_run, twin_run
from test_report_cache_rules import judged_run
from test_report_engines import mixed_run, same, summary
from test_report_merged import make_runs
from test_report_trust import noisy_run

from analysis.report import build_report, summary_json, text_report
from bench.report_speed import write_run
from spe_tools.process import ProcessGroup, free_port

WORKER_REGISTERED = "Successfully registered with master"


def spark_home() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    return Path(pyspark.__file__).parent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """spark://127.0.0.1:PORT: a master and one worker (both cores, 2 GB: the million-record run's executor), the
    JVMs Spark's own scripts would start."""
    home = spark_home()
    require((["pyspark is not installed in the venv"] if home is None else []) + missing_program("java"),
            "Apache Spark (PySpark, and default-jre-headless for its JVM)")
    spark_class = str(home / "bin" / "spark-class")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    port = free_port()
    with ProcessGroup(tmp_path_factory.mktemp("spark")) as group:
        group.start("spark-master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                     "--port", str(port), "--webui-port", str(free_port())],
                    port=port, env=env, deadline_s=60)
        group.start("spark-worker", [spark_class, "org.apache.spark.deploy.worker.Worker",
                                     f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "2",
                                     "--memory", "2g", "--webui-port", str(free_port())],
                    ready_line=WORKER_REGISTERED, env=env, deadline_s=90)
        yield f"spark://127.0.0.1:{port}"


def spark_summary(run: Path, master: str) -> dict:
    rep = build_report(run, engine="spark", spark_master=master)
    return {"bad_cache_lines": rep.bad_cache_lines, **json.loads(json.dumps(summary_json(rep), default=str))}


@pytest.mark.parametrize("make", [conformance_like_run, paired_run, noisy_run, judged_run, mixed_run, prefetch_run,
                                  twin_run], ids=lambda make: make.__name__)
def test_spark_gives_duckdbs_report_on_the_hand_made_runs(cluster, tmp_path, make):
    run = make(tmp_path)
    expected = summary(run, "duckdb")
    same(spark_summary(run, cluster), expected, make.__name__)
    assert text_report(build_report(run, engine="spark", spark_master=cluster)) == \
        text_report(build_report(run, engine="duckdb"))


def test_spark_merges_runs_as_duckdb_does(cluster, tmp_path):
    """Two runs whose request ids are the same (two Multipliers), merged: the per-Multiplier tables too."""
    east, west, _ = make_runs(tmp_path)
    expected = json.loads(json.dumps(summary_json(build_report([east, west])), default=str))
    found = json.loads(json.dumps(summary_json(build_report([east, west], engine="spark", spark_master=cluster)),
                                  default=str))
    assert set(found["per_multiplier"]) == {"east", "west"}
    same(found, expected, "merged")


def test_spark_gives_duckdbs_report_on_a_generated_million_record_run(cluster, tmp_path):
    """A million records (4 proxies each, 1.4 GB of JSON Lines: bench/report_speed.py's), read by the cluster from
    the Parquet files it compacts them into first, by DuckDB from the log: every table of summary.json the same."""
    run = tmp_path / "generated"
    run.mkdir()
    write_run(run / "multiplier.jsonl", 1_000_000, seed=7)
    found = spark_summary(run, cluster)
    assert found["requests"] == 1_000_000
    same(found, summary(run, "duckdb"), "generated")


def test_the_command_line_reads_a_run_on_the_cluster(cluster, tmp_path):
    """`./spe report --engine spark` as a program of its own: a second application on the cluster, which gets the
    worker's one core once this process's session (the other tests') has stopped and given it back."""
    from pyspark.sql import SparkSession

    if (running := SparkSession.getActiveSession()) is not None:
        running.stop()
    run = paired_run(tmp_path)
    done = subprocess.run([sys.executable, "-m", "analysis.cli", str(run), "--engine", "spark", "--spark-master",
                           cluster, "--format", "json,text"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    same(json.loads((run / "report/summary.json").read_text())["proxies"], summary(run, "duckdb")["proxies"])


def test_spark_master_without_the_spark_engine_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "analysis.cli", str(tmp_path), "--spark-master", "spark://x:7077"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "--spark-master goes with --engine spark" in done.stderr


def report_on_spark(run: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis.cli", str(run), "--engine", "spark", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**(env or os.environ), "PYTHONPATH": str(ROOT)})


def test_a_master_that_does_not_answer_is_named_at_once_without_a_java_stack_trace(tmp_path):
    """Spark itself retries a dead master for a minute, then prints only its stack traces."""
    require(missing_program("java"), "Java, for PySpark's JVM")
    closed = free_port()
    done = report_on_spark(paired_run(tmp_path), "--spark-master", f"spark://127.0.0.1:{closed}")
    assert done.returncode == 1
    assert f"the Spark master spark://127.0.0.1:{closed} does not answer" in done.stderr
    assert "Exception" not in done.stderr and "\tat " not in done.stderr


def test_without_java_the_report_says_what_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": str(Path(sys.executable).parent)}
    done = report_on_spark(paired_run(tmp_path), env=env)
    assert done.returncode == 1
    assert "the Spark engine needs Java" in done.stderr and "default-jre-headless" in done.stderr
