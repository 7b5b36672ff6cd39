"""Exact order statistics (the value at a given rank of a sorted column) without sorting the column, on either
engine (DuckDB, Spark) with the same SQL.

Numbering a proxy's values with a window (`row_number() OVER (PARTITION BY name ORDER BY x)`) makes the engine
hold one partition of the whole run's values: DuckDB spills it to disk, but Spark ran out of a 5 GB heap on ten
million replies of one proxy (docs/benchmarks.md), its window buffer spilling into more files than it could read
back at once. Two aggregates find the same values in memory that does not grow with the run:
1. count the values of each group per narrow bucket of value (about 1 % wide: the bucket is monotonic in the
   value, so the buckets' running counts say which bucket holds each wanted rank, and where inside it);
2. in only the buckets that hold a wanted rank, count each distinct value; the running sum of those counts names
   the value at each rank, ties included, as a sort would.
Both are hash aggregates over the values; the only window left runs over one bucket's distinct values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

from analysis.readers.engine import ReplyQueries

Group = tuple  # the values of the group columns, in their order


def bucket_of(x: str, per_e_fold: int) -> str:
    """SQL: the bucket of the DOUBLE `x`, `per_e_fold` buckets per e-fold of 1 + |x| (100: each about 1 % of the
    value wide), numbered in the values' order."""
    return f"CAST(sign({x}) * floor(ln(1 + abs({x})) * {per_e_fold}) AS BIGINT)"


def ranked_values(tables: ReplyQueries, values: str, groups: Sequence[str],
                  ranks_for: Callable[[Group, int], set[int]]) -> dict[Group, dict[int, float]]:
    """group -> rank -> value: for each group of `values` (a query of the VARCHAR columns `groups` and a DOUBLE `x`;
    nulls of x left out), its values at the ranks `ranks_for(group, n)` names (from 0, ascending; n the group's
    count of values)."""
    bucketed = f"SELECT {_columns(groups)}x, {bucket_of('x', 100)} AS b FROM ({values}) WHERE x IS NOT NULL"
    wanted = _wanted(_bucket_counts(tables, bucketed, groups), ranks_for)
    if not wanted:
        return {}
    columns = {**{g: "VARCHAR" for g in groups}, "b": "BIGINT", "rank": "BIGINT", "pos": "BIGINT"}
    tables.keep_rows("wanted_ranks", columns, wanted)
    keys = [*groups, "b"]
    on = " AND ".join(f"s.{k} = w.{k}" for k in keys)
    found: dict[Group, dict[int, float]] = {}
    try:
        for *group, rank, x in tables.rows(f"""
                SELECT {_columns(groups, 'w.')}w.rank, s.x FROM (
                    SELECT {_columns(keys)}x, c, sum(c) OVER (PARTITION BY {', '.join(keys)} ORDER BY x) AS upto
                    FROM (SELECT {_columns(keys)}x, count(*) AS c FROM ({bucketed})
                          SEMI JOIN wanted_ranks USING ({', '.join(keys)}) GROUP BY ALL)) s
                JOIN wanted_ranks w ON {on} AND w.pos >= s.upto - s.c AND w.pos < s.upto"""):
            found.setdefault(tuple(group), {})[rank] = x
    finally:
        tables.drop("wanted_ranks")
    return found


def _columns(names: Sequence[str], prefix: str = "") -> str:
    """`a, b, ` (a trailing comma and space, to stand before the next column), or nothing."""
    return "".join(f"{prefix}{name}, " for name in names)


def _bucket_counts(tables: ReplyQueries, bucketed: str, groups: Sequence[str]) -> dict[Group, list[tuple[int, int]]]:
    """group -> its (bucket, count) pairs in bucket order."""
    counts: dict[Group, list[tuple[int, int]]] = {}
    for *group, b, c in tables.rows(f"SELECT {_columns(groups)}b, count(*) FROM ({bucketed}) GROUP BY ALL"):
        counts.setdefault(tuple(group), []).append((b, c))
    for buckets in counts.values():
        buckets.sort()
    return counts


def _wanted(counts: dict[Group, list[tuple[int, int]]], ranks_for: Callable[[Group, int], set[int]]) -> list[tuple]:
    """(group..., bucket, rank, the rank's place inside its bucket) for every rank wanted."""
    wanted = []
    for group, buckets in counts.items():
        ends = list(accumulate(c for _, c in buckets))  # the rank after each bucket's last
        index = 0
        for rank in sorted(r for r in ranks_for(group, ends[-1]) if 0 <= r < ends[-1]):
            while ends[index] <= rank:
                index += 1
            wanted.append((*group, buckets[index][0], rank, rank - (ends[index] - buckets[index][1])))
    return wanted
