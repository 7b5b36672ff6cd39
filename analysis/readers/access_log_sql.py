"""The Collector's access.log read by DuckDB (read_csv, streamed) into a table, each line's fields by their
spe_tools/rundir/access_log.py FIELDS names, as its parse_line reads them: nothing of the log is held in Python.

A line is split on its spaces (the `spe` logformat's only padding, `%6tr`, becomes one gap). `request` says whether
parse_line reads it as a request: it has the required fields, it is not a connection that sent no request, its
numbers are numbers. A line that is not UTF-8 is left out (parse_line reads it with replacement characters; Squid
logs URLs escaped, so such a line is no request of a client's anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from duckdb import DuckDBPyConnection

from spe_tools.rundir.access_log import FIELDS, REQUIRED_FIELDS
from spe_tools.rundir.log_schema import sql_string

_POSITION = {f.name: i + 1 for i, f in enumerate(FIELDS)}  # a token's place in the line, from 1 as SQL counts
_FIELD = {f.name: f for f in FIELDS}
_TYPES = {float: "DOUBLE", int: "BIGINT", str: "VARCHAR"}


def _value(name: str) -> str:
    """The field's value: its token read as its type (null when the line has no such token or it does not read)."""
    field = _FIELD[name]
    token = f"t[{_POSITION[name]}]"
    return token if field.parse is str else f"TRY_CAST({token} AS {_TYPES[field.parse]})"


def _is_request() -> str:
    """parse_line's test: enough fields, a request sent, every number present reads as one."""
    no_request = f"ends_with({_value('result')}, '/000') AND {_value('method')} IN ('-', 'NONE')"
    numbers = " AND ".join(f"({_value(f.name)} IS NOT NULL OR t[{_POSITION[f.name]}] IS NULL)"
                           for f in FIELDS if f.parse is not str)
    return f"coalesce(array_length(t) >= {REQUIRED_FIELDS} AND NOT ({no_request}) AND {numbers}, false)"


def read_access_log(con: DuckDBPyConnection, path: Path, table: str, fields: Sequence[str]) -> None:
    """Every line of the log into `table` of con's database: the FIELDS `fields` (named and typed as there), `start`
    (unix seconds: its end minus its elapsed time, as AccessRecord.start), `tag` ("" without one, as AccessRecord.tag)
    and `request` (whether parse_line reads it as a request; filter on it). Not filtered here: DuckDB pushes a filter
    below the split, and then splits each line again for every field the filter tests (several times slower)."""
    source = (f"read_csv({sql_string(str(path))}, columns = {{'line': 'VARCHAR'}}, delim = '\\x01', quote = '', "
              "escape = '', header = false, auto_detect = false, ignore_errors = true)")
    con.execute(f"CREATE OR REPLACE TABLE {table} AS {access_lines_sql(source, fields)}")


def access_lines_sql(source: str, fields: Sequence[str]) -> str:
    """The query of read_access_log's table over `source`, a FROM item with the log's lines as `line`."""
    columns = ", ".join(f'{_value(name)} AS "{name}"' for name in fields)
    tag = _value("request_tag")
    return f"""
        SELECT {columns}, {_value("end")} - {_value("elapsed_ms")} / 1000 AS start,
               CASE WHEN {tag} IS NULL OR {tag} = '-' THEN '' ELSE {tag} END AS tag, {_is_request()} AS request
        FROM (SELECT list_filter(string_split(line, ' '), lambda x: x <> '') AS t FROM {source})"""
