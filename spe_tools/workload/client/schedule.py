"""A replay's clock, shared by the access-log and the HAR replay: each request sent at its offset from the run's
start, those still out at the end waited for (bounded), a progress line now and then, and what the exchanges
add up to (how late each was sent versus its schedule, statuses, errors)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from spe_tools.workload.client.connections import Exchange, Pool
from spe_tools.workload.client.stats import distribution, fmt_ms

T = TypeVar("T")
START_MARGIN_S = 0.05  # a moment to get going: the first request is not late by set-up
LATE_MS = 20  # the summary counts requests sent later than this


def within(timed: list[tuple[float, T]], duration: float | None) -> list[tuple[float, T]]:
    """The requests scheduled in the first `duration` seconds (all of them without one)."""
    return timed if duration is None else [(offset, item) for offset, item in timed if offset <= duration]


class Schedule(Generic[T]):
    """Sends `timed` ((offset seconds, request) pairs, by offset) with `send(request, at)`, each at its offset; `at`
    is its scheduled event-loop time, which the Exchange it returns keeps."""

    def __init__(self, timed: list[tuple[float, T]], send: Callable[[T, float], Awaitable[Exchange]],
                 timeout: float, report_every: float, name: str = "replay"):
        self.timed, self.send, self.timeout, self.report_every, self.name = timed, send, timeout, report_every, name
        self.results: list[Exchange] = []
        self.in_flight: set[asyncio.Task] = set()
        self.lost = 0  # still out when the final wait ended
        self.start = 0.0

    async def run(self) -> float:
        """Send everything, wait up to `timeout` for what is still out; the seconds it took."""
        loop = asyncio.get_running_loop()
        self.start = loop.time() + START_MARGIN_S
        reporter = asyncio.create_task(self.report_progress())
        for offset, request in self.timed:
            at = self.start + offset
            if (delay := at - loop.time()) > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self._one(request, at))
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)
        if self.in_flight:
            await asyncio.wait(list(self.in_flight), timeout=self.timeout)
        self.lost = len(self.in_flight)
        for task in list(self.in_flight):
            task.cancel()
        reporter.cancel()
        return max(loop.time() - self.start, 0.0)

    async def _one(self, request: T, at: float) -> None:
        self.results.append(await self.send(request, at))

    async def report_progress(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.report_every)
            late = distribution([ex.late_ms for ex in self.results])
            print(f"{self.name}: t={loop.time() - self.start:.0f}s sent={len(self.results) + len(self.in_flight)}/"
                  f"{len(self.timed)} errors={sum(1 for ex in self.results if ex.error)} late {fmt_ms(late)}",
                  file=sys.stderr, flush=True)


async def run_closing(schedule: Schedule, pools: dict[object, Pool]) -> float:
    """Run the schedule, then close the connections its requests left open (`pools`, filled as they are sent)."""
    try:
        return await schedule.run()
    finally:
        for pool in pools.values():
            pool.close()


def exchange_summary(schedule: Schedule, elapsed: float) -> dict:
    """What the replay's exchanges add up to (the summary fields both replays share)."""
    results = schedule.results
    ok = [ex for ex in results if not ex.error]
    late = [ex.late_ms for ex in results]
    return {
        "scheduled": len(schedule.timed), "sent": len(results), "completed": len(ok),
        "errors": len(results) - len(ok), "lost": schedule.lost,
        "error_kinds": dict(Counter(ex.error.split(":")[0] for ex in results if ex.error)),
        "elapsed_s": round(elapsed, 3),
        "trace_span_s": round(schedule.timed[-1][0], 3) if schedule.timed else 0.0,
        "statuses": {str(k): v for k, v in sorted(Counter(ex.status for ex in ok).items())},
        "late_ms": distribution(late), "late_over_20ms": sum(1 for v in late if v > LATE_MS),
        "response_ms": distribution([ex.response_ms for ex in ok]),
        "bytes": sum(ex.length for ex in ok),
    }


def print_exchanges(s: dict, name: str = "replay") -> None:
    """The summary lines of exchange_summary()'s fields."""
    print(f"{name}: {s['completed']} completed, {s['errors']} errors, {s['lost']} still out; statuses {s['statuses']}")
    print(f"{name}: sent late vs schedule: {fmt_ms(s['late_ms'])}; {s['late_over_20ms']} over {LATE_MS} ms")
    print(f"{name}: response {fmt_ms(s['response_ms'])}")
