"""Waiting in tests that mix a manual clock (delays) with real sockets (I/O)."""

from __future__ import annotations

import asyncio

from tests.fakes.clock import ManualClock


async def settle(rounds: int = 40) -> None:
    """Let every ready task run (no clock movement)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance_in_steps(clock: ManualClock, seconds: float, step: float = 0.25) -> None:
    """Move the manual clock in small steps, letting ready tasks run before and after each."""
    await settle()
    remaining = seconds
    while remaining > 1e-9:
        move = min(step, remaining)
        await clock.advance(move)
        await settle()
        remaining -= move
