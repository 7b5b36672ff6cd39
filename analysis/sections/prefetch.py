"""Prefetching measured from outside the proxy: the requests a proxy under test sent to its Collector port
that no client request caused, and what became of them.

Attribution. The Multiplier tags every client request (X-SPE-Request) and every proxy forwards the tag
with the requests the client's request makes it send; the Collector logs it (spe_tools/rundir/access_log.py).
A line on a proxy's port is that proxy's own doing (a prefetch) unless its tag names a client request for the same
URL (the method may differ: Varnish and nginx fetch a client's HEAD with a GET, to fill their caches).
On a port where the proxy forwards tags (any of its lines has one), an untagged line is its own: the agent
of a prefetcher sends none, and its request may well overlap the client's (the client's request then joins
the prefetch in flight: a late prefetch, not a client miss). On a port without any tag (a proxy that
drops the header, an older log), an untagged line is the client's when a client request for
that URL could have had a leg to that proxy in flight while the Collector served it: the Collector's
transaction lies inside the leg that caused it, since its reply passes through the proxy before the leg
ends, and a leg runs between the client request's arrival (`ts`) and, at the latest, the Collector's
reply time plus the leg's own (`collector.total_us` + the leg's `total_us`: in sequential mode the leg
starts when the Collector's reply is complete). Both clocks are this machine's wall clock;
WINDOW_SLACK_S allows for the access log's millisecond resolution. Everything else is a prefetch.

What became of a prefetch: the first client request for its URL after the prefetch started, within
HORIZON_S of its end. Found: used, its lead time is the client request's arrival minus the prefetch's
end (negative: late, the client asked before the prefetch finished). Not found: wasted, its reply bytes
wasted bandwidth. Precision is the share of prefetches used.

In bounded memory: every step is a DuckDB query, over the report's replies (the view `results` of
analysis/readers/engine.py, either engine) and the access log, which DuckDB reads once into a table
(analysis/readers/access_log_sql.py); what a step keeps is a table of the engine's database (on disk for a run
DuckDB read), never a Python object per record or line.
A leg's window, and a prefetch's first use, are found with a running maximum or minimum over one sort of lines
and requests per URL: no pair of lines and requests for a popular URL is ever formed, and the SQL runs as it is on
DuckDB and, translated, on Spark (no ASOF join). A leg never sent (NOT_SENT, not in `results`) opens no window.
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.readers.engine import ReplyQueries, RunTables
from analysis.readers.records import COLLECTOR
from analysis.readers.run_collector import strips_query_terms
from analysis.section import RunData, Section
from analysis.stats_sql import TIMED, quantile, values_at_ranks
from spe_tools.rundir.lab_json import LabJson
from spe_tools.rundir.layout import PREFETCH_AGENT_LOG, RunDir
from spe_tools.rundir.log_schema import sql_string
from spe_tools.summary_stats import mean_ci_of, quantile_ranks

PREFETCH_COLUMNS = ["prefetch_requests", "prefetch_rate_per_s", "prefetch_bytes", "prefetch_precision",
                    "prefetch_wasted_bytes", "prefetch_lead_ms_p10", "prefetch_lead_ms_p50", "prefetch_lead_ms_p90",
                    "prefetch_late", "prefetch_horizon_s", "twin_of",
                    "twin_gain_requests", "twin_gain_ms_mean", "twin_gain_ci_low_ms", "twin_gain_ci_high_ms",
                    "prefetch_agent_fetches", "prefetch_agent_bytes"]
HORIZON_S = 300.0  # a prefetch not asked for within 5 minutes of its end is counted as wasted
WINDOW_SLACK_S = 0.002  # the access log's times are milliseconds
LEAD_QUANTILES = {"prefetch_lead_ms_p10": 0.1, "prefetch_lead_ms_p50": 0.5, "prefetch_lead_ms_p90": 0.9}

# The tables one computation keeps in the engine's database (on disk for a run DuckDB read), dropped at its end:
# the tagged client requests, the access log's lines, those on the proxies' ports no tag explains, the prefetches
# with their first use.
REQUESTS, LINES = "prefetch_client_requests", "prefetch_access_lines"
UNEXPLAINED, PREFETCHES = "prefetch_unexplained_lines", "prefetch_first_use"


def _as_logged(column: str, strip_query_terms: bool) -> str:
    """A URL column in the form the Collector logs it (spe_tools/rundir/access_log.as_logged, in SQL)."""
    if not strip_query_terms:
        return column
    return f"CASE WHEN contains({column}, '?') THEN split_part({column}, '?', 1) || '?' ELSE {column} END"


def _names(names) -> str:
    """Names as an SQL list of strings, for IN."""
    return "(" + ", ".join(sql_string(name) for name in names) + ")" if names else "(NULL)"


def client_requests(tables: ReplyQueries, strip_query_terms: bool = False) -> int:
    """The client requests with a tag (a record without one made no upstream request) into REQUESTS, one row
    each: its tag, arrival, URL as the Collector logs it, the Collector's reply time in seconds and its place in
    the log (`k`: tables.log_order). Returns how many."""
    tables.keep(REQUESTS, f"""
        SELECT tag, ts, {_as_logged("url", strip_query_terms)} AS url, coalesce(total_us, 0) / 1e6 AS reference_s,
               {tables.log_order} AS k
        FROM results WHERE name = {sql_string(COLLECTOR)} AND tag <> ''""")
    return tables.value(f"SELECT count(*) FROM {REQUESTS}")


def port_lines_sql(port_names: dict[int, str], proxies: list[str]) -> str:
    """The access log's request lines (LINES) on the proxies' ports, each with `name`, its proxy (a port by its name;
    an unnamed port by its number)."""
    cases = " ".join(f"WHEN {int(port)} THEN {sql_string(name)}" for port, name in port_names.items())
    name = f"CASE port {cases} ELSE port::VARCHAR END" if cases else "port::VARCHAR"
    return f"SELECT * FROM (SELECT {name} AS name, * FROM {LINES} WHERE request) WHERE name IN {_names(proxies)}"


def unexplained_lines(tables: ReplyQueries, lines_sql: str) -> None:
    """The lines no tag explains into UNEXPLAINED: a line is a client's when its tag names a client request for
    the same URL (the method may differ); what an untagged line is, prefetches() decides."""
    tables.keep(UNEXPLAINED, f"""
        SELECT l.name, l.start, l."end", l.url, l.bytes_sent AS bytes, l.tag
        FROM ({lines_sql}) l ANTI JOIN {REQUESTS} r ON r.tag = l.tag AND r.url = l.url""")


def forwarding_tags(tables: ReplyQueries, lines_sql: str) -> set[str]:
    """The proxies that forward tags (a line on their port has one): on their port an untagged line is their own."""
    return {name for (name,) in tables.rows(f"SELECT DISTINCT name FROM ({lines_sql}) WHERE tag <> ''")}


def _legs_sql(untagged: set[str]) -> str:
    """Per proxy that drops tags, the time each of its legs may have run for its URL: from the client request's
    arrival (minus the slack) to the Collector's reply time plus the leg's own (plus the slack)."""
    return f"""
        SELECT l.name, r.url, r.ts - {WINDOW_SLACK_S} AS lo,
               r.ts + r.reference_s + coalesce(l.total_us, 0) / 1e6 + {WINDOW_SLACK_S} AS hi
        FROM results l JOIN {REQUESTS} r USING (tag) WHERE l.name IN {_names(untagged)}"""


def _outside_legs_sql(untagged: set[str]) -> str:
    """The untagged lines of the proxies that drop tags that lie inside no leg for their URL: with the lines and the
    legs in one order of time (per proxy and URL; a leg before a line at the same time), each line's `reach` is the
    latest end of the legs started by then, and the line lies inside a leg when that end comes after its own. A
    running maximum over one sort: no pair of lines and legs for a popular URL is ever formed."""
    return f"""
        SELECT name, start, "end", url, bytes, tag FROM (
            SELECT *, max(hi) OVER (PARTITION BY name, url ORDER BY moment, line
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS reach
            FROM (SELECT name, start, "end", url, bytes, tag, start AS moment, 1 AS line, NULL AS hi FROM {UNEXPLAINED}
                  WHERE tag = '' AND name IN {_names(untagged)}
                  UNION ALL
                  SELECT name, NULL, NULL, url, NULL, NULL, lo, 0, hi FROM ({_legs_sql(untagged)})))
        WHERE line = 1 AND (reach IS NULL OR "end" > reach)"""


def prefetches(tables: ReplyQueries, tagged: set[str], untagged: set[str], horizon_s: float) -> None:
    """The lines no client request caused, with the first client request for their URL from their start within
    horizon_s of their end (`first_ts`, null when none: wasted), into PREFETCHES. On a port without tags (a proxy
    that drops the header) an untagged line is the client's when it lies inside the time a leg for its URL to that
    proxy may have run (the module's docstring); on any other port every unexplained line is the proxy's own.
    The first request is found as the legs are: lines and requests in one order of time per URL (a request at a
    line's start after it), the least request time from each line on."""
    own = f"SELECT name, start, \"end\", url, bytes, tag FROM {UNEXPLAINED} WHERE tag <> '' OR name IN {_names(tagged)}"
    if untagged:
        own += f" UNION ALL {_outside_legs_sql(untagged)}"
    tables.keep(PREFETCHES, f"""
        SELECT row_number() OVER (ORDER BY name, start, url) AS prefetch, name, start, "end", url, bytes,
               CASE WHEN next_ts <= "end" + {horizon_s} THEN next_ts END AS first_ts
        FROM (SELECT *, min(CASE WHEN request = 1 THEN moment END) OVER (
                            PARTITION BY url ORDER BY moment, request ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
                        AS next_ts
              FROM (SELECT name, start, "end", url, bytes, start AS moment, 0 AS request FROM ({own})
                    UNION ALL
                    SELECT NULL, NULL, NULL, url, NULL, ts, 1 FROM {REQUESTS}))
        WHERE request = 0""")


def account(tables: ReplyQueries, name: str, span_s: float, horizon_s: float = HORIZON_S) -> dict:
    """The prefetch columns of one proxy, from PREFETCHES: a prefetch is used when a client asked for its URL;
    its lead time is that request's arrival minus the prefetch's end."""
    n, size, used, wasted, late = tables.row(f"""
        SELECT count(*), coalesce(sum(bytes), 0), count(first_ts), coalesce(sum(bytes) FILTER (first_ts IS NULL), 0),
               count(*) FILTER (first_ts < "end")
        FROM {PREFETCHES} WHERE name = ?""", [name])
    ranks = {rank for q in LEAD_QUANTILES.values() for rank in quantile_ranks(used, q)[:2]} if used else set()
    leads = values_at_ranks(tables, f"SELECT (first_ts - \"end\") * 1000 AS x FROM {PREFETCHES} "
                                    f"WHERE name = {sql_string(name)}", ranks)
    return {"prefetch_requests": n, "prefetch_rate_per_s": n / span_s if span_s > 0 else None,
            "prefetch_bytes": int(size), "prefetch_precision": used / n if n else None,
            "prefetch_wasted_bytes": int(wasted), **{column: quantile(leads, used, q)
                                                     for column, q in LEAD_QUANTILES.items()},
            "prefetch_late": late, "prefetch_horizon_s": horizon_s}


def prefetch_columns(run: Path, proxies: list[str], tables: ReplyQueries | None = None) -> dict[str, dict]:
    """Per proxy, its prefetch columns, from the run's replies (`tables`, the report's; else the run's log read
    through DuckDB) and its Collector's access.log; empty without the run's lab.json, access.log or log, or without
    request tags in the log."""
    files = RunDir(run)
    topology = LabJson.read(run)
    if not (topology is not None and files.access_log.exists() and files.multiplier_log.exists()):
        return {}
    if tables is None:
        with RunTables(files.multiplier_log) as own:
            return prefetch_columns(run, proxies, own)
    try:
        return _columns(files, topology, proxies, tables)
    finally:
        tables.drop(REQUESTS, LINES, UNEXPLAINED, PREFETCHES)


def _columns(files: RunDir, topology: LabJson, proxies: list[str], tables: ReplyQueries) -> dict[str, dict]:
    if not client_requests(tables, strips_query_terms(topology)):
        return {}  # no record has a tag (a log from before tags): what the clients caused is unknown
    tables.keep_access_log(files.access_log, LINES, ["port", "end", "url", "bytes_sent"])
    lines = port_lines_sql(topology.collector.port_names(), proxies)
    unexplained_lines(tables, lines)
    tagged = forwarding_tags(tables, lines)
    untagged = {name for (name,) in tables.rows(f"SELECT DISTINCT name FROM {UNEXPLAINED}")} - tagged
    prefetches(tables, tagged, untagged, HORIZON_S)
    n, span = tables.row(f"SELECT count(*), max(ts) - min(ts) FROM {REQUESTS}")
    twins = topology.twins()
    out = {}
    for name in proxies:
        out[name] = account(tables, name, span if n > 1 else 0.0)
        if name in twins:
            out[name] |= twin_gain(tables, name, twins[name])
        spec = topology.proxies.get(name)
        out[name] |= agent_counts(files / spec.dir / PREFETCH_AGENT_LOG if spec and spec.dir else None)
    return out


def agent_counts(path: Path | None) -> dict:
    """What a prefetcher's own log says it fetched (squid-prefetch's agent: one JSON line per fetch), as extra
    evidence beside SPE's count: its fetches include the client pages it refetches to parse (hits in its own
    cache, which never reach the Collector) and fetches its cache answered, so it counts more than SPE does.
    Read line by line: a week's log is never held."""
    if path is None or not path.exists():
        return {}
    fetches, fetched = 0, 0
    with path.open(errors="replace") as log:
        for line in log:
            try:
                fetched += int(json.loads(line).get("bytes") or 0)
            except (ValueError, AttributeError):
                continue
            fetches += 1
    return {"prefetch_agent_fetches": fetches, "prefetch_agent_bytes": fetched}


def served_sql(proxy: str) -> str:
    """The client requests the proxy's prefetches served (the first request for each used prefetch's URL from its
    start: of those that arrived at the same time, the first in the log), by tag."""
    return f"""
        SELECT DISTINCT tag FROM (
            SELECT arg_min(r.tag, r.k) AS tag
            FROM {PREFETCHES} p JOIN {REQUESTS} r ON r.url = p.url AND r.ts = p.first_ts
            WHERE p.name = {sql_string(proxy)} GROUP BY p.prefetch)"""


def twin_gain(tables: ReplyQueries, proxy: str, twin: str) -> dict:
    """The twin's response time minus the prefetcher's on the client requests a prefetch served (positive:
    the prefetcher was faster), paired request by request, with its 95 % interval (mean ± 1.96·s/√n)."""
    n, mean, sd = tables.row(f"""
        WITH times AS (SELECT tag, name, total_us / 1000 AS ms FROM results
                       WHERE name IN {_names([proxy, twin])} AND {TIMED} AND tag IN ({served_sql(proxy)}))
        SELECT count(*), avg(t.ms - p.ms), stddev_samp(t.ms - p.ms)
        FROM times p JOIN times t USING (tag) WHERE p.name = {sql_string(proxy)} AND t.name = {sql_string(twin)}""")
    ci = mean_ci_of(n, mean, sd)
    return {"twin_of": twin, "twin_gain_requests": n, "twin_gain_ms_mean": mean,
            "twin_gain_ci_low_ms": ci[0] if ci else None, "twin_gain_ci_high_ms": ci[1] if ci else None}


def _lead_spread(row: dict) -> str:
    low, high = row.get("prefetch_lead_ms_p10"), row.get("prefetch_lead_ms_p90")
    return "" if low is None or high is None else f" (p10 {low:,.0f}, p90 {high:,.0f})"


def prefetch_text(rows: list[dict]) -> list[str]:
    """The report's prefetch lines: every proxy that sent requests of its own."""
    active = [r for r in rows if r.get("prefetch_requests")]
    if not active:
        return []
    out = [f"Prefetching (requests a proxy sent that no client request caused; used = asked for within "
           f"{active[0]['prefetch_horizon_s']:g} s):"]
    for r in active:
        lead = r["prefetch_lead_ms_p50"]
        rate = r.get("prefetch_rate_per_s")
        text = (f"  {r['name']}: {r['prefetch_requests']:,} prefetches"
                + (f" ({rate:.2f}/s over the run)" if rate is not None else "")
                + f", {r['prefetch_bytes']:,} bytes; precision "
                f"{100 * r['prefetch_precision']:.1f} %; wasted {r['prefetch_wasted_bytes']:,} bytes; lead time "
                f"median {'-' if lead is None else f'{lead:,.0f} ms'}{_lead_spread(r)}; {r['prefetch_late']:,} late")
        if r.get("twin_gain_ms_mean") is not None:
            low, high = r["twin_gain_ci_low_ms"], r["twin_gain_ci_high_ms"]
            interval = f" [{low:+.1f}, {high:+.1f}]" if low is not None else ""
            text += (f"; {r['twin_gain_ms_mean']:+.1f} ms{interval} faster than its twin {r['twin_of']} on the "
                     f"{r['twin_gain_requests']:,} requests its prefetches served")
        if r.get("prefetch_agent_fetches") is not None:
            text += (f" (its own log: {r['prefetch_agent_fetches']:,} fetches, {r['prefetch_agent_bytes']:,} bytes, "
                     "counting those its cache answered)")
        out.append(text)
    return out


def _prefetchers(rep) -> list[dict]:
    return [r for r in rep.rows[1:] if r.get("prefetch_requests")]


def add_prefetch_columns(run: RunData) -> None:
    """Each proxy's prefetch columns in its row (a bare log has none; nor has a merged report: what a prefetcher
    fetched is told from its own run's Collector log and requests, docs/report.md)."""
    columns = prefetch_columns(run.run, run.records.proxies, run.tables) \
        if run.run.is_dir() and not run.merged else {}
    for row in run.rows:
        row.update(columns.get(row["name"], {}))


# Its columns are added before any section computes: the hit ratios (analysis/sections/hit_ratios.py) leave a
# prefetcher's own requests out.
SECTION = Section("prefetching", "Prefetching", columns=tuple(PREFETCH_COLUMNS), rows=add_prefetch_columns,
                  applies=lambda rep: bool(_prefetchers(rep)), details_text=lambda rep: prefetch_text(rep.rows),
                  template="sections/prefetching.html.j2", context=lambda rep: {"prefetchers": _prefetchers(rep)})
