"""The paper quote feed (ticks, subscriptions, limits, closing) and the account-event bus."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ftdesk.brokers.base import AccountEventFeed, QuoteFeed, QuoteFeedMessage, SymbolError
from ftdesk.brokers.paper.feeds import EventBus, PaperAccountEventFeed, PaperQuoteConnection, PaperQuoteFeed
from ftdesk.domain.errors import AuthRequired, BrokerError
from ftdesk.domain.events import AccountEvent, account_event
from ftdesk.domain.market import Quote
from tests.fakes.clock import ManualClock
from tests.fakes.paper_market import ScriptedMarket

TICK = 1.0


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


class Collector:
    """Reads an async iterator in the background so a test can look at what arrived so far."""

    def __init__(self, source: AsyncIterator[Any]) -> None:
        self.items: list[Any] = []
        self.task = asyncio.create_task(self._run(source))

    async def _run(self, source: AsyncIterator[Any]) -> None:
        async for item in source:
            self.items.append(item)

    def take(self) -> list[Any]:
        items, self.items = self.items, []
        return items

    @property
    def ended(self) -> bool:
        return self.task.done()


def quoted(messages: list[QuoteFeedMessage]) -> list[tuple[str, float]]:
    return [(m.symbol, m.last) for m in messages if isinstance(m, Quote)]


class Desk:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.market = ScriptedMarket(self.clock)
        for i, symbol in enumerate(["AAPL", "MSFT", "NVDA", "SPY"]):
            self.market.add_equity(symbol, 100.0 + i)
        self.session_error: Exception | None = None
        self.feed = PaperQuoteFeed(self.market, self.clock, TICK, self.check_session)

    def check_session(self) -> None:
        if self.session_error is not None:
            raise self.session_error

    async def open(self) -> tuple[PaperQuoteConnection, Collector]:
        connection = await self.feed.connect()
        collector = Collector(connection.messages())
        await settle()
        return connection, collector


@pytest.fixture
def desk() -> Desk:
    return Desk()


# --- quote feed --------------------------------------------------------------------------------


def test_feeds_satisfy_the_broker_protocols(desk: Desk) -> None:
    assert isinstance(desk.feed, QuoteFeed)
    assert desk.feed.max_symbols_per_message == 50
    assert isinstance(PaperAccountEventFeed(EventBus()), AccountEventFeed)
    assert PaperAccountEventFeed(EventBus()).unavailable_reason() is None


def test_tick_interval_must_be_positive(desk: Desk) -> None:
    with pytest.raises(ValueError, match="tick_interval"):
        PaperQuoteFeed(desk.market, desk.clock, 0, desk.check_session)


async def test_connect_is_refused_without_a_session(desk: Desk) -> None:
    desk.session_error = AuthRequired("Not logged in")
    with pytest.raises(AuthRequired):
        await desk.feed.connect()
    assert desk.feed.open_connection_count == 0


async def test_subscribed_symbols_tick_and_others_do_not(desk: Desk) -> None:
    connection, messages = await desk.open()
    await connection.subscribe(["AAPL", "MSFT"])
    await settle()
    assert quoted(messages.take()) == [("AAPL", 100.0), ("MSFT", 101.0)]  # right away, no clock movement

    desk.market.set_price("AAPL", 100.5)
    desk.market.set_price("NVDA", 150.0)  # not subscribed
    await settle()
    assert messages.take() == []  # nothing before the next tick
    await desk.clock.advance(TICK)
    assert quoted(messages.take()) == [("AAPL", 100.5)]  # MSFT unchanged: skipped

    desk.market.set_price("AAPL", 101.0)
    desk.market.set_price("MSFT", 102.0)
    await desk.clock.advance(TICK)
    assert quoted(messages.take()) == [("AAPL", 101.0), ("MSFT", 102.0)]

    await desk.clock.advance(5 * TICK)
    assert messages.take() == []  # no change, no messages
    await connection.close()


async def test_a_new_timestamp_alone_is_not_a_change(desk: Desk) -> None:
    connection, messages = await desk.open()
    await connection.subscribe(["SPY"])
    await settle()
    assert len(messages.take()) == 1
    await desk.clock.advance(TICK)
    desk.market.set_price("SPY", 103.0)  # same price, later time
    await desk.clock.advance(TICK)
    assert messages.take() == []
    await connection.close()


async def test_unsubscribe_stops_updates(desk: Desk) -> None:
    connection, messages = await desk.open()
    await connection.subscribe(["AAPL", "MSFT"])
    await settle()
    messages.take()
    await connection.unsubscribe(["AAPL"])
    desk.market.set_price("AAPL", 120.0)
    desk.market.set_price("MSFT", 121.0)
    await desk.clock.advance(TICK)
    assert quoted(messages.take()) == [("MSFT", 121.0)]
    assert connection.subscribed == ["MSFT"]
    # Subscribing again gets the current quote at once, even though it did not change since.
    await connection.subscribe(["AAPL"])
    await settle()
    assert quoted(messages.take()) == [("AAPL", 120.0)]
    await connection.close()


async def test_unknown_symbol_gets_a_symbol_error(desk: Desk) -> None:
    connection, messages = await desk.open()
    await connection.subscribe(["AAPL", "NOPE"])
    await settle()
    received = messages.take()
    errors = [m for m in received if isinstance(m, SymbolError)]
    assert [e.symbol for e in errors] == ["NOPE"]
    assert quoted(received) == [("AAPL", 100.0)]
    assert connection.subscribed == ["AAPL"]
    await desk.clock.advance(3 * TICK)
    assert messages.take() == []  # the error is reported once
    await connection.close()


async def test_at_most_50_symbols_per_subscribe_message(desk: Desk) -> None:
    for i in range(60):
        desk.market.add_equity(f"S{i:02d}", 10.0 + i)
    connection, messages = await desk.open()
    with pytest.raises(ValueError, match="50"):
        await connection.subscribe([f"S{i:02d}" for i in range(51)])
    assert connection.subscribed == []
    await connection.subscribe([f"S{i:02d}" for i in range(50)])
    await settle()
    assert len(quoted(messages.take())) == 50
    await connection.close()


async def test_close_while_sleeping_ends_messages_promptly(desk: Desk) -> None:
    connection, messages = await desk.open()
    await connection.subscribe(["AAPL"])
    await settle()
    assert desk.clock.sleeper_count == 1  # waiting for the next tick
    await connection.close()
    await settle()
    assert messages.ended  # without the clock moving
    assert desk.clock.sleeper_count == 0
    assert desk.feed.open_connection_count == 0
    await connection.close()  # idempotent


async def test_drop_connections_ends_every_open_connection(desk: Desk) -> None:
    first, first_messages = await desk.open()
    second, second_messages = await desk.open()
    await first.subscribe(["AAPL"])
    await second.subscribe(["MSFT"])
    await settle()
    assert desk.feed.open_connection_count == 2
    desk.feed.drop_connections()
    await settle()
    assert first_messages.ended
    assert second_messages.ended
    assert desk.feed.open_connection_count == 0
    with pytest.raises(BrokerError):
        await first.subscribe(["SPY"])
    # The hub's reconnect gets a working connection again.
    third, third_messages = await desk.open()
    await third.subscribe(["SPY"])
    await settle()
    assert quoted(third_messages.take()) == [("SPY", 103.0)]
    await third.close()


async def test_snapshot_returns_known_symbols_only(desk: Desk) -> None:
    quotes = await desk.feed.snapshot(["MSFT", "NOPE", "AAPL"])
    assert [(q.symbol, q.last) for q in quotes] == [("MSFT", 101.0), ("AAPL", 100.0)]
    assert desk.feed.open_connection_count == 0


# --- account events ----------------------------------------------------------------------------


def event(n: int) -> AccountEvent:
    return account_event("SPBSM", {"n": n}, time="2026-11-16T15:00:00+00:00")


async def test_every_connection_gets_every_event_in_order() -> None:
    bus = EventBus()
    feed = PaperAccountEventFeed(bus)
    first, second = await feed.connect(), await feed.connect()
    a, b = Collector(first.events()), Collector(second.events())
    for n in range(5):
        bus.publish(event(n))
    await settle()
    assert [e.desc["n"] for e in a.take()] == [0, 1, 2, 3, 4]
    assert [e.desc["n"] for e in b.take()] == [0, 1, 2, 3, 4]
    await first.close()
    await settle()
    assert a.ended
    bus.publish(event(5))
    await settle()
    assert [e.desc["n"] for e in b.take()] == [5]
    assert bus.connection_count == 1
    await second.close()
    await first.close()  # idempotent


async def test_events_published_before_connecting_are_not_replayed() -> None:
    bus = EventBus()
    bus.publish(event(0))
    connection = bus.connect()
    bus.publish(event(1))
    collector = Collector(connection.events())
    await settle()
    assert [e.desc["n"] for e in collector.take()] == [1]
    await connection.close()


async def test_overflowing_connection_is_closed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    slow = bus.connect()  # never read while publishing
    fast = bus.connect()
    fast_reader = Collector(fast.events())
    caplog.set_level(logging.WARNING, logger="ftdesk.brokers.paper.feeds")
    for n in range(10_001):
        bus.publish(event(n))
        if n % 1000 == 999:
            await settle()  # the fast reader gets its turn; the slow one never reads
    assert bus.connection_count == 1
    assert slow.closed
    assert "10000 events behind" in caplog.text
    # What was queued before the overflow is still delivered, in order; then the stream ends.
    drained = [e.desc["n"] async for e in slow.events()]
    assert drained == list(range(10_000))
    await settle()
    assert len(fast_reader.take()) == 10_001  # a reader that keeps up is unaffected
    await fast.close()
