"""Fidelity's market as the paper engine sees it, on the fake MDDS: streamed quotes, staleness and snapshots."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from ftdesk.brokers.paper_on_fidelity.market import FidelityMarket
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import Quote
from tests.component.conftest import logged_in, running_fake
from tests.fakes.clock import ManualClock
from tests.fakes.mdds_server import FakeMdds

RKLB_ASK = 56.73  # the fake MDDS's captured RKLB snapshot


class RecordingLive:
    """A live stream that records what the market holds; the test hands quotes to the market itself."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.carried: dict[str, Quote] = {}  # what the open connection carries (the hub's latest quotes)

    def hold(self, symbols: Sequence[str]) -> None:
        self.held.extend(symbols)

    def release(self, symbols: Sequence[str]) -> None:
        self.held = [symbol for symbol in self.held if symbol not in symbols]

    def start(self, receive: Callable[[Quote], None]) -> None:
        self.receive = receive

    def latest(self, symbol: str) -> Quote | None:
        return self.carried.get(symbol)


def streamed(symbol: str, ask: float) -> Quote:
    return Quote(symbol=symbol, last=ask - 0.05, bid=ask - 0.1, ask=ask, ask_size=100, time="2026-11-16T15:00:00Z")


async def test_a_stale_stream_is_refreshed_by_a_snapshot_before_pricing_and_a_fresh_one_is_not() -> None:
    mdds = FakeMdds()
    await mdds.start()
    try:
        async with running_fake(mdds=mdds) as fake, logged_in(fake) as broker:
            clock = ManualClock()
            market = FidelityMarket(broker.quote_feed, clock, stale_after=5)
            live = RecordingLive()
            market.attach(live)
            moved: list[str] = []
            market.on_quote(moved.append)

            live.receive(streamed("RKLB", 99.10))  # a streamed quote: priced as is, the engine told at once
            assert market.quote("RKLB").ask == 99.10 and moved == ["RKLB"]
            await market.prepare(["RKLB"])
            assert market.snapshots_taken == 0 and live.held == ["RKLB"]  # fresh: no snapshot

            await clock.advance(6)  # the stream went quiet: stale
            with pytest.raises(NotFound, match="No real quote for RKLB"):
                market.quote("RKLB")
            await market.prepare(["RKLB"])
            assert market.snapshots_taken == 1
            assert market.quote("RKLB").ask == RKLB_ASK  # Fidelity's price now, from the snapshot

            await clock.advance(60)  # quiet for a minute, but the open stream carries it: current, no snapshot
            live.carried["RKLB"] = streamed("RKLB", 57.00)
            await market.prepare(["RKLB"])
            assert market.snapshots_taken == 1 and market.quote("RKLB").ask == 57.00
            await market.close()
    finally:
        await mdds.close()


async def test_an_option_holds_its_underlying_too_and_keeps_the_compact_symbol() -> None:
    mdds = FakeMdds()
    await mdds.start()
    try:
        async with running_fake(mdds=mdds) as fake, logged_in(fake) as broker:
            market = FidelityMarket(broker.quote_feed, ManualClock())
            live = RecordingLive()
            market.attach(live)
            await market.prepare(["-rklb261218c60"])
            assert live.held == ["RKLB261218C60", "RKLB"]
            assert market.quote("RKLB261218C60").ask > 0  # the option's own quote, keyed without MDDS's dash
            instrument = market.instrument("RKLB261218C60")
            assert instrument.option is not None and instrument.multiplier == 100
            await market.close()
    finally:
        await mdds.close()


async def test_a_symbol_fidelity_does_not_quote_cannot_be_priced() -> None:
    mdds = FakeMdds(unknown={"NOPE"})
    await mdds.start()
    try:
        async with running_fake(mdds=mdds) as fake, logged_in(fake) as broker:
            market = FidelityMarket(broker.quote_feed, ManualClock())
            await market.prepare(["NOPE"])
            with pytest.raises(NotFound, match="never priced from the simulation"):
                market.quote("NOPE")
    finally:
        await mdds.close()


async def test_held_symbols_are_released_once_nothing_needs_them_and_the_linger_has_passed() -> None:
    mdds = FakeMdds()
    await mdds.start()
    try:
        async with running_fake(mdds=mdds) as fake, logged_in(fake) as broker:
            clock = ManualClock()
            market = FidelityMarket(broker.quote_feed, clock, linger=30)
            live = RecordingLive()
            market.attach(live)
            holdings = ["RKLB261218C60"]  # an option held: it and its underlying stay
            market.keep_needed(lambda: holdings)
            await market.prepare(["RKLB261218C60", "F"])
            await clock.advance(20)
            await market.prepare(["AAPL"])
            assert market.release_unneeded() == [] and sorted(live.held) == ["AAPL", "F", "RKLB", "RKLB261218C60"]

            await clock.advance(15)  # F read 35 s ago, AAPL 15 s ago
            assert market.release_unneeded() == ["F"] and "F" not in live.held
            holdings.clear()  # the option was sold
            await clock.advance(31)  # the sweep on the clock lets go of the rest
            assert live.held == []
            await market.close()
    finally:
        await mdds.close()
