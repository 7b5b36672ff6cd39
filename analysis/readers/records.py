"""Reading the Multiplier's logs into tables: JSON Lines (primary) and ROPE's text format.

A run killed mid-write leaves a truncated last line; other damage is possible too. Bad
lines are counted and skipped, never fatal.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.json as pj

from spe_tools.rundir.layout import MULTIPLIER_LOG, ROPE_LOG
from spe_tools.rundir.log_schema import LOG_SCHEMA

COLLECTOR = "Collector (direct)"

# One row per (request, reply): the Collector's reply and each proxy's.
RESULT_SCHEMA = {
    "id": pl.Int64, "ts": pl.Float64, "method": pl.Utf8, "url": pl.Utf8, "name": pl.Utf8, "status": pl.Int64,
    "header_bytes": pl.Int64, "bytes": pl.Int64, "md5": pl.Utf8, "connect_us": pl.Int64, "ttfb_us": pl.Int64,
    "total_us": pl.Int64, "result": pl.Utf8, "error": pl.Utf8, "mismatched_headers": pl.List(pl.Utf8),
    "fetch": pl.Utf8,  # the Collector's X-SPE-Fetch stamp on the reply (null: none; older logs lack it)
    "tag": pl.Utf8,  # the request's X-SPE-Request tag, which the Collector's access.log names (null: none)
    "queued_us": pl.Int64,  # a proxy leg's wait inside SPE before it was sent (null: the Collector, older logs)
    # the client's earlier requests the proxy was still answering when the leg went, out of order (--order-wait)
    "overtook": pl.List(pl.Int64),
}


@dataclass
class Records:
    """Every reply of a run: one row per request for the Collector, one per proxy result."""

    results: pl.DataFrame | None  # one row per reply (RESULT_SCHEMA); None when DuckDB read the run (engine.py)
    proxies: list[str]  # in the order the log lists them
    requests: int
    bad_lines: int
    skipped: dict[str, int] = field(default_factory=dict)  # fan-outs that did not happen, by reason (note)
    held: dict = field(default_factory=dict)  # the client held back for the fan-out (client_holds)
    https: dict[str, int] = field(default_factory=dict)  # what went through CONNECT (https_counts)


def split_lines(data: bytes) -> tuple[list[bytes], int]:
    """Lines that can be JSON objects, and how many cannot (empty lines do not count)."""
    good, bad = [], 0
    for line in data.split(b"\n"):
        line = line.strip()
        if not line:
            continue
        if line.startswith(b"{") and line.endswith(b"}"):
            good.append(line)
        else:
            bad += 1
    return good, bad


def read_json_lines(lines: list[bytes], schema: pa.Schema = LOG_SCHEMA) -> pl.DataFrame:
    """Every line read against `schema` at once (fields it does not name are ignored); raises
    pyarrow's ArrowInvalid or ArrowTypeError when a line does not fit."""
    # Arrow's JSON reader is multi-threaded C++: several times faster than the alternatives here.
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    table = pj.read_json(io.BytesIO(b"\n".join(lines)), parse_options=options,
                         read_options=pj.ReadOptions(block_size=1 << 24))
    return pl.from_arrow(table)


def parse_ndjson(lines: list[bytes], schema: pa.Schema = LOG_SCHEMA) -> tuple[pl.DataFrame, int]:
    """The lines read against `schema` (fields it does not name are ignored), and how many lines could not
    be. Fast path: the whole batch at once; on failure, line by line to drop the bad ones."""
    if not lines:
        return pl.DataFrame(), 0
    try:
        return read_json_lines(lines, schema), 0
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        good = []
        for line in lines:
            try:
                if isinstance(json.loads(line), dict):
                    good.append(line)
            except ValueError:
                pass
        try:
            return (read_json_lines(good, schema) if good else pl.DataFrame()), len(lines) - len(good)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # valid JSON of the wrong shape: drop per line
            frames, bad = [], len(lines) - len(good)
            for line in good:
                try:
                    frames.append(read_json_lines([line], schema))
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    bad += 1
            return (pl.concat(frames) if frames else pl.DataFrame()), bad


def _results_table(df: pl.DataFrame) -> pl.DataFrame:
    measure_cols = ["status", "header_bytes", "bytes", "md5", "connect_us", "ttfb_us", "total_us", "fetch"]
    tag = pl.col("tag") if "tag" in df.columns else pl.lit(None, pl.Utf8).alias("tag")
    base = df.select("id", "ts", "method", "url", tag)
    collector = pl.concat([base, df.select(pl.col("collector").struct.field(*measure_cols))], how="horizontal")
    collector = collector.with_columns(
        pl.lit(COLLECTOR).alias("name"), pl.lit(None, pl.Utf8).alias("result"),
        df.select(pl.col("collector").struct.field("error")).to_series().cast(pl.Utf8).alias("error"),
        pl.lit(None, pl.List(pl.Utf8)).alias("mismatched_headers"), pl.lit(None, pl.Int64).alias("queued_us"),
        pl.lit(None, pl.List(pl.Int64)).alias("overtook"))
    proxies = df.select("id", "ts", "method", "url", tag, "proxies").explode("proxies").drop_nulls("proxies")
    if proxies.height:
        proxies = proxies.with_columns(pl.col("proxies").struct.field(
            "name", *measure_cols, "result", "error", "mismatched_headers", "queued_us", "overtook")).drop("proxies")
        # A leg never sent (an unsafe request withheld from the proxies) measured nothing.
        proxies = proxies.filter(pl.col("result").ne_missing("NOT_SENT"))
    else:
        proxies = pl.DataFrame(schema=RESULT_SCHEMA)
    columns = list(RESULT_SCHEMA)
    return pl.concat([frame.select([pl.col(c).cast(RESULT_SCHEMA[c]) for c in columns])
                      for frame in (collector, proxies)])


def skip_reason(note: str) -> str:
    """A record's note without what differs from one request to the next (a trailing detail in
    parentheses, a tunnel's byte counts), so that notes group by reason; "no fan-out: " goes too."""
    note = re.sub(r" \([^()]*\)$", "", note.removeprefix("no fan-out: "))
    return re.sub(r": \d+ bytes up, \d+ bytes down$", "", note)


# The note of a CONNECT the Multiplier intercepted (--intercept-tls): its requests are records of their own.
INTERCEPTED = "CONNECT intercepted: TLSv"  # then the version: the handshake succeeded


def intercepted_tunnel(note: pl.Expr) -> pl.Expr:
    return note.str.starts_with(INTERCEPTED).fill_null(False)


def skipped_fanouts(df: pl.DataFrame) -> dict[str, int]:
    """Requests no proxy was asked about (no proxy entries; the note says why: a refused request, the
    client gone, the Collector failed, a CONNECT tunnel), counted by reason, most frequent first. An
    intercepted CONNECT is not one: the requests read inside it were fanned out themselves."""
    skipped = df.filter(pl.col("proxies").list.len().fill_null(0).eq(0) & pl.col("note").is_not_null()
                        & ~intercepted_tunnel(pl.col("note")))
    return dict(Counter(skip_reason(note) for note in skipped["note"].to_list()).most_common())


def https_counts(df: pl.DataFrame) -> dict[str, int]:
    """HTTPS in the run: requests read inside intercepted tunnels (their URLs are https://), the tunnels
    intercepted, and the CONNECT tunnels passed unread (no --intercept-tls, a --no-intercept host, a client
    that refused SPE's certificate, not TLS). Empty when the run had no CONNECT."""
    connects = df.filter(pl.col("method") == "CONNECT")
    if connects.height == 0:
        return {}
    notes = connects["note"].fill_null("")
    return {"requests": int(df["url"].str.starts_with("https://").fill_null(False).sum()),
            "intercepted_tunnels": int(notes.str.starts_with(INTERCEPTED).sum()),
            "opaque_tunnels": int(notes.str.starts_with("CONNECT tunnel").sum()),
            "failed_handshakes": int(notes.str.contains("TLS handshake failed", literal=True).sum())}


def client_holds(df: pl.DataFrame) -> dict:
    """How often the Multiplier held a client back before reading its next request (SPE's measuring more than
    --max-fanout-backlog of that connection's fan-outs behind; in logs of a Multiplier that paced the client by
    its slowest proxy, that proxy too far behind), and for how long in all; empty for a log without the field."""
    if "client_held_us" not in df.columns:
        return {}
    held = df["client_held_us"].drop_nulls()
    return {"requests": held.len(), "total_s": float(held.sum() or 0) / 1e6}


def records_from_frame(df: pl.DataFrame, bad_lines: int) -> Records:
    """The tables of a log read against LOG_SCHEMA (or a schema naming more)."""
    if df.height == 0:
        return Records(pl.DataFrame(schema=RESULT_SCHEMA), [], 0, bad_lines)
    results = _results_table(df)
    names = results.filter(pl.col("name") != COLLECTOR)["name"].unique(maintain_order=True).to_list()
    return Records(results, names, df.height, bad_lines, skipped_fanouts(df), client_holds(df), https_counts(df))


def load_jsonl(path: Path) -> Records:
    good, bad = split_lines(Path(path).read_bytes())
    df, bad_json = parse_ndjson(good)
    return records_from_frame(df, bad + bad_json)


ROPE_LINE = re.compile(
    r"^(?P<date>.+?):\(pid=\d+\):RESULT: (?P<name>.+?): (?P<irt_s>\d+):(?P<irt_us>\d+) "
    r"(?P<xfer_s>\d+):(?P<xfer_us>\d+) (?P<bytes>\d+) \{(?P<validation>[^}]*)\} (?P<client>\S+) "
    r"(?P<kind>\S+) (?P<version>\S+) (?P<method>\S+) (?P<url>\S+)$")


def load_rope(path: Path) -> Records:
    """ROPE's text log (the paper's Figure 3). Requests are delimited by the Collector's line."""
    rows, bad, request = [], 0, 0
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        m = ROPE_LINE.match(line)
        if not m:
            bad += 1
            continue
        irt = int(m["irt_s"]) * 1_000_000 + int(m["irt_us"])
        total = irt + int(m["xfer_s"]) * 1_000_000 + int(m["xfer_us"])
        parts = [p for p in m["validation"].split(",") if p]
        is_collector = m["name"] == "Collector"
        if is_collector:
            request += 1
        status = parts[1] if not is_collector and len(parts) > 1 else (parts[0] if parts and parts[0] != "DUMMY"
                                                                       else None)
        rows.append({
            "id": request, "ts": None, "method": m["method"], "url": m["url"],
            "name": COLLECTOR if is_collector else m["name"],
            "status": int(status) if status and status.isdigit() else None, "header_bytes": None,
            "bytes": int(m["bytes"]), "md5": None,
            "connect_us": None, "ttfb_us": irt, "total_us": total,
            "result": None if is_collector else (parts[2] if len(parts) > 2 else None), "error": None,
            "mismatched_headers": None if is_collector else parts[3:], "fetch": None, "tag": None, "queued_us": None,
            "overtook": None,
        })
    results = pl.DataFrame(rows, schema=RESULT_SCHEMA) if rows else pl.DataFrame(schema=RESULT_SCHEMA)
    names = results.filter(pl.col("name") != COLLECTOR)["name"].unique(maintain_order=True).to_list()
    return Records(results, names, request, bad)


def find_log(run: Path) -> Path:
    """The Multiplier's log of a run directory (or the log file given directly)."""
    run = Path(run)
    if run.is_file():
        return run
    for name in (MULTIPLIER_LOG, ROPE_LOG):
        if (run / name).exists():
            return run / name
    found = sorted(run.glob("*.jsonl"))
    if found:
        return found[0]
    raise FileNotFoundError(f"no Multiplier log ({MULTIPLIER_LOG} or {ROPE_LOG}) in {run}")


def is_rope(log: Path) -> bool:
    return log.suffix == ".log"
