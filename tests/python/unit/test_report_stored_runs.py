"""What `./spe report s3a://...` checks before any JVM starts (its usage errors, exit 2), and the S3A jars' set-up:
pinned, fetched once, a jar whose SHA-1 is not the published one never used. The reading itself is tested against a
real S3 server (tests/python/loopback/test_report_on_spark.py)."""

from __future__ import annotations

import hashlib

import pytest
from test_analysis import paired_run

from analysis.cli import main as report_main
from analysis.readers.object_store import store_error
from analysis.readers.spark_jars import HADOOP_VERSION, Jar, MissingJarsError, fetch, jar_paths
from analysis.readers.spark_s3a import check_hadoop
from analysis.report import build_report, html_report, summary_json, text_report


@pytest.mark.parametrize("argv, said", [
    (["s3a://runs/evaluation/"], "s3a://runs/evaluation/ is read by Spark: add --engine spark"),
    (["s3://runs/evaluation/", "--engine", "spark"], "as s3a://BUCKET/PREFIX/"),
    (["s3a://runs/a/", "LOCAL", "--engine", "spark"], "either local run directories or s3a:// prefixes"),
    (["s3a://runs/a/", "--engine", "spark", "--compare"], "--compare and --lab-summary read local runs"),
    (["LOCAL", "--spark-conf", "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000"],
     "--spark-conf goes with --engine spark"),
    (["s3a://runs/a/", "--engine", "spark", "--spark-conf", "no-value"], "expected KEY=VALUE"),
])
def test_what_goes_with_a_prefix_is_a_usage_error(tmp_path, capsys, argv, said):
    with pytest.raises(SystemExit) as refused:
        report_main([str(tmp_path) if arg == "LOCAL" else arg for arg in argv])
    assert refused.value.code == 2 and said in capsys.readouterr().err


def test_a_java_error_becomes_one_line_that_says_what_to_check():
    refused = OSError("getFileStatus on s3a://b/p: software.amazon.awssdk.core.exception.SdkClientException: Unable to "
                      "execute HTTP request: Connect to 127.0.0.1:9 failed: Connection refused (SDK Attempt Count: 2)")
    said = str(store_error("s3a://b/p", refused))
    assert said == ("s3a://b/p: the object store does not answer (Connect to 127.0.0.1:9 failed: Connection refused): "
                    "check spark.hadoop.fs.s3a.endpoint")
    assert str(store_error("s3a://b/p", OSError("NoSuchBucket: none"))) == "the bucket b does not exist (s3a://b/p)"


def made_jar(repository, content: bytes, sha1: str | None = None) -> Jar:
    jar = Jar("org.example", "thing", "1.0", sha1 or hashlib.sha1(content).hexdigest())
    path = repository / "org/example/thing/1.0" / jar.name
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return jar


def test_the_jars_are_fetched_once_and_checked(tmp_path):
    jar = made_jar(tmp_path / "repo", b"classes")
    jars, into, fetched = (jar,), tmp_path / "jars", []
    with pytest.raises(MissingJarsError, match="./spe setup fetches them"):
        jar_paths(into, jars)
    for _ in range(2):  # the second time: present and verified, not fetched again
        fetch(into, fetched.append, jars, (tmp_path / "repo").as_uri())
    assert len([line for line in fetched if line.startswith("fetching")]) == 1
    assert jar_paths(into, jars) == [into / jar.name]
    (into / jar.name).write_bytes(b"changed")  # no longer the verified jar
    with pytest.raises(MissingJarsError):
        jar_paths(into, jars)


def test_a_jar_that_is_not_the_published_one_is_deleted(tmp_path):
    jar = made_jar(tmp_path / "repo", b"tampered", sha1="0" * 40)
    with pytest.raises(MissingJarsError, match="expected 0000"):
        fetch(tmp_path / "jars", lambda line: None, (jar,), (tmp_path / "repo").as_uri())
    assert not (tmp_path / "jars" / jar.name).exists()


def test_what_a_report_goes_without_is_said_in_every_format(tmp_path):
    rep = build_report(paired_run(tmp_path))
    rep.notes = ["s3a://runs/p/run=a: no lab.json, so no topology"]
    assert "Not read: s3a://runs/p/run=a: no lab.json" in text_report(rep)
    assert summary_json(rep)["not_read"] == rep.notes
    assert "Not read: s3a://runs/p/run=a: no lab.json" in html_report(rep)
    rep.notes = []
    assert "not_read" not in summary_json(rep) and "Not read" not in text_report(rep)


def test_a_pyspark_of_another_hadoop_is_told_apart(tmp_path):
    """hadoop-aws links against its own Hadoop version only: another PySpark's is said, not a NoSuchMethodError."""
    (tmp_path / f"hadoop-client-api-{HADOOP_VERSION}.jar").write_bytes(b"")
    check_hadoop(tmp_path)
    (tmp_path / f"hadoop-client-api-{HADOOP_VERSION}.jar").unlink()
    (tmp_path / "hadoop-client-api-3.4.1.jar").write_bytes(b"")
    with pytest.raises(MissingJarsError, match=f"bundles hadoop-client 3.4.1, the S3A jars are for {HADOOP_VERSION}"):
        check_hadoop(tmp_path)
