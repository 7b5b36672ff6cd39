"""`./spe report --engine spark` on a real Spark cluster: a standalone master and a worker started on 127.0.0.1 (and
stopped by PID however the test ends), the report's own queries translated to Spark SQL. On the hand-made runs of
the report's other tests (between them every section: the per-proxy table, mismatches, noise, paired ranking, cache
rules, prefetching, skipped fan-outs, CONNECTs) and on a generated run, summary.json must equal DuckDB's, number
for number (floats to 1e-9 relative: a sum may be added up in another order), and report.txt must be the same.
The same for runs in object storage: a real S3 server on 127.0.0.1 (moto's, tests/python/s3_server.py) holding two
compacted runs under run=NAME/, read by `./spe report s3a://...` on the cluster."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from parts import missing_program, require
from s3_server import ACCESS, client, spark_conf, start_s3, upload

# The hand-made runs are the unit layer's (tests/python/unit): the same runs, read by the other engine.
sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_analysis import conformance_like_run, paired_run
from test_prefetch import prefetch_run, twin_run
from test_report_cache_rules import judged_run
from test_report_engines import mixed_run, same, summary
from test_report_merged import make_runs
from test_report_trust import noisy_run

from analysis.readers.spark_jars import MissingJarsError, jar_paths
from analysis.report import build_report, summary_json, text_report
from bench.report_speed import write_run
from spe_tools.process import ProcessGroup, free_port
from spe_tools.rundir.parquet_log import compact

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


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """An S3 server holding two compacted runs (east and west, two Multipliers' runs of one evaluation) under
    s3a://runs/evaluation/run=NAME/, whole run directories as `aws s3 sync` uploads them, and files that are not
    records beside them; and the two local runs."""
    try:
        jar_paths()
    except MissingJarsError as e:
        require([str(e)], "the S3A filesystem's jars")
    require([] if importlib.util.find_spec("moto") else ["moto is not installed in the venv"], "moto's S3 server")
    work = tmp_path_factory.mktemp("stored")
    east, west, _ = make_runs(work)
    with ProcessGroup(work) as group:
        endpoint = start_s3(group)
        s3 = client(endpoint)
        s3.create_bucket(Bucket="runs")
        for run in (east, west):
            compact(run)
            upload(s3, run, "runs", f"evaluation/run={run.name}")
        s3.put_object(Bucket="runs", Key="evaluation/README.txt", Body=b"not a run")
        s3.put_object(Bucket="runs", Key="evaluation/run=east/parquet/_SUCCESS", Body=b"")
        yield endpoint, [east, west]


def report_stored(url: str, endpoint: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis.cli", url, "--engine", "spark", *spark_conf(endpoint),
                           "--out", str(out), "--format", "json,text", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, **ACCESS, "PYTHONPATH": str(ROOT)})


def test_runs_in_object_storage_give_duckdbs_merged_report(cluster, stored, tmp_path):
    """`./spe report s3a://BUCKET/PREFIX/ --engine spark --spark-master ...`: the runs under the prefix, each
    record's run its run=NAME, read on the cluster (the S3A jars shipped to its executor) and merged as DuckDB merges
    the two run directories: summary.json and report.txt's tables the same."""
    from pyspark.sql import SparkSession

    if (running := SparkSession.getActiveSession()) is not None:
        running.stop()  # the worker's cores, for the report's own application
    endpoint, runs = stored
    url = "s3a://runs/evaluation/"
    done = report_stored(url, endpoint, tmp_path, "--spark-master", cluster)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((tmp_path / "summary.json").read_text())
    expected = json.loads(json.dumps(summary_json(build_report(runs)), default=str))
    assert found.pop("run") == "s3a://runs/evaluation/run=east" and "not_read" not in found
    expected.pop("run")
    assert set(found["per_multiplier"]) == {"east", "west"}
    same(found, expected, "stored")
    # After the line naming the run, the same text but `./spe repro`'s hint, which needs the run's log at hand
    text = (tmp_path / "report.txt").read_text().split("\n", 1)[1]
    assert text == without_repro_hint(text_report(build_report(runs)).split("\n", 1)[1])


def without_repro_hint(text: str) -> str:
    """The report's text without the lines naming `./spe repro` cases (analysis/repro_links.py repro_text)."""
    out, hint = [], False
    for line in text.split("\n"):
        hint = line.startswith("Reproduce one as a case:") or (hint and line.startswith("  "))
        out += [] if hint else [line]
    return "\n".join(out)


def test_a_prefixs_runs_are_its_run_folders_their_committed_parts_and_what_they_lack_is_said(cluster, stored,
                                                                                             tmp_path):
    """The layout, read through the session's Hadoop filesystem (here on file://, which any session reads, so no
    JVM of its own): each run=NAME folder a run, only the part files its compacted.json counts, other files never
    taken for records, the small files staged locally, and a run uploaded without lab.json said to lack it."""
    from analysis.readers.object_store import Store, stored_runs
    from analysis.readers.spark_engine import session

    east = stored[1][0]
    prefix = tmp_path / "prefix"
    shutil.copytree(east, prefix / "run=east")
    shutil.copytree(east / "parquet", prefix / "run=bare" / "parquet")
    (prefix / "README.txt").write_text("not a run")
    (prefix / "run=east" / "parquet" / "_SUCCESS").write_text("")
    part = next((prefix / "run=east" / "parquet").glob("hour=*/part-*.parquet"))
    shutil.copy(part, part.with_name("part-999999999-0.parquet"))  # a compaction cut short: not a record yet
    bare, mine = stored_runs(Store(session(cluster)), [prefix.as_uri() + "/"], tmp_path / "scratch")
    assert (bare.label, mine.label) == ("bare", "east")
    assert [Path(p).name for p in mine.parts] == [Path(p).name for p in bare.parts] == [part.name]
    assert {p.relative_to(mine.local).as_posix() for p in mine.staged} == {"lab.json", "collector/access.log"}
    assert mine.notes == [] and bare.staged == {}
    assert bare.notes == [f"{bare.url}: no lab.json, so no topology: the Collector's hit ratios, the noise floor "
                          "and the prefetch columns are left out"]


def test_a_part_file_spark_cannot_read_is_one_line(cluster, stored, tmp_path):
    """The store failing once the runs are listed, while Spark reads their records (here a part file that is no
    Parquet): one line naming the prefix, not the JVM's stack trace."""
    from analysis.readers.object_store import Store, StoreError, stored_runs
    from analysis.readers.spark_engine import session
    from analysis.report import Progress
    from analysis.stored_report import read_stored

    east = stored[1][0]
    run = tmp_path / "prefix" / "run=broken"
    shutil.copytree(east / "parquet", run / "parquet")
    for part in run.glob("parquet/hour=*/part-*.parquet"):
        part.write_bytes(b"not parquet")
    spark, url = session(cluster), f"file://{run}"  # not as_uri(), which escapes the folder's `=`
    runs = stored_runs(Store(spark), [url], tmp_path / "scratch")
    with pytest.raises(StoreError) as failed:
        read_stored(runs, spark, Progress(False), url)
    assert str(failed.value).startswith(url) and "\n" not in str(failed.value)


def test_a_bucket_that_does_not_exist_is_one_line(stored, tmp_path):
    endpoint, _ = stored
    done = report_stored("s3a://no-such-bucket/evaluation/", endpoint, tmp_path)
    assert last_line(done).startswith("spe report: error: the bucket no-such-bucket does not exist")


def test_an_endpoint_nothing_listens_on_fails_in_seconds_in_one_line(stored, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    done = report_stored("s3a://runs/evaluation/", dead, tmp_path)
    line = last_line(done)
    assert "the object store does not answer" in line and "Connection refused" in line, line
    assert time.monotonic() - start < 60  # the JVM's start, then one attempt and a retry: not S3A's minutes


def last_line(done: subprocess.CompletedProcess) -> str:
    """What a failed report says: its last line, SPE's (before it, only the JVM's start), no Java stack trace."""
    assert done.returncode == 1, done.stderr[-3000:]
    assert "\tat " not in done.stderr and "Exception" not in done.stderr, done.stderr[-3000:]
    return done.stderr.strip().splitlines()[-1]
