"""Repro cases: one proxy's cache-rule violation taken out of a run (the requests for its URL and the
origin's replies, with their timing) and replayed against a fresh proxy of that kind. See docs/repro.md."""
