"""What the analysis reads of a Multiplier record (docs/log-format.md), as one schema both readers share: Arrow's
JSON reader (analysis/readers/records.py, the in-memory path) and DuckDB (`./spe logs compact`'s Parquet files and the
report's engine, spe_tools/rundir/parquet_log.py). Fields it does not name are ignored: records carry more.
"""

from __future__ import annotations

import pyarrow as pa

_MEASURE = [("status", pa.int64()), ("header_bytes", pa.int64()), ("bytes", pa.int64()), ("md5", pa.string()),
            ("connect_us", pa.int64()), ("ttfb_us", pa.int64()), ("total_us", pa.int64()), ("error", pa.string()),
            ("fetch", pa.string())]
# The per-proxy table and the sections: one row per reply (analysis/readers/records.py). `multiplier` (--name) tells
# the Multipliers of merged logs apart; null in logs written before it.
LOG_SCHEMA = pa.schema([
    ("id", pa.int64()), ("multiplier", pa.string()), ("ts", pa.float64()), ("method", pa.string()),
    ("url", pa.string()), ("note", pa.string()), ("tag", pa.string()), ("client_held_us", pa.int64()),
    ("collector", pa.struct(_MEASURE)),
    ("proxies", pa.list_(pa.struct([("name", pa.string()), *_MEASURE, ("result", pa.string()),
                                    ("mismatched_headers", pa.list_(pa.string())), ("queued_us", pa.int64()),
                                    ("overtook", pa.list_(pa.int64()))]))),
])

# The cache-rule judge's verdict on a reply (analysis/readers/judge_records.py); its free-form `evidence` and `origin`
# maps are read with `json`, only for the replies the report shows.
_FINDINGS = pa.list_(pa.struct([("rule", pa.string()), ("section", pa.string()), ("reason", pa.string())]))
CACHE = pa.struct([
    ("provenance", pa.string()), ("fetch", pa.string()), ("fetched_at", pa.float64()),
    ("validated_at", pa.float64()), ("reused", pa.bool_()), ("age_s", pa.float64()),
    ("violations", _FINDINGS), ("advisories", _FINDINGS), ("exercised", pa.list_(pa.string())),
    ("conservative", pa.string()), ("claim", pa.string()), ("claim_conflict", pa.string()),
])
CACHE_LOG_SCHEMA = pa.schema([
    ("id", pa.int64()), ("method", pa.string()), ("url", pa.string()),
    ("collector", pa.struct([("cache", CACHE)])),
    ("proxies", pa.list_(pa.struct([("name", pa.string()), ("cache", CACHE)]))),
])


def _with_cache(schema: pa.Schema) -> pa.Schema:
    """The log's schema with the `cache` object added to the Collector's measure and to each proxy entry."""
    collector = pa.struct([*schema.field("collector").type, pa.field("cache", CACHE)])
    proxy = pa.struct([*schema.field("proxies").type.value_type, pa.field("cache", CACHE)])
    return (schema.set(schema.get_field_index("collector"), pa.field("collector", collector))
            .set(schema.get_field_index("proxies"), pa.field("proxies", pa.list_(proxy))))


# Everything the report reads of a record: the Parquet files keep these columns.
JUDGED_LOG_SCHEMA = _with_cache(LOG_SCHEMA)

_DUCKDB_NAMES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}


def duckdb_type(arrow: pa.DataType) -> str:
    """An Arrow type of the schemas above in DuckDB's SQL spelling (STRUCT(...), T[])."""
    if pa.types.is_struct(arrow):
        return "STRUCT(" + ", ".join(f'"{f.name}" {duckdb_type(f.type)}' for f in arrow) + ")"
    if pa.types.is_list(arrow):
        return f"{duckdb_type(arrow.value_type)}[]"
    return _DUCKDB_NAMES[arrow]


def duckdb_columns(schema: pa.Schema = JUDGED_LOG_SCHEMA) -> dict[str, str]:
    """read_json's `columns`: each top-level field and its DuckDB type."""
    return {f.name: duckdb_type(f.type) for f in schema}


def sql_string(text: str) -> str:
    """Text as a DuckDB string literal (a path, a field or a source's name in a query the analysis writes)."""
    return "'" + text.replace("'", "''") + "'"
