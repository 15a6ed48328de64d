"""The read budget's own rules on a hand-driven clock: Retry-After, the in-flight cap, a fixed ceiling."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta
from email.utils import format_datetime

import pytest

from ftdesk.brokers.fidelity.politeness import MAX_RETRY_AFTER, ReadBudget, parse_retry_after
from ftdesk.domain.errors import BrokerError
from tests.fakes.clock import ANCHOR, ManualClock


def test_retry_after_as_seconds_or_as_a_date() -> None:
    assert parse_retry_after("2", ANCHOR) == 2.0
    assert parse_retry_after(format_datetime(ANCHOR + timedelta(seconds=5), usegmt=True), ANCHOR) == 5.0
    assert parse_retry_after(format_datetime(ANCHOR - timedelta(seconds=5), usegmt=True), ANCHOR) == 0.0
    assert parse_retry_after("86400", ANCHOR) == MAX_RETRY_AFTER
    for bad in (None, "", "soon", "nan"):
        assert parse_retry_after(bad, ANCHOR) is None


async def test_distinct_reads_in_flight_are_capped() -> None:
    clock = ManualClock()
    budget = ReadBudget(clock, concurrency=2)
    gates = [asyncio.Event() for _ in range(3)]
    started: list[int] = []

    async def read(index: int) -> int:
        started.append(index)
        await gates[index].wait()
        return index

    tasks = [
        asyncio.create_task(budget.run(functools.partial(read, i), deadline=clock.monotonic() + 10, what="x"))
        for i in range(3)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    assert started == [0, 1]
    gates[0].set()
    assert await tasks[0] == 0
    for _ in range(5):
        await asyncio.sleep(0)
    assert started == [0, 1, 2]
    gates[1].set()
    gates[2].set()
    assert [await task for task in tasks[1:]] == [1, 2]


async def test_a_fixed_ceiling_spaces_reads_and_never_waits_past_the_deadline() -> None:
    clock = ManualClock()
    budget = ReadBudget(clock, ceiling=2.0)

    async def answer() -> str:
        return "ok"

    for _ in range(2):  # a second's worth at once
        assert await budget.run(answer, deadline=clock.monotonic() + 10, what="x") == "ok"
    with pytest.raises(BrokerError) as caught:
        await budget.run(answer, deadline=clock.monotonic() + 0.1, what="positions read")
    assert caught.value.details["reason"] == "UPSTREAM_BUSY"
    third = asyncio.create_task(budget.run(answer, deadline=clock.monotonic() + 10, what="x"))
    await clock.advance(0.4)
    assert not third.done()
    await clock.advance(0.1)
    assert await third == "ok"


async def test_pushback_halves_what_reads_were_doing_then_climbs_back_and_lifts_the_limit() -> None:
    clock = ManualClock()
    budget = ReadBudget(clock)

    async def answer() -> str:
        return "ok"

    for _ in range(20):  # 20 reads in the last second
        await budget.run(answer, deadline=clock.monotonic() + 10, what="x")
    assert budget.rate is None
    budget.pushback(retry_after=None)
    assert budget.rate == 10.0
    budget.pushback(retry_after=None)  # the same burst of pushback: one decrease
    assert budget.rate == 10.0
    await clock.advance(2.0)
    assert budget.rate == 12.0  # a tenth of where it was, every 2 s
    await clock.advance(6.0)
    assert budget.rate == 18.0
    await clock.advance(2.0)
    assert budget.rate is None  # back where the upstream complained: no limit
