"""Waiting in tests for a condition that no event announces: one bounded poll on the running loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_until(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Poll ``condition()`` on the running loop until it holds; fail the test after ``within`` seconds.

    Real time, not a test clock: the conditions span tasks, sockets and (in GUI tests) Qt widgets, which
    share no change event. It never starts a nested Qt loop, so GUI tests on qasync may use it too.
    """
    try:
        async with asyncio.timeout(within):
            while not condition():  # noqa: ASYNC110 - polled because no event announces the change
                await asyncio.sleep(0.002)
    except TimeoutError:
        raise AssertionError(f"condition not met within {within:g} s") from None
