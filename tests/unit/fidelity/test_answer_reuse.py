"""What proves a kept account answer current: which reads count as account reads, and when events are live."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ftdesk.brokers.fidelity.answer_reuse import EventWatch, WatchedFeed, account_read
from ftdesk.brokers.fidelity.market_data import CHART_URL
from ftdesk.brokers.fidelity.orders_wire import EQUITY_PLACE_URL, STATUS_SUMMARY_URL
from ftdesk.brokers.fidelity.portfolio import BALANCES_URL, POSITIONS_URL
from ftdesk.domain.events import AccountEvent, account_event


class ScriptedConnection:
    """An account-event connection that delivers what the test puts in, until closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[AccountEvent | None] = asyncio.Queue()

    async def events(self) -> AsyncIterator[AccountEvent]:
        while (event := await self.queue.get()) is not None:
            yield event

    async def close(self) -> None:
        self.queue.put_nowait(None)


class ScriptedFeed:
    def __init__(self) -> None:
        self.connection = ScriptedConnection()

    def unavailable_reason(self) -> str | None:
        return None

    async def connect(self) -> ScriptedConnection:
        return self.connection


def test_positions_balances_and_order_status_are_account_reads_and_quotes_and_orders_are_not() -> None:
    assert account_read(POSITIONS_URL) and account_read(BALANCES_URL) and account_read(STATUS_SUMMARY_URL)
    assert account_read(f"{POSITIONS_URL}?acct=1")  # the query does not matter
    assert not account_read(CHART_URL)  # a price changes without any account event
    assert not account_read(EQUITY_PLACE_URL)


async def test_events_are_live_while_read_and_every_event_moves_the_epoch() -> None:
    watch, feed = EventWatch(), ScriptedFeed()
    connection = await WatchedFeed(feed, watch).connect()
    assert not watch.live  # connected, but nobody reads its events yet
    got: list[AccountEvent] = []

    async def read() -> None:
        async for event in connection.events():
            got.append(event)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)
    assert watch.live
    epoch = watch.epoch
    feed.connection.queue.put_nowait(account_event("MFCEX", {"acct_num": "X1"}, time="2026-01-05T15:00:00Z"))
    async with asyncio.timeout(5):
        while not got:  # noqa: ASYNC110 - the reader has no event to wait on
            await asyncio.sleep(0)
    assert watch.epoch == epoch + 1 and watch.events == 1

    await connection.close()
    assert not watch.live  # at once, before the reader has even noticed
    await reader
    assert not watch.live and watch.epoch > epoch + 1
