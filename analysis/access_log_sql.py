"""The Collector's access.log as a DuckDB query (read_csv, streamed: nothing of the log is held but what a query
keeps), each line's fields by their spe_tools/rundir/access_log.py FIELDS names, as its parse_line reads them.

A line is split on its spaces (the `spe` logformat's only padding, `%6tr`, becomes one gap). A line parse_line
would skip or reject is left out: too few fields, a connection that sent no request, a number that does not parse,
and also a line that is not UTF-8 (parse_line reads it with replacement characters; its URL then matches no
client's anyway).
"""

from __future__ import annotations

from pathlib import Path

from spe_tools.rundir.access_log import FIELDS, REQUIRED_FIELDS

_POSITION = {f.name: i + 1 for i, f in enumerate(FIELDS)}  # a token's place in the line, from 1 as SQL counts
_TYPES = {float: "DOUBLE", int: "BIGINT", str: "VARCHAR"}


def sql_string(text: str) -> str:
    """Text as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _token(name: str) -> str:
    return f"t[{_POSITION[name]}]"


def _parses(field) -> str:
    """The field's token is absent (an optional field) or reads as its type."""
    token = _token(field.name)
    if field.parse is str:
        return "TRUE"
    check = f"TRY_CAST({token} AS {_TYPES[field.parse]}) IS NOT NULL"
    return check if field.required else f"({token} IS NULL OR {check})"


def access_lines_sql(path: Path) -> str:
    """A query of the log's request lines: one column per field (named and typed as FIELDS), plus `start` (unix
    seconds: its end minus its elapsed time, as AccessRecord.start) and `tag` ("" without one, as AccessRecord.tag).
    """
    source = (f"read_csv({sql_string(str(path))}, columns = {{'line': 'VARCHAR'}}, delim = '\\x01', quote = '', "
              "escape = '', header = false, auto_detect = false, ignore_errors = true)")
    columns = ", ".join(f'TRY_CAST({_token(f.name)} AS {_TYPES[f.parse]}) AS "{f.name}"' for f in FIELDS)
    no_request = f"ends_with({_token('result')}, '/000') AND {_token('method')} IN ('-', 'NONE')"
    parses = " AND ".join(_parses(f) for f in FIELDS)
    return f"""
        SELECT *, "end" - elapsed_ms / 1000 AS start,
               CASE WHEN request_tag IS NULL OR request_tag = '-' THEN '' ELSE request_tag END AS tag
        FROM (SELECT {columns} FROM (SELECT list_filter(string_split(line, ' '), lambda x: x <> '') AS t FROM {source})
              WHERE len(t) >= {REQUIRED_FIELDS} AND NOT ({no_request}) AND {parses})"""
