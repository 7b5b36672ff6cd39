"""A run's records in DuckDB (embedded, no server): the engine under `./spe report`.

The records come from the run's Parquet files (`./spe logs compact`, spe_tools/rundir/parquet_log.py) and the
lines written to its log since the last compaction, or from the whole log when it was never compacted; what is
read of the JSON Lines is read once by DuckDB's read_json against the same schema into a table of a scratch
database on disk: either way, what the queries do not hold spills to disk instead of growing the process. Views
over them, each a query away from any table of the report:
- `records`: one row per record (the columns of log_schema.JUDGED_LOG_SCHEMA) and `seq`, its place in the log;
- `replies`: one row per reply, the Collector's (`leg` 0) and each proxy entry's (`leg` 1, 2... in the record's
  order), with the measure, the result and the `cache` verdict. A table of the scratch database, unnested from
  `records` once: the report's ~30 queries read it, column by column, instead of each reading the Parquet files
  (or the log's table) and unnesting every record again (1 M records from Parquet: 59 s of CPU, now 26);
- `results`: the replies the tables count (a leg never sent, NOT_SENT, measured nothing).
An unreadable line is read by DuckDB as a row of nulls: it is counted (bad_lines) and left out.

Several runs read together (`./spe report RUN1 RUN2 ...`: runs taken by Multipliers on different hosts) are one
set of views: each row names its `run` (its directory's name) and its `multiplier` (the record's own name, or its
run's for logs written before records named their Multiplier); a request's `id` is its Multiplier's, so a reply
is a request's by (run, id), and `seq` orders the runs one after the other.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from analysis.readers.access_log_sql import read_access_log
from analysis.readers.records import COLLECTOR, INTERCEPTED, Records, skip_reason
from spe_tools.rundir.layout import MULTIPLIER_LOG
from spe_tools.rundir.log_schema import CACHE, sql_string
from spe_tools.rundir.parquet_log import compacted, copy_bytes, read_json_sql

# DuckDB's own memory (its buffers, sorts and hash tables) before it spills to the scratch directory.
MEMORY_LIMIT = "1500MB"
ARROW_TYPES = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64()}  # ReplyQueries.keep_rows
MEASURE = ["status", "header_bytes", "bytes", "md5", "connect_us", "ttfb_us", "total_us", "error", "fetch"]
RUN_SEQ = 1 << 40  # a run's `seq` values start at its place among the runs read times this (a log's lines fewer)


def _replies_sql() -> str:
    collector = ", ".join(f'collector."{c}" AS "{c}"' for c in MEASURE)  # quoted: FETCH is SQL
    leg = ", ".join(f'p."{c}" AS "{c}"' for c in MEASURE)
    return f"""
        SELECT seq, 0 AS leg, run, multiplier, id, ts, method, url, tag, '{COLLECTOR}' AS name, {collector},
               NULL::VARCHAR AS result,
               NULL::VARCHAR[] AS mismatched_headers, NULL::BIGINT AS queued_us, NULL::BIGINT[] AS overtook,
               collector.cache AS cache
        FROM records
        UNION ALL
        SELECT seq, leg, run, multiplier, id, ts, method, url, tag, p.name AS name, {leg}, p.result AS result,
               p.mismatched_headers AS mismatched_headers, p.queued_us AS queued_us, p.overtook AS overtook,
               p.cache AS cache
        FROM (SELECT seq, run, multiplier, id, ts, method, url, tag, unnest(proxies) AS p,
                     generate_subscripts(proxies, 1) AS leg
              FROM records)
        WHERE p IS NOT NULL"""


# A reply with a verdict: log-format.md's `provenance` and `reused` are always there. Tested on `reused`: DuckDB
# 2.0.1 loses the Collector's rows of the Parquet files when this filter is on `provenance`, the first member of the
# twice-nested struct, and `cache` is read too (tests/python/unit/test_report_engines.py compares). Since `replies`
# is a table the filter no longer runs on the Parquet reader (that test passes either way now); kept on `reused`
# for a view over the files again.
JUDGED = "cache.reused IS NOT NULL"

class ReplyQueries:
    """What a report section reads a run's replies through, whichever engine read the run: SQL over the views
    `results` (one row per reply the tables count, RESULT_SCHEMA's columns) and `verdicts` (one row per judged
    reply: id, method, url, name and the `cache` object's fields, as analysis/readers/judge_records.py reads them).
    `log_order` is an expression of either view that orders its rows as analysis/readers/records.py's table (the
    Collector's replies in the log's order, then the proxies' record by record), for the sections that keep the
    first few rows (ORDER BY it, or take its min)."""

    con: duckdb.DuckDBPyConnection
    log_order: str

    def value(self, sql: str, params: list | None = None):
        return self.row(sql, params)[0]

    def row(self, sql: str, params: list | None = None) -> tuple:
        """The query's one row (fetched whole: DuckDB takes no other query while a result is half-read)."""
        return self.rows(sql, params)[0]

    def rows(self, sql: str, params: list | None = None) -> list[tuple]:
        return self.con.execute(sql, params or []).fetchall()

    def dicts(self, sql: str, params: list | None = None) -> list[dict]:
        """The query's rows, each as {column: value}."""
        found = self.con.execute(sql, params or [])
        columns = [d[0] for d in found.description]
        return [dict(zip(columns, row, strict=True)) for row in found.fetchall()]

    # A section's intermediate results are tables of the engine's own, kept under a name until drop(): the
    # sections' SQL reads them like the views, and never holds their rows in Python.

    def keep(self, name: str, sql: str, params: list | None = None) -> None:
        """The query's result as the table `name`, replacing one of that name."""
        self.con.execute(f"CREATE OR REPLACE TABLE {name} AS {sql}", params or [])

    def keep_rows(self, name: str, columns: dict[str, str], rows: list[tuple]) -> None:
        """A table `name` of values from Python: `columns` maps each column to its SQL type (VARCHAR, BIGINT or
        DOUBLE). Handed over as Arrow columns (DuckDB scans them where they are): a run's URLs may be millions."""
        values = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
        arrow = pa.table({c: pa.array(v, ARROW_TYPES[t]) for (c, t), v in zip(columns.items(), values, strict=True)})
        self.con.register(f"{name}_rows", arrow)
        try:
            self.con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {name}_rows")
        finally:
            self.con.unregister(f"{name}_rows")

    def keep_access_log(self, path: Path, name: str, fields: Sequence[str]) -> None:
        """The Collector's access.log as the table `name` (analysis/readers/access_log_sql.py)."""
        read_access_log(self.con, path, name, fields)

    def drop(self, *names: str) -> None:
        for name in names:
            self.con.execute(f"DROP TABLE IF EXISTS {name}")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ReplyQueries:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FrameTables(ReplyQueries):
    """`--engine memory`'s replies (a polars table already in memory) under the same view, in an in-process DuckDB
    that reads the table where it is (Arrow, no copy): the sections run the same queries on either engine, and the
    memory engine stays the reference for how the log becomes `results`."""

    log_order = "pos"

    def __init__(self, results: pl.DataFrame, verdicts: pl.DataFrame | None, run: str = ""):
        self.con = duckdb.connect()
        # one run, named `run` (run_labels), written by one Multiplier as far as this engine reads
        named = [pl.lit(run).alias("run"), pl.lit(run).alias("multiplier")]
        self.con.register("results", results.with_row_index("pos").with_columns(named))
        if verdicts is None:  # a log without the judge's `cache` objects: no verdict
            verdicts = pl.from_arrow(pa.schema([("id", pa.int64()), ("method", pa.string()), ("url", pa.string()),
                                                ("name", pa.string()), *CACHE]).empty_table())
        self.con.register("verdicts", verdicts.with_row_index("pos").with_columns(named[0]))


class RunQueries(ReplyQueries):
    """The views above over one run's records (`records`, `replies`, `results`, `verdicts`), with the run's counts
    as SQL over them: what every engine that reads a run's files shares."""

    # The Collector's replies in the log's order, then the proxies' record by record.
    log_order = "[(leg > 0)::BIGINT, seq, leg]"
    requests: int
    source: str
    bad_lines: int
    bad_parts: int

    def proxies(self) -> list[str]:
        """The proxies under test, in the order the log first names them."""
        return [name for (name,) in self.rows(
            "SELECT name FROM results WHERE leg > 0 AND name IS NOT NULL GROUP BY name ORDER BY min([seq, leg])")]

    def bad_cache_lines(self) -> int:
        """Records with a `cache` object DuckDB could not read against the schema (it reads one as a verdict whose
        every member is null; a verdict always has `reused`)."""
        return self.value("SELECT count(DISTINCT seq) FROM replies WHERE cache IS NOT NULL AND NOT " + JUDGED)

    def skipped_fanouts(self) -> dict[str, int]:
        """As analysis/readers/records.py skipped_fanouts: the notes are grouped here, their reasons counted there."""
        reasons: Counter[str] = Counter()
        for note, n in self.rows(
                "SELECT note, count(*) FROM records WHERE coalesce(array_length(proxies), 0) = 0 AND note IS NOT NULL "
                "AND NOT starts_with(note, ?) GROUP BY note ORDER BY min(seq)", [INTERCEPTED]):
            reasons[skip_reason(note)] += n
        return dict(reasons.most_common())

    def https_counts(self) -> dict[str, int]:
        """As analysis/readers/records.py https_counts."""
        connects, requests, intercepted, opaque, failed = self.row("""
            SELECT count(*) FILTER (method = 'CONNECT'), count(*) FILTER (starts_with(url, 'https://')),
                   count(*) FILTER (method = 'CONNECT' AND starts_with(coalesce(note, ''), ?)),
                   count(*) FILTER (method = 'CONNECT' AND starts_with(coalesce(note, ''), 'CONNECT tunnel')),
                   count(*) FILTER (method = 'CONNECT' AND contains(coalesce(note, ''), 'TLS handshake failed'))
            FROM records""", [INTERCEPTED])
        if not connects:
            return {}
        return {"requests": requests, "intercepted_tunnels": intercepted, "opaque_tunnels": opaque,
                "failed_handshakes": failed}

    def client_holds(self) -> dict:
        """As analysis/readers/records.py client_holds."""
        requests, total = self.row("SELECT count(client_held_us), sum(client_held_us) FROM records")
        return {"requests": requests, "total_s": float(total or 0) / 1e6}

    def records(self) -> Records:
        """The run's counts as analysis/readers/records.py reads them, without its replies (`results` None): the
        sections query them."""
        if not self.requests:
            return Records(None, [], 0, self.bad_lines)
        return Records(None, self.proxies(), self.requests, self.bad_lines, self.skipped_fanouts(),
                       self.client_holds(), self.https_counts())


def run_labels(logs: Sequence[Path]) -> list[str]:
    """Each log's `run`: its run directory's name (the log's own name for a bare log), numbered where two agree."""
    names = [log.parent.name if log.name == MULTIPLIER_LOG else log.name for log in logs]
    seen: Counter[str] = Counter()
    labels = []
    for name in names:
        seen[name] += 1
        labels.append(name if names.count(name) == 1 else f"{name}#{seen[name]}")
    return labels


class RunTables(RunQueries):
    """RunQueries in DuckDB (embedded), over one run's log or several runs' (`logs`, each a Multiplier's log; their
    rows named by run_labels). close() (or `with`) deletes the scratch database."""

    def __init__(self, logs: Path | Sequence[Path]):
        logs = [Path(logs)] if isinstance(logs, (str, Path)) else [Path(log) for log in logs]
        self.scratch = Path(tempfile.mkdtemp(prefix="spe-report-"))
        self.con = duckdb.connect(str(self.scratch / "run.duckdb"),
                                  config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(self.scratch / "tmp")})
        try:
            self._open(logs)
        except BaseException:
            self.close()
            raise

    def _open(self, logs: list[Path]) -> None:
        self.bad_lines = self.bad_parts = 0
        sources, runs = [], []
        for index, (log, label) in enumerate(zip(logs, run_labels(logs), strict=True)):
            view, (source, read) = f"run_{index}", self._run_records(log, index * RUN_SEQ)
            self.con.execute(f"CREATE VIEW {view} AS {source}")
            named = "multiplier" in {c for (c, *_) in self.con.execute(f"DESCRIBE {view}").fetchall()}
            mine = f"coalesce(multiplier, {sql_string(label)})" if named else sql_string(label)
            rest = "* EXCLUDE (multiplier)" if named else "*"
            sources.append(f"SELECT {sql_string(label)} AS run, {mine} AS multiplier, {rest} FROM {view}")
            runs.append(read)
        self.source = runs[0] if len(runs) == 1 else f"{len(runs)} runs ({'; '.join(runs)})"
        self.con.execute("CREATE VIEW records AS " + " UNION ALL BY NAME ".join(sources))
        self.con.execute(f"CREATE TABLE replies AS {_replies_sql()}")
        self.con.execute("CREATE VIEW results AS SELECT * FROM replies WHERE result IS DISTINCT FROM 'NOT_SENT'")
        fields = ", ".join(f'cache."{f.name}" AS "{f.name}"' for f in CACHE)
        self.con.execute(f"CREATE VIEW verdicts AS SELECT run, id, method, url, name, {fields}, seq, leg FROM replies "
                         f"WHERE {JUDGED}")
        self.requests = self.value("SELECT count(*) FROM records")

    def _run_records(self, log: Path, first_seq: int) -> tuple[str, str]:
        """The query of one run's records, each with its `seq` (from first_seq), and what it reads: its Parquet files
        and what the log gained since, or its JSON Lines. Adds to the counts of what could not be read."""
        found = compacted(log.parent) if log.name == MULTIPLIER_LOG else None
        if found is not None and not found.files and found.current:
            found = None  # nothing compacted but unreadable lines: the log says the same
        self.bad_parts += found.bad_parts if found else 0
        table = f"log_{first_seq // RUN_SEQ}"
        if found is None:
            records, bad = self._read_json(log, table, first_seq)
            self.bad_lines += bad
            return records, "jsonl"
        files = ", ".join(sql_string(str(p)) for p in found.files)
        sources = [f"SELECT {first_seq} + seq AS seq, * EXCLUDE (seq) FROM read_parquet([{files}], "
                   "hive_partitioning = false, union_by_name = true)"] if found.files else []
        read = "parquet"
        self.bad_lines += found.bad_lines
        if not found.current:  # the lines written since the last compaction, from the log
            tail = self.scratch / f"{table}-tail.jsonl"
            with log.open("rb") as f:
                copy_bytes(f, *found.tail, tail)
            records, bad = self._read_json(tail, f"{table}_tail", first_seq + found.tail_seq)
            sources.append(records)
            read += f" and {tail.stat().st_size / 1e6:,.1f} MB of JSON Lines not compacted yet"
            self.bad_lines += bad
        return " UNION ALL BY NAME ".join(sources), read

    def _read_json(self, path: Path, table: str, first_seq: int) -> tuple[str, int]:
        """JSON Lines read once into a table of the scratch database: the query of its records, each with its
        `seq` (from first_seq), and how many lines could not be read."""
        self.con.execute(f"CREATE TABLE {table} AS SELECT * FROM {read_json_sql(path)}")
        bad = self.value(f"SELECT count(*) - count(id) FROM {table}")
        return f"SELECT {first_seq} + rowid AS seq, * FROM {table} WHERE id IS NOT NULL", bad

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.scratch, ignore_errors=True)
