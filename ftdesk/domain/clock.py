"""Time as a collaborator, so delays, expiries and backoff can be driven by tests."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


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
