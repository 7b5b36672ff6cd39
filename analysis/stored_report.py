"""The report of runs in object storage: `./spe report s3a://BUCKET/PREFIX/ --engine spark`.

The runs under the prefix (analysis/readers/object_store.py) are read by the Spark session that listed them: their
records from their Parquet files where they are stored, the few small files the sections read beside them from
local copies (removed once the report is built). Everything after is the local report's (analysis/report.py
report_of): the same sections, merged as several local runs are; what could not be read is said in the report.
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from analysis.readers.object_store import Store, StoredRun, store_error, stored_runs
from analysis.readers.spark_engine import DEFAULT_MASTER, SparkTables, session
from analysis.report import Progress, read_tables, report_of
from analysis.report_data import Report
from analysis.section import FIRST, RunFiles
from spe_tools.rundir.layout import MULTIPLIER_LOG


def build_stored_report(urls: Sequence[str], progress: Progress | None = None, spark_master: str | None = None,
                        spark_conf: Mapping[str, str] | None = None, examples: str = FIRST,
                        computed: Collection[str] | None = None) -> Report:
    """One report of every run under the prefixes `urls` (s3a://...), merged when they are several."""
    progress = progress or Progress(False)
    spark = session(spark_master or DEFAULT_MASTER, spark_conf, s3a=True)
    with tempfile.TemporaryDirectory(prefix="spe-stored-runs-") as scratch:
        runs = stored_runs(Store(spark), list(urls), Path(scratch))
        progress(f"{len(runs)} run(s) under {', '.join(urls)}: {sum(len(r.parts) for r in runs)} Parquet files")
        # No captures and no log beside the records: the sections do without a mismatch's capture file and a
        # violation's judged headers, as for a run whose Multiplier kept none.
        files = {run.label: RunFiles(run.local, run.local / MULTIPLIER_LOG, None) for run in runs}
        read = read_stored(runs, spark, progress, urls[0])
        shown = {run.label: run.url for run in runs} if len(runs) > 1 else {runs[0].label: urls[0]}
        report = report_of(files, read, progress, examples, computed, shown=shown)
    report.notes = [note for run in runs for note in run.notes]
    return report


def read_stored(runs: list[StoredRun], spark, progress: Progress, url: str) -> tuple:
    """The runs' records read (read_tables); the store failing while Spark reads them (a part file it may list but
    not read, the endpoint gone) said in one line as when listing them, not as the JVM's stack trace."""
    try:
        return read_tables(SparkTables(stored=runs, spark=spark), progress)
    except Exception as e:
        if not type(e).__module__.startswith(("py4j", "pyspark")):
            raise
        raise store_error(url, e) from None
