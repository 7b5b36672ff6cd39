"""What a Spark session adds to read `s3a://` paths: the S3A filesystem's jars (analysis/readers/spark_jars.py) and
SPE's defaults for its retries, which the user's `--spark-conf` settings override.

The jars: in local mode the driver is the only executor, so they go on its class path as they are; on a cluster,
spark.jars also ships them to the executors (copying 686 MB of SDK costs seconds that local mode need not pay).
The retries: S3A's own defaults retry an endpoint that refuses connections for minutes before the report could say
so; a report is read once, by a user waiting for it, so a dead endpoint or a wrong one should fail in seconds.
"""

from __future__ import annotations

from pathlib import Path

from analysis.readers.spark_jars import HADOOP_VERSION, MissingJarsError, jar_paths

HADOOP = "spark.hadoop."
FAIL_FAST = {
    "fs.s3a.attempts.maximum": "2",  # the AWS SDK's attempts per request
    "fs.s3a.retry.limit": "2",  # S3A's own retries of a failed request
    "fs.s3a.retry.interval": "200ms",
    "fs.s3a.connection.establish.timeout": "15s",  # the least S3A accepts
}


def check_hadoop(spark_jars: Path) -> None:
    """hadoop-aws links against the hadoop-client of its own version only: PySpark's must be that one."""
    bundled = sorted(p.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
                     for p in spark_jars.glob("hadoop-client-api-*.jar"))
    if bundled and bundled != [HADOOP_VERSION]:
        raise MissingJarsError(f"PySpark bundles hadoop-client {', '.join(bundled)}, the S3A jars are for "
                               f"{HADOOP_VERSION}: ./spe setup installs the PySpark of requirements-dev.txt")


def s3a_settings(master: str) -> dict[str, str]:
    """The session's settings for s3a:// paths on `master` (MissingJarsError when the jars are not set up)."""
    import pyspark

    check_hadoop(Path(pyspark.__file__).parent / "jars")
    jars = [str(path) for path in jar_paths()]
    where = {"spark.driver.extraClassPath": ":".join(jars)} if master.startswith("local") else \
        {"spark.jars": ",".join(jars)}
    return {**where, **{HADOOP + key: value for key, value in FAIL_FAST.items()}}


def hadoop_settings(conf: dict[str, str]) -> dict[str, str]:
    """The Hadoop keys among Spark settings (spark.hadoop.X is Hadoop's X): set on a running session's Hadoop
    configuration too, which a session started before took its own from."""
    return {key.removeprefix(HADOOP): value for key, value in conf.items() if key.startswith(HADOOP)}
