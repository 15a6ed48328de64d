"""Waiting on the injected clock, so every delay of the streaming layer can be driven by a test clock."""

from __future__ import annotations

import asyncio

from ftdesk.domain.clock import Clock


async def wait_event_until(clock: Clock, event: asyncio.Event, deadline: float | None) -> None:
    """Wait until ``event`` is set or the clock's monotonic time reaches ``deadline`` (None: no deadline)."""
    if event.is_set():
        return
    if deadline is None:
        await event.wait()
        return
    remaining = deadline - clock.monotonic()
    if remaining <= 0:
        return
    # The remaining time is taken from the clock at the moment of sleeping, so a deadline stays absolute
    # even when this coroutine starts a little after the clock moved.
    sleeper = asyncio.ensure_future(clock.sleep(remaining))
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        waiter.cancel()


async def sleep_until(clock: Clock, deadline: float) -> None:
    """Sleep on the clock until its monotonic time reaches ``deadline``."""
    remaining = deadline - clock.monotonic()
    if remaining > 0:
        await clock.sleep(remaining)
