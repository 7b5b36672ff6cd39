"""What the per-proxy table's figures mean and the units it is read in (ROPE's Tables 1 and 2 and what the paper
lacked). The table itself is analysis/stats_sql.py's, for either engine; each summary statistic it uses is
defined once, in spe_tools/summary_stats.py.

Definitions (also in docs/report.md):
- requests: client requests the row had to answer; responses: replies that arrived complete
  (a status and no leg error; mismatching replies count, they were delivered).
- match %: OK results / requests. Each result class likewise, as a % of requests.
- latency: total time (request start to last byte) of the responses, in ms; percentiles use
  linear interpolation between order statistics; the 95 % confidence interval of the mean is
  mean ± 1.96·s/√n, that of the median the order statistics at n/2 ∓ 0.98·√n (rank-based).
"""

from __future__ import annotations

# The result classes (RESULT_CLASSES, NOT_MISMATCHES) are the log contract's: spe_tools/rundir/records.py.

# Microseconds to milliseconds as polars converts them (a column divided by a number is multiplied by its reciprocal:
# the two differ in the last bit), for the queries that read what polars computed before them
# (analysis/sections/paired.py, figures.py): a median of two values at a tie of the report's last digit (-1.725)
# then rounds as it did.
MS_PER_US = 1 / 1000
