"""The paper brokerage's two upstream streams: simulated market data and its own account events.

``PaperQuoteFeed`` plays MDDS: a connection takes subscribe/unsubscribe messages (at most 50 symbols each)
and yields one quote per subscribed symbol per tick, leaving out quotes that did not change. A subscribed
``book_key`` yields the symbol's simulated order book instead: ``BOOK_LEVELS`` levels a side stepping a cent
away from the simulated bid and ask, sizes growing with the distance, venues taking turns; it changes when the
quote does.
``EventBus`` is where the ledger, order engine and alerts publish; ``PaperAccountEventFeed`` plays BEPS
by opening connections on that bus. The streaming hub owns reconnects and fan-out, so these only speak
the protocols of ``ftdesk.brokers.base``.

The first quote of a symbol the simulated market has not computed yet costs about 10 ms (its history
since 2020 and today's minutes). A market that can ``warm_up`` a symbol in small steps gets a yield to
the event loop after each step, so subscribing 100 cold symbols interleaves with everything else on the
loop instead of stalling it for a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from ftdesk.brokers.base import QuoteFeedMessage, SymbolError, book_symbol
from ftdesk.brokers.paper.ports import MarketView
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, NotFound
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.market import BookLevel, OrderBook, Quote

log = logging.getLogger(__name__)

EVENT_QUEUE_CAPACITY = 10_000
MAX_SYMBOLS_PER_MESSAGE = 50
BOOK_LEVELS = 10
BOOK_TICK = 0.01
BOOK_VENUES = ("XNYS", "XNAS", "ARCX", "BATS", "EDGX")


def simulated_book(quote: Quote) -> OrderBook:
    """Return an order book around a quote: best level at the quote's bid and ask, one cent a level beyond."""
    base_bid = max(quote.bid_size, 100)
    base_ask = max(quote.ask_size, 100)
    bids = [
        BookLevel(price=round(quote.bid - level * BOOK_TICK, 4), size=base_bid * (level + 1), venue=venue)
        for level, venue in zip(range(BOOK_LEVELS), _venues(), strict=False)
        if quote.bid - level * BOOK_TICK > 0
    ]
    asks = [
        BookLevel(price=round(quote.ask + level * BOOK_TICK, 4), size=base_ask * (level + 1), venue=venue)
        for level, venue in zip(range(BOOK_LEVELS), _venues(), strict=False)
        if quote.ask > 0
    ]
    return OrderBook(symbol=quote.symbol, bids=bids, asks=asks, time=quote.time)


def _venues() -> Iterator[str]:
    while True:
        yield from BOOK_VENUES


# --- account events ----------------------------------------------------------------------------


class EventBusConnection:
    """One consumer of the bus: a bounded FIFO of events, read with ``events()``."""

    def __init__(self, on_close: Callable[[EventBusConnection], None], capacity: int) -> None:
        self._on_close = on_close
        self._capacity = capacity
        self._buffer: deque[AccountEvent] = deque()
        self._wake = asyncio.Event()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Return True once the connection was closed or overflowed."""
        return self._closed

    def offer(self, event: AccountEvent) -> bool:
        """Queue an event; return False (and close) when the queue is full."""
        if self._closed:
            return False
        if len(self._buffer) >= self._capacity:
            # Events already queued are still delivered; the stream then ends so the consumer knows
            # it missed some and can reconnect, instead of silently losing them.
            self._closed = True
            self._wake.set()
            return False
        self._buffer.append(event)
        self._wake.set()
        return True

    @property
    def pending(self) -> int:
        """Return how many events wait to be read."""
        return len(self._buffer)

    async def events(self) -> AsyncIterator[AccountEvent]:
        """Yield events in publication order until the connection closes."""
        while True:
            while self._buffer:
                yield self._buffer.popleft()
            if self._closed:
                return
            self._wake.clear()
            await self._wake.wait()

    async def close(self) -> None:
        """Close the connection and drop what it still holds; idempotent."""
        self._buffer.clear()
        if not self._closed:
            self._closed = True
            self._wake.set()
        self._on_close(self)


class EventBus:
    """Fans account events out to every open connection, in order, each through its own bounded queue."""

    def __init__(self, capacity: int = EVENT_QUEUE_CAPACITY) -> None:
        self._capacity = capacity
        self._connections: list[EventBusConnection] = []

    @property
    def connection_count(self) -> int:
        """Return how many connections receive events."""
        return len(self._connections)

    def connect(self) -> EventBusConnection:
        """Open a connection that receives every event published from now on."""
        connection = EventBusConnection(self._forget, self._capacity)
        self._connections.append(connection)
        return connection

    def publish(self, event: AccountEvent) -> None:
        """Deliver an event to every connection; close (and log) any connection that fell too far behind."""
        for connection in list(self._connections):
            if not connection.offer(event):
                self._forget(connection)
                log.warning(
                    "Account-event connection closed: its consumer fell %d events behind (queue limit %d); "
                    "event %s and any later events are not delivered on it, the consumer has to reconnect",
                    connection.pending,
                    self._capacity,
                    event.event_type,
                )

    def _forget(self, connection: EventBusConnection) -> None:
        if connection in self._connections:
            self._connections.remove(connection)


class PaperAccountEventFeed:
    """The account-event feed of the paper broker: always available, backed by the event bus."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus

    def unavailable_reason(self) -> str | None:
        """Return None: the paper feed needs no configuration."""
        return None

    async def connect(self) -> EventBusConnection:
        """Open a connection on the bus."""
        return self._bus.connect()


# --- quotes ------------------------------------------------------------------------------------


@runtime_checkable
class WarmableMarket(Protocol):
    """A market that can prepare a symbol's first quote in steps (``MarketSimulator.warm_up``)."""

    def warm_up(self, symbol: str) -> Iterator[None]:
        """Do the work a first quote needs, yielding between steps of about a millisecond."""
        ...


def _content(quote: Quote) -> dict[str, Any]:
    """Return what a trader sees change in a quote (its timestamp alone is not a change)."""
    return quote.model_dump(exclude={"time"})


class PaperQuoteConnection:
    """One simulated market-data connection: subscriptions in, ticking quotes out."""

    def __init__(
        self,
        market: MarketView,
        clock: Clock,
        tick_interval: float,
        on_close: Callable[[PaperQuoteConnection], None],
    ) -> None:
        self._market = market
        self._clock = clock
        self._tick_interval = tick_interval
        self._on_close = on_close
        self._subscribed: dict[str, None] = {}  # insertion-ordered set
        self._fresh: dict[str, None] = {}  # subscribed since the last tick: quoted right away
        self._last_sent: dict[str, dict[str, Any]] = {}
        self._errors: deque[SymbolError] = deque()
        self._wake = asyncio.Event()
        self._closed = False
        self._warm_up = market.warm_up if isinstance(market, WarmableMarket) else None

    @property
    def closed(self) -> bool:
        """Return True once the connection was closed or dropped."""
        return self._closed

    @property
    def subscribed(self) -> list[str]:
        """Return the subscribed symbols in subscription order."""
        return list(self._subscribed)

    async def subscribe(self, symbols: Sequence[str]) -> None:
        """Subscribe symbols; unknown ones come back as ``SymbolError`` messages."""
        if len(symbols) > MAX_SYMBOLS_PER_MESSAGE:
            raise ValueError(
                f"A subscribe message carries at most {MAX_SYMBOLS_PER_MESSAGE} symbols, got {len(symbols)}"
            )
        if self._closed:
            raise BrokerError("The market-data connection is closed")
        for symbol in dict.fromkeys(symbols):
            await self._warm(symbol)  # also what the instrument check of an option costs when cold
            if self._closed:  # closed meanwhile: the next connection subscribes afresh
                return
            try:
                self._market.instrument(book_symbol(symbol) or symbol)
            except NotFound:
                self._errors.append(SymbolError(symbol, "unknown symbol"))
                self._wake.set()
                continue
            self._subscribed[symbol] = None
            self._fresh[symbol] = None
            self._last_sent.pop(symbol, None)  # a subscribe always gets the current quote
            self._wake.set()  # quoted while the next symbol warms up
        self._wake.set()

    async def unsubscribe(self, symbols: Sequence[str]) -> None:
        """Stop updates of these symbols."""
        for symbol in symbols:
            self._subscribed.pop(symbol, None)
            self._fresh.pop(symbol, None)
            self._last_sent.pop(symbol, None)

    async def messages(self) -> AsyncIterator[QuoteFeedMessage]:
        """Yield symbol errors and quotes until the connection is closed or dropped."""
        next_tick = self._clock.monotonic()
        while True:
            while self._errors and not self._closed:
                yield self._errors.popleft()
            if self._closed:
                return
            if self._fresh:
                batch = list(self._fresh)
                self._fresh.clear()
            elif self._clock.monotonic() >= next_tick:
                batch = list(self._subscribed)
                next_tick = self._clock.monotonic() + self._tick_interval
            else:
                self._wake.clear()
                await self._sleep_until(next_tick)
                continue
            for symbol in batch:
                await self._warm(symbol)  # a no-op once warm; after midnight each symbol builds a new day
                message = self._changed_quote(symbol)
                if self._closed:
                    return
                if message is not None:
                    yield message

    async def close(self) -> None:
        """Close the connection; ``messages()`` ends promptly, even mid-sleep; idempotent."""
        self.terminate()

    def terminate(self) -> None:
        """End the connection at once (what ``close()`` and a dropped network both do); idempotent."""
        self._closed = True
        self._subscribed.clear()
        self._fresh.clear()
        self._errors.clear()
        self._wake.set()
        self._on_close(self)

    async def _warm(self, symbol: str) -> None:
        """Let the market prepare a symbol's quote, yielding to the event loop after each step."""
        if self._warm_up is None:
            return
        for _ in self._warm_up(book_symbol(symbol) or symbol):
            await asyncio.sleep(0)
            if self._closed:
                return

    def _changed_quote(self, symbol: str) -> QuoteFeedMessage | None:
        """Return the symbol's quote if it is subscribed and changed since last sent, or its error."""
        if symbol not in self._subscribed:
            return None
        booked = book_symbol(symbol)
        try:
            quote = self._market.quote(booked or symbol)
        except NotFound:  # delisted since the subscribe (an option that expired)
            self._subscribed.pop(symbol, None)
            self._last_sent.pop(symbol, None)
            return SymbolError(symbol, "symbol is no longer listed")
        content = _content(quote)
        if self._last_sent.get(symbol) == content:
            return None
        self._last_sent[symbol] = content
        return simulated_book(quote) if booked is not None else quote

    async def _sleep_until(self, deadline: float) -> None:
        """Sleep on the clock until ``deadline``, waking early for a subscribe or a close."""
        sleeper = asyncio.ensure_future(self._clock.sleep(deadline - self._clock.monotonic()))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()


class PaperQuoteFeed:
    """The market-data feed of the paper broker, ticking the simulated market."""

    max_symbols_per_message: int = MAX_SYMBOLS_PER_MESSAGE

    def __init__(
        self, market: MarketView, clock: Clock, tick_interval: float, session_check: Callable[[], None]
    ) -> None:
        if tick_interval <= 0:  # a zero interval would spin the event loop
            raise ValueError(f"tick_interval must be positive, got {tick_interval}")
        self._market = market
        self._clock = clock
        self._tick_interval = tick_interval
        self._session_check = session_check
        self._connections: list[PaperQuoteConnection] = []

    @property
    def open_connection_count(self) -> int:
        """Return how many connections are open."""
        return len(self._connections)

    async def connect(self) -> PaperQuoteConnection:
        """Open a connection; raise ``AuthRequired``/``SessionExpired`` without a live session."""
        self._session_check()
        connection = PaperQuoteConnection(self._market, self._clock, self._tick_interval, self._forget)
        self._connections.append(connection)
        return connection

    async def snapshot(self, symbols: Sequence[str]) -> list[Quote]:
        """Return the current quote of each known symbol (unknown ones are left out)."""
        quotes: list[Quote] = []
        for symbol in dict.fromkeys(symbols):
            try:
                quotes.append(self._market.quote(symbol))
            except NotFound:
                continue
        return quotes

    def drop_connections(self) -> None:
        """End every open connection abruptly, as a network failure would."""
        for connection in list(self._connections):
            connection.terminate()

    def _forget(self, connection: PaperQuoteConnection) -> None:
        if connection in self._connections:
            self._connections.remove(connection)
