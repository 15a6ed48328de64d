"""Cold paper symbols: their first quotes are computed in small steps that leave the event loop free."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime

import pytest

from ftdesk.brokers.base import QuoteFeedMessage
from ftdesk.brokers.paper.feeds import PaperQuoteFeed
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.market import Quote
from tests.fakes.clock import ManualClock

MONDAY_10AM = datetime(2026, 11, 16, 15, 0, tzinfo=UTC)
SEED = 7
COLD_SYMBOLS = 100
WAIT = 60.0  # upper bound of the wait for the first quotes; about a second of work on these machines


@pytest.fixture(scope="module")
def universe() -> Universe:
    return Universe.load()


def fresh_market(universe: Universe) -> MarketSimulator:
    return MarketSimulator(universe, SEED, ManualClock(MONDAY_10AM))


def test_warm_up_takes_steps_for_a_cold_symbol_and_none_once_warm(universe: Universe) -> None:
    market = fresh_market(universe)
    assert len(list(market.warm_up("AAPL"))) > 1
    assert list(market.warm_up("AAPL")) == []
    assert list(market.warm_up("NOPE")) == []  # unknown: quote() reports it, warm-up does nothing


def test_an_option_warms_its_underlying(universe: Universe) -> None:
    reference = fresh_market(universe)
    option = reference.option_chain("MSFT").expirations[1].strikes[3].call
    assert option is not None
    market = fresh_market(universe)
    assert list(market.warm_up(option.symbol))
    assert list(market.warm_up("MSFT")) == []
    assert market.quote(option.symbol) == reference.quote(option.symbol)


def test_a_warmed_up_quote_is_the_same_as_a_cold_one(universe: Universe) -> None:
    warmed = fresh_market(universe)
    for symbol in ("SPY", "KO"):
        for _ in warmed.warm_up(symbol):
            pass
        assert warmed.quote(symbol) == fresh_market(universe).quote(symbol)


async def test_subscribing_100_cold_symbols_yields_every_first_quote_and_lets_other_tasks_run(
    universe: Universe,
) -> None:
    market = fresh_market(universe)
    clock = ManualClock(MONDAY_10AM)
    feed = PaperQuoteFeed(market, clock, 1.0, lambda: None)
    connection = await feed.connect()
    symbols = list(universe.symbols)[:COLD_SYMBOLS]
    # One timeline for both tasks: "tick" each time the other task got a turn, then each quote as it comes.
    timeline: list[str] = []
    done = asyncio.Event()

    async def other_task() -> None:
        while not done.is_set():
            if not timeline or timeline[-1] != "tick":
                timeline.append("tick")
            await asyncio.sleep(0)

    async def read() -> None:
        messages = connection.messages()
        async for message in messages:
            assert isinstance(message, Quote), message
            timeline.append(message.symbol)
            if sum(entry != "tick" for entry in timeline) == COLD_SYMBOLS:
                break
        await messages.aclose()

    reader = asyncio.create_task(read())
    ticker = asyncio.create_task(other_task())
    for first in range(0, COLD_SYMBOLS, feed.max_symbols_per_message):  # as the hub sends them
        await connection.subscribe(symbols[first : first + feed.max_symbols_per_message])
    async with asyncio.timeout(WAIT):
        await reader
    done.set()
    await ticker
    await connection.close()

    quoted = [entry for entry in timeline if entry != "tick"]
    assert sorted(quoted) == sorted(symbols)
    # Never two cold symbols in one go: the other task ran between every two first quotes.
    assert all("tick" in timeline[timeline.index(a) + 1 : timeline.index(b)] for a, b in itertools.pairwise(quoted))


async def test_first_quotes_after_a_warm_up_match_a_market_that_computed_them_at_once(universe: Universe) -> None:
    market = fresh_market(universe)
    feed = PaperQuoteFeed(market, ManualClock(MONDAY_10AM), 1.0, lambda: None)
    connection = await feed.connect()
    await connection.subscribe(["AAPL", "NVDA", "QQQ"])
    received: list[QuoteFeedMessage] = []
    messages = connection.messages()
    async with asyncio.timeout(WAIT):
        async for message in messages:
            received.append(message)
            if len(received) == 3:
                break
    await messages.aclose()
    await connection.close()
    reference = fresh_market(universe)
    assert received == [reference.quote(symbol) for symbol in ("AAPL", "NVDA", "QQQ")]
