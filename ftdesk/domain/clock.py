"""Time as a collaborator, so delays, expiries and backoff can be driven by tests."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, date, datetime
from typing import Protocol
from zoneinfo import ZoneInfo

TRADING_ZONE = ZoneInfo("America/New_York")
"""The US markets' zone: a trading day is its date there, as on the brokers' statements."""


def trading_day(now: datetime) -> date:
    """Return the America/New_York date of a time."""
    return now.astimezone(TRADING_ZONE).date()


class Clock(Protocol):
    """Wall time, monotonic time and sleeping."""

    def now(self) -> datetime:
        """Return the current UTC time (timezone-aware)."""

    def monotonic(self) -> float:
        """Return seconds from an arbitrary origin that never goes backwards."""

    async def sleep(self, seconds: float) -> None:
        """Sleep for ``seconds`` of this clock's time."""


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """Return the current UTC time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep with asyncio."""
        await asyncio.sleep(seconds)
