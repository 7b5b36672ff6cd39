"""A run's records in Apache Spark: `./spe report RUN --engine spark [--spark-master URL]`, for runs that outgrow one
machine, on a cluster the user already runs (or `local[*]`).

The records come from the run's Parquet files (`./spe logs compact RUN`, run first here when the log has lines the
files do not hold yet); the views are the ones analysis/readers/engine.py builds in DuckDB (`records`, `replies`,
`results`, `verdicts`), and the report's queries are the same text: written once in DuckDB's dialect, each is
translated to Spark SQL by SQLGlot when it runs, so the two engines cannot drift apart by a copy. Only what reads
files differs (Spark's Parquet and text readers for DuckDB's read_parquet and read_csv). Order statistics stay
exact on Spark too: the sections read them at their ranks from a window over a sort, never percentile_approx.

A section's intermediate tables (ReplyQueries.keep) are cached temporary views, materialised once: a query that
numbers rows (row_number() OVER ()) must not be evaluated again with another numbering.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import sqlglot

from analysis.readers.access_log_sql import access_lines_sql
from analysis.readers.engine import MEASURE, RUN_SEQ, RunQueries, run_labels
from analysis.readers.object_store import StoredRun
from analysis.readers.records import COLLECTOR
from analysis.readers.spark_jars import MissingJarsError
from analysis.readers.spark_s3a import hadoop_settings, s3a_settings
from spe_tools.rundir.log_schema import CACHE
from spe_tools.rundir.parquet_log import compact, compacted

DEFAULT_MASTER = "local[*]"
SPARK_TYPES = {"VARCHAR": "STRING", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE"}


def spark_sql(sql: str) -> str:
    """One of the report's queries (DuckDB's dialect) in Spark SQL."""
    return sqlglot.transpile(sql, read="duckdb", write="spark")[0]


def _replies_sql() -> str:
    """engine.py's `replies`, its proxies' legs numbered by posexplode (Spark has no generate_subscripts)."""
    collector = ", ".join(f"collector.`{c}` AS `{c}`" for c in MEASURE)
    leg = ", ".join(f"p.`{c}` AS `{c}`" for c in MEASURE)
    return f"""
        SELECT seq, 0 AS leg, run, multiplier, id, ts, method, url, tag, '{COLLECTOR}' AS name, {collector},
               CAST(NULL AS STRING) AS result, CAST(NULL AS ARRAY<STRING>) AS mismatched_headers,
               CAST(NULL AS BIGINT) AS queued_us, CAST(NULL AS ARRAY<BIGINT>) AS overtook, collector.cache AS cache
        FROM records
        UNION ALL
        SELECT seq, pos + 1 AS leg, run, multiplier, id, ts, method, url, tag, p.name AS name, {leg},
               p.result AS result,
               p.mismatched_headers AS mismatched_headers, p.queued_us AS queued_us, p.overtook AS overtook,
               p.cache AS cache
        FROM records LATERAL VIEW posexplode(proxies) legs AS pos, p
        WHERE p IS NOT NULL"""


def _plain(value):
    """A Spark value as DuckDB's Python API gives it: a struct as a dict, a list of them as a list of dicts."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class SparkUnavailableError(Exception):
    """No Spark session on the master asked for: PySpark or Java missing, or the cluster unreachable."""


def local_driver_memory() -> str:
    """The heap of a local[*] session's JVM, which is its driver and its only executor: a quarter of this machine's
    memory, from 1 GB (Spark's default, too little for a 10 M-record run's cached replies) to 8 GB."""
    quarter_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 4 / 2**30
    return f"{max(1, min(8, int(quarter_gb)))}g"


QUIET_LOG = Path(__file__).resolve().parents[2] / "configs/spark/log4j2.properties"
CONNECT_S = 5  # how long a standalone master has to accept a connection before the report gives up on it


def check_master(master: str) -> None:
    """A standalone master that accepts no connection, said at once: Spark itself retries it for a minute and then
    gives only its stack traces."""
    if not master.startswith("spark://"):
        return  # local[*], or a cluster manager Spark reaches its own way (yarn, k8s://)
    problems = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
            return
        except ValueError:
            raise SparkUnavailableError(f"--spark-master {master}: expected spark://HOST:PORT") from None
        except OSError as e:
            problems.append(f"{address}: {e.strerror or e}")
    raise SparkUnavailableError(f"the Spark master {master} does not answer ({'; '.join(problems)}): start it, or "
                                "give --spark-master the URL its web page shows")


def check_java() -> None:
    """PySpark starts a JVM: `java` on PATH or in JAVA_HOME."""
    home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (home and Path(home, "bin", "java").exists()):
        raise SparkUnavailableError("the Spark engine needs Java, and there is no java on PATH nor in JAVA_HOME "
                                    "(Debian's default-jre-headless; ./spe setup installs it)")


def session(master: str, conf: Mapping[str, str] | None = None, s3a: bool = False):
    """A Spark session on `master`, its driver on loopback (a cluster's workers reach it there when they share the
    host; on a real cluster, SPARK_LOCAL_IP / spark.driver.host say where). `conf`: the user's settings
    (--spark-conf), applied last; `s3a`: able to read s3a:// paths (analysis/readers/spark_s3a.py)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        from pyspark.sql import SparkSession  # imported here: the report's other engines never load the JVM
    except ImportError as e:
        raise SparkUnavailableError(f"PySpark is not installed ({e}): ./spe setup installs it") from None
    check_java()
    check_master(master)
    try:
        settings = {**(s3a_settings(master) if s3a else {}), **(conf or {})}
    except MissingJarsError as e:
        raise SparkUnavailableError(str(e)) from None
    host = os.environ["SPARK_LOCAL_IP"]
    # Read when the JVM starts: its log at ERROR, so that SPE's message is what a failure shows.
    builder = SparkSession.builder.config("spark.driver.extraJavaOptions",
                                          f"-Dlog4j2.configurationFile=file:{QUIET_LOG}")
    if master.startswith("local") and "SPARK_DRIVER_MEMORY" not in os.environ:  # the user's, when given
        builder = builder.config("spark.driver.memory", local_driver_memory())  # read when the JVM starts
    try:
        spark = (builder.master(master).appName("spe-report")
                 .config("spark.driver.host", host).config("spark.driver.bindAddress", host)
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.session.timeZone", "UTC")
                 # The report makes no tables: without this, Spark leaves an empty spark-warehouse/ where it ran.
                 .config("spark.sql.warehouse.dir", str(Path(tempfile.gettempdir()) / "spe-spark-warehouse"))
                 # Its spills and shuffle files beside DuckDB's scratch database: one place to size and watch.
                 .config("spark.local.dir", str(Path(tempfile.gettempdir()) / "spe-spark-scratch"))
                 # A run's replies are a few GB at most per hour of traffic: a few partitions per shuffle, not 200.
                 .config("spark.sql.shuffle.partitions", "8")
                 .config(map=settings)
                 .getOrCreate())
    except Exception as e:  # noqa: BLE001 (Py4J and PySpark raise many kinds; each means no session)
        raise SparkUnavailableError(f"no Spark session on {master}: {str(e).strip().splitlines()[0][:300]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in hadoop_settings(settings).items():
        hadoop.set(key, value)
    return spark


def stop_session() -> None:
    """Stops this process's Spark session, if it started one. A job whose result is in may leave tasks of its stage
    running in the JVM; a caller about to remove the files they read (a benchmark's run) stops them first, or they
    fail with 'file does not exist' after the report was made."""
    if "pyspark" not in sys.modules:
        return
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


class SparkTables(RunQueries):
    """RunQueries in Spark over the Parquet files of one run or several (`logs`, as engine.py's RunTables). close()
    (or `with`) drops its views; the session stays for the next report of the same process (a JVM takes seconds to
    start)."""

    def __init__(self, logs: Path | Sequence[Path] = (), master: str = DEFAULT_MASTER,
                 conf: Mapping[str, str] | None = None, stored: Sequence[StoredRun] = (), spark=None):
        """The runs of `logs` (local run directories' logs), or the `stored` runs (object storage, read with
        `spark`, the session that listed them)."""
        logs = [Path(logs)] if isinstance(logs, (str, Path)) else [Path(log) for log in logs]
        self.spark = spark or session(master, conf)
        self._kept: dict[str, object] = {}
        self.bad_parts = self.bad_lines = 0
        # A file of a stored run the sections read from its local copy, read by Spark where it is stored instead:
        # a cluster's executors do not see the driver's disk.
        self.staged = {local: url for run in stored for local, url in run.staged.items()}
        if stored:
            runs = [self._stored_records(run, index * RUN_SEQ) for index, run in enumerate(stored)]
        else:
            runs = [self._run_records(log, label, index * RUN_SEQ)
                    for index, (log, label) in enumerate(zip(logs, run_labels(logs), strict=True))]
        records = runs[0]
        for more in runs[1:]:
            records = records.unionByName(more, allowMissingColumns=True)
        records.createOrReplaceTempView("records")
        self.source = ("parquet in object storage (Spark)" if stored else "parquet (Spark)") + \
            (f", {len(runs)} runs" if len(runs) > 1 else "")
        self._persist("replies", self.spark.sql(_replies_sql()))
        self.spark.sql("CREATE OR REPLACE TEMPORARY VIEW results AS "
                       "SELECT * FROM replies WHERE result IS DISTINCT FROM 'NOT_SENT'")
        fields = ", ".join(f"cache.`{f.name}` AS `{f.name}`" for f in CACHE)
        self.spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW verdicts AS SELECT run, id, method, url, name, {fields}, "
                       "seq, leg FROM replies WHERE cache.reused IS NOT NULL")
        self.requests = self.value("SELECT count(*) FROM records")

    def _run_records(self, log: Path, label: str, first_seq: int):
        """One run's records from its Parquet files; the lines they do not hold yet are compacted first (Spark reads
        the files only)."""
        run = log.parent
        found = compacted(run)
        if found is None or not found.current:
            compact(run)
            found = compacted(run)
        self.bad_parts += found.bad_parts
        self.bad_lines += found.bad_lines
        if not found.files:
            raise FileNotFoundError(f"{run}: no records to read (the log is empty)")
        return self._records([str(f) for f in found.files], label, first_seq)

    def _stored_records(self, run: StoredRun, first_seq: int):
        """A stored run's records, from the part files its compacted.json counts."""
        self.bad_lines += run.state.bad_lines
        if not run.parts:
            raise FileNotFoundError(f"{run.url}: no records to read (no Parquet part files)")
        return self._records(run.parts, run.label, first_seq)

    def _records(self, files: list[str], label: str, first_seq: int):
        """Parquet files' records (a DataFrame) with engine.py's `run`, `multiplier` and `seq` columns."""
        from pyspark.sql import functions as sf

        records = self.spark.read.parquet(*files)
        mine = sf.coalesce(sf.col("multiplier"), sf.lit(label)) if "multiplier" in records.columns else sf.lit(label)
        return (records.withColumn("multiplier", mine).withColumn("run", sf.lit(label))
                .withColumn("seq", sf.col("seq") + sf.lit(first_seq)))

    def _persist(self, name: str, frame) -> None:
        frame = frame.persist()
        frame.count()  # materialised now, once
        frame.createOrReplaceTempView(name)
        self._kept[name] = frame

    def _query(self, sql: str, params: list | None):
        return self.spark.sql(spark_sql(sql), args=list(params) if params else None)

    def rows(self, sql: str, params: list | None = None) -> list[tuple]:
        return [tuple(_plain(v) for v in row) for row in self._query(sql, params).collect()]

    def dicts(self, sql: str, params: list | None = None) -> list[dict]:
        return [{k: _plain(v) for k, v in row.asDict().items()} for row in self._query(sql, params).collect()]

    def keep(self, name: str, sql: str, params: list | None = None) -> None:
        self.drop(name)
        self._persist(name, self._query(sql, params))

    def keep_rows(self, name: str, columns: dict[str, str], rows: list[tuple]) -> None:
        schema = ", ".join(f"`{c}` {SPARK_TYPES[t]}" for c, t in columns.items())
        self.drop(name)
        self._persist(name, self.spark.createDataFrame(rows, schema))

    def keep_access_log(self, path: Path, name: str, fields: Sequence[str]) -> None:
        text = self.spark.read.text(self.staged.get(Path(path), str(path)))
        text.withColumnRenamed("value", "line").createOrReplaceTempView(f"{name}_text")
        self.keep(name, access_lines_sql(f"{name}_text", fields))

    def drop(self, *names: str) -> None:
        for name in names:
            frame = self._kept.pop(name, None)
            if frame is not None:
                frame.unpersist()
            self.spark.catalog.dropTempView(name)

    def close(self) -> None:
        self.drop(*list(self._kept))
        for view in ("records", "results", "verdicts"):
            self.spark.catalog.dropTempView(view)
