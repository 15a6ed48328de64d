"""How hard ftdesk may press the Fidelity upstream: budgets that cost nothing until the upstream pushes back.

Three budgets, each its own object, so none waits behind another:

* **Reads** (``ReadBudget``) go out at once while the upstream has not complained: no fixed rate, only
  a cap on distinct reads in flight (identical concurrent reads already share one call, and a desktop
  app keeps a handful of connections per host). Fidelity has never been seen limiting rates, so the
  limit is learned: a 429, or a 503 with ``Retry-After``, halves the rate reads were going at
  (multiplicative decrease), holds every read until ``Retry-After`` has passed, then lets the rate climb
  back by a tenth of where it was every ``RECOVERY_INTERVAL`` (additive increase). Once back where the
  upstream complained, the limit is lifted. ``read_rate`` adds a fixed ceiling for those who want one.
* **Order entry and other writes** (``TokenBucket``, ``order_rate``): spaced, never refused, never queued
  behind reads, never retried.
* **Logins** (``LoginBudget``): a handful a minute, refused at once with the wait in the error, so a
  re-login loop (or a script with a wrong password) cannot get the account locked.

Why not a library for the limiting: aiolimiter and pyrate-limiter read time from the event loop or the
system clock and sleep with ``asyncio.sleep``, so their waits cannot run on the injected ``Clock`` that
tests drive by hand; and neither changes a bucket's rate while it is in use, which the adaptive read
budget does. The retry mechanics do come from a library (tenacity, in ``http``), which takes our sleep.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError

DECREASE_FACTOR = 0.5
"""A pushback halves the read rate (the classic multiplicative decrease)."""
RECOVERY_INTERVAL = 2.0
"""Seconds without pushback between two additive steps back up (a tenth of the rate before the pushback)."""
MIN_READ_RATE = 0.2
"""The read rate never drops below one call every five seconds, however often the upstream complains."""
T = TypeVar("T")

MAX_RETRY_AFTER = 300.0
"""A Retry-After longer than this is taken as this (the per-call budget stops a read long before)."""


class TokenBucket:
    """A token bucket on a ``Clock``: ``burst`` calls at once, then ``rate`` per second, first come first served."""

    def __init__(self, rate: float, burst: int, clock: Clock, *, tokens: float | None = None) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst) if tokens is None else min(tokens, float(burst))
        self._stamp = clock.monotonic()
        self._lock = asyncio.Lock()

    @property
    def rate(self) -> float:
        """Return the sustained rate, calls per second."""
        return self._rate

    def wait_time(self) -> float:
        """Return how long the next call would wait for its token (0 when one is there)."""
        self._refill()
        return 0.0 if self._tokens >= 1 and not self._lock.locked() else (1 - min(self._tokens, 1.0)) / self._rate

    def try_take(self) -> bool:
        """Take a token if one is there now and nobody is queued; say whether it was taken."""
        self._refill()
        if self._tokens >= 1 and not self._lock.locked():
            self._tokens -= 1
            return True
        return False

    async def acquire(self, deadline: float | None = None, on_late: Callable[[float], Exception] | None = None) -> None:
        """Wait until a call may go out, then take its token.

        With a ``deadline`` (clock-monotonic seconds), raise ``on_late(wait)`` instead of waiting past it.
        """
        if self.try_take():
            return
        # The lock queues waiters in arrival order; cancelling a waiter releases it and takes nothing.
        async with self._lock:
            while True:
                self._refill()
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self._rate
                if deadline is not None and self._clock.monotonic() + wait > deadline:
                    raise (on_late or _late)(wait)
                await self._clock.sleep(wait)

    def _refill(self) -> None:
        now = self._clock.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now


def _late(wait: float) -> Exception:
    return BrokerError(f"Fidelity calls are being spaced out: the next one could go in {wait:.1f} s")


def budget_exhausted(wait: float, what: str) -> BrokerError:
    """Return the error of a read that could not go out within its time budget (502 BROKER_ERROR, documented)."""
    return BrokerError(
        f"Fidelity asked ftdesk to slow down and the {what} could not go out within its time budget: "
        f"try again in {max(wait, 0.1):.1f} s",
        details={"reason": "UPSTREAM_BUSY", "retry_after": round(max(wait, 0.1), 1)},
    )


class ReadBudget:
    """The adaptive read budget (see the module docstring)."""

    def __init__(self, clock: Clock, *, ceiling: float = 0.0, concurrency: int = 16) -> None:
        if ceiling < 0 or concurrency < 1:
            raise ValueError("ceiling must be 0 (none) or positive and concurrency at least 1")
        self._clock = clock
        self._ceiling = ceiling or None
        self._slots = asyncio.Semaphore(concurrency)
        self._bucket = self._ceiling_bucket()
        self._limited = False  # a pushback limit is in force (else: the ceiling or nothing)
        self._restore_to = 0.0  # the rate the upstream complained at: reached again, the limit is lifted
        self._step = 0.0
        self._stepped_at = 0.0
        self._decreased_at = -math.inf
        self._paused_until = -math.inf
        now = clock.monotonic()
        self._window_start = now
        self._window_calls = 0
        self._previous_rate = 0.0
        self.pushbacks = 0

    @property
    def rate(self) -> float | None:
        """Return the read rate in force (calls per second), or None while reads are not limited."""
        self._recover(self._clock.monotonic())
        return None if self._bucket is None else self._bucket.rate

    async def run(self, call: Callable[[], Awaitable[T]], deadline: float, what: str) -> T:
        """Run one upstream read when the budget allows; raise ``budget_exhausted`` rather than wait past deadline."""
        now = self._clock.monotonic()
        self._recover(now)
        pause = self._paused_until - now
        if pause > 0:
            if now + pause > deadline:
                raise budget_exhausted(pause, what)
            await self._clock.sleep(pause)
        if self._bucket is not None:
            await self._bucket.acquire(deadline, lambda wait: budget_exhausted(wait, what))
        async with self._slots:
            self._count(self._clock.monotonic())
            return await call()

    def pushback(self, retry_after: float | None) -> None:
        """Take the upstream's 429 (or 503 with ``Retry-After``): pause reads, halve their rate."""
        now = self._clock.monotonic()
        self.pushbacks += 1
        if retry_after is not None:
            self._paused_until = max(self._paused_until, now + retry_after)
        if now - self._decreased_at < 1.0:
            return  # the other calls of the same burst answer the same pushback: one decrease per second
        self._decreased_at = now
        if self._limited and self._bucket is not None:
            current = self._bucket.rate
        else:  # halve what reads were really doing, not a ceiling they may have been far below
            current = min(max(self._recent_rate(now), 1.0), self._ceiling or math.inf)
            self._restore_to = current
        self._limited = True
        new_rate = max(MIN_READ_RATE, current * DECREASE_FACTOR)
        self._step = max(MIN_READ_RATE, self._restore_to / 10)
        self._stepped_at = max(now, self._paused_until)
        # One read may go as soon as the pause ends (the pause spaced it); the rest at the new rate.
        self._bucket = TokenBucket(new_rate, max(1, math.floor(new_rate)), self._clock, tokens=1.0)

    def _recover(self, now: float) -> None:
        if not self._limited or now - self._stepped_at < RECOVERY_INTERVAL:
            return
        assert self._bucket is not None
        steps = math.floor((now - self._stepped_at) / RECOVERY_INTERVAL)
        self._stepped_at += steps * RECOVERY_INTERVAL
        rate = self._bucket.rate + steps * self._step
        top = min(self._restore_to, self._ceiling or math.inf)
        if rate >= top:
            self._limited = False
            self._bucket = self._ceiling_bucket()
            return
        self._bucket = TokenBucket(rate, max(1, math.floor(rate)), self._clock, tokens=0.0)

    def _ceiling_bucket(self) -> TokenBucket | None:
        ceiling = self._ceiling
        return None if ceiling is None else TokenBucket(ceiling, max(1, math.ceil(ceiling)), self._clock)

    def _count(self, now: float) -> None:
        elapsed = now - self._window_start
        if elapsed >= 1.0:
            self._previous_rate = self._window_calls / elapsed
            self._window_start, self._window_calls = now, 0
        self._window_calls += 1

    def _recent_rate(self, now: float) -> float:
        elapsed = max(now - self._window_start, 1.0)
        return max(self._previous_rate, self._window_calls / elapsed)


class LoginBudget:
    """At most ``per_minute`` logins a minute (all at once if need be); one more is refused, never queued."""

    def __init__(self, per_minute: int, clock: Clock) -> None:
        self._per_minute = per_minute
        self._bucket = TokenBucket(per_minute / 60.0, per_minute, clock)

    def take(self) -> None:
        """Count one login; raise ``BrokerError`` (reason ``LOGIN_RATE_LIMITED``, with the wait) when over budget."""
        if self._bucket.try_take():
            return
        wait = max(self._bucket.wait_time(), 1.0)
        raise BrokerError(
            f"ftdesk has logged in to Fidelity {self._per_minute} times in the last minute and waits before "
            f"another, so Fidelity does not lock the account: try again in {wait:.0f} s",
            details={"reason": "LOGIN_RATE_LIMITED", "retry_after": float(math.ceil(wait))},
        )


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Return the seconds a ``Retry-After`` header asks for (delay or HTTP date), capped; None when absent or bad."""
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - now).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Politeness:
    """The three budgets of one broker (they outlive logins: a re-login loop must not reset them)."""

    def __init__(
        self,
        clock: Clock,
        *,
        read_rate: float = 0.0,
        read_concurrency: int = 16,
        order_rate: float = 5.0,
        login_per_minute: int = 5,
    ) -> None:
        self.reads = ReadBudget(clock, ceiling=read_rate, concurrency=read_concurrency)
        self.writes = TokenBucket(order_rate, max(1, math.ceil(2 * order_rate)), clock)
        self.logins = LoginBudget(login_per_minute, clock)
