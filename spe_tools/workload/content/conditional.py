"""Whether a conditional GET or HEAD is answered 304 (RFC 9110 13.1.2, 13.1.3, 13.2.2): the one rule the synthetic
origin, the HAR origin and a repro case's stand-in origin share, so that all three revalidate alike."""

from __future__ import annotations

from spe_tools.workload.http11 import Message, parse_date


def not_modified(req: Message, etag: str | None, last_modified: int | None) -> bool:
    """If-None-Match (weak comparison, `*` for any) wins over If-Modified-Since, which is then not looked at;
    an If-Modified-Since that is no date is ignored."""
    inm = req.header("if-none-match")
    if inm:
        tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
        return "*" in tags or (etag is not None and etag.strip().removeprefix("W/") in tags)
    since = parse_date(req.header("if-modified-since")) if req.header("if-modified-since") else None
    return since is not None and last_modified is not None and since >= last_modified
