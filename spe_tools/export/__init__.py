"""./spe export: a run as a HAR 1.2 file, the client's view of it (the Collector's replies) or one proxy's
(its legs), the whole run or one request's sequence for its URL. docs/report.md, "Export as a HAR"."""
