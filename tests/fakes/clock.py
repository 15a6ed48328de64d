"""Clocks for tests: one that only moves when a test moves it, and one that runs from a fixed anchor.

Both start at ``ANCHOR`` unless told otherwise, so nothing a test asserts depends on the day it runs.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta

# Monday 2026-11-16 10:00 New York: a regular session, away from holidays, expirations and DST changes.
ANCHOR = datetime(2026, 11, 16, 15, 0, tzinfo=UTC)


class ManualClock:
    """Deterministic clock: ``advance()`` moves time and wakes the sleepers whose deadline passed."""

    def __init__(self, start: datetime | None = None) -> None:
        self._wall = start or ANCHOR
        self._mono = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._counter = itertools.count()

    def now(self) -> datetime:
        """Return the fake UTC time."""
        return self._wall

    def monotonic(self) -> float:
        """Return the fake monotonic time."""
        return self._mono

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock has been advanced by ``seconds``."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._counter), future))
        await future

    @property
    def sleeper_count(self) -> int:
        """Number of coroutines currently sleeping on this clock."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in deadline order and letting them run."""
        target = self._mono + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            step = deadline - self._mono
            self._mono = deadline
            self._wall += timedelta(seconds=step)
            if not future.done():
                future.set_result(None)
            for _ in range(5):
                await asyncio.sleep(0)
        self._wall += timedelta(seconds=target - self._mono)
        self._mono = target
        for _ in range(5):
            await asyncio.sleep(0)

    def set_wall(self, when: datetime) -> None:
        """Jump the wall clock (monotonic time is unchanged)."""
        self._wall = when


class AnchoredClock:
    """A real-time clock whose wall time starts at a fixed anchor: sleeps and timeouts are real, dates are not.

    For servers and fakes that must run on real time (sockets, retries, keep-alives) yet give the same
    answers whatever day the suite runs: wall time is ``start`` plus the monotonic time since creation.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or ANCHOR
        self._origin = time.monotonic()

    def now(self) -> datetime:
        """Return the anchor plus the time elapsed since this clock was made."""
        return self._start + timedelta(seconds=time.monotonic() - self._origin)

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep with asyncio."""
        await asyncio.sleep(seconds)
