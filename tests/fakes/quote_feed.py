"""A scriptable market-data feed for failure injection: refuse connects, go silent, drop, fail, refuse symbols.

It satisfies ``ftdesk.brokers.base.QuoteFeed`` and keeps a log of every subscribe/unsubscribe message each
connection received, so tests can check what the hub actually sent upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass

from ftdesk.brokers.base import QuoteFeedMessage, SymbolError
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError
from ftdesk.domain.market import Quote

_END = object()


@dataclass(frozen=True)
class _Failure:
    error: BaseException


@dataclass(frozen=True)
class SentMessage:
    """One subscribe/unsubscribe message as the fake upstream received it."""

    connection: int
    action: str  # "subscribe" or "unsubscribe"
    symbols: tuple[str, ...]


class FakeQuoteConnection:
    """One fake upstream connection: what it was told, and a queue of what it will deliver."""

    def __init__(self, feed: FakeQuoteFeed, number: int) -> None:
        self.number = number
        self._feed = feed
        self.symbols: dict[str, None] = {}  # what this upstream carries, in subscription order
        self.closed = False
        self.closed_by_client = False
        self._queue: asyncio.Queue[object] = asyncio.Queue()

    async def subscribe(self, symbols: Sequence[str]) -> None:
        """Record the message; answer unknown symbols with an error and (unless silent) quote the rest."""
        self._check_message(symbols)
        self._feed.log.append(SentMessage(self.number, "subscribe", tuple(symbols)))
        for symbol in symbols:
            if symbol in self._feed.unknown_symbols:
                self._queue.put_nowait(SymbolError(symbol, "unknown symbol"))
                continue
            self.symbols[symbol] = None
            if self._feed.snapshot_on_subscribe and not self._feed.silent:
                self._queue.put_nowait(self._feed.quote(symbol))

    async def unsubscribe(self, symbols: Sequence[str]) -> None:
        """Record the message and stop carrying the symbols."""
        self._check_message(symbols)
        self._feed.log.append(SentMessage(self.number, "unsubscribe", tuple(symbols)))
        for symbol in symbols:
            self.symbols.pop(symbol, None)

    async def messages(self) -> AsyncIterator[QuoteFeedMessage]:
        """Yield what was pushed until the connection ends (or raise what ``fail()`` put in)."""
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            assert isinstance(item, Quote | SymbolError)
            yield item

    async def close(self) -> None:
        """Close from the client side; idempotent."""
        self.closed_by_client = True
        self._end()

    # --- failure injection ----------------------------------------------------------------------

    def push(self, message: QuoteFeedMessage) -> None:
        """Deliver a message (dropped when the feed is silent or the connection is closed)."""
        if not self.closed and not self._feed.silent:
            self._queue.put_nowait(message)

    def drop(self) -> None:
        """End the stream as a dropped network connection would."""
        self._end()

    def fail(self, error: BaseException) -> None:
        """Make the stream raise ``error`` (a broken socket) and end."""
        if not self.closed:
            self._queue.put_nowait(_Failure(error))
            self._end()

    def _end(self) -> None:
        if not self.closed:
            self.closed = True
            self.symbols.clear()
            self._queue.put_nowait(_END)

    def _check_message(self, symbols: Sequence[str]) -> None:
        if self.closed:
            raise BrokerError("The market-data connection is closed")
        if not symbols:
            raise ValueError("An empty subscribe/unsubscribe message")
        if len(symbols) > self._feed.max_symbols_per_message:
            raise ValueError(
                f"{len(symbols)} symbols in one message; the limit is {self._feed.max_symbols_per_message}"
            )


class FakeQuoteFeed:
    """A ``QuoteFeed`` whose behaviour the test scripts."""

    def __init__(
        self,
        clock: Clock,
        *,
        max_symbols_per_message: int = 50,
        unknown_symbols: Iterable[str] = (),
        snapshot_on_subscribe: bool = True,
    ) -> None:
        self._clock = clock
        self.max_symbols_per_message = max_symbols_per_message
        self.unknown_symbols = set(unknown_symbols)
        self.snapshot_on_subscribe = snapshot_on_subscribe
        self.silent = False
        self.connections: list[FakeQuoteConnection] = []
        self.attempts: list[float] = []  # monotonic time of every connect() call, refused ones included
        self.log: list[SentMessage] = []
        self._refusals: list[BaseException] = []
        self._prices: dict[str, float] = {}

    # --- the QuoteFeed protocol -----------------------------------------------------------------

    async def connect(self) -> FakeQuoteConnection:
        """Open a connection, or raise the next scripted refusal."""
        self.attempts.append(self._clock.monotonic())
        if self._refusals:
            raise self._refusals.pop(0)
        connection = FakeQuoteConnection(self, len(self.connections) + 1)
        self.connections.append(connection)
        return connection

    async def snapshot(self, symbols: Sequence[str]) -> list[Quote]:
        """Return a quote per known symbol."""
        return [self.quote(s) for s in dict.fromkeys(symbols) if s not in self.unknown_symbols]

    # --- scripting --------------------------------------------------------------------------------

    def refuse(self, count: int, error: BaseException | None = None) -> None:
        """Make the next ``count`` connects raise ``error`` (a BrokerError by default)."""
        self._refusals.extend([error or BrokerError("The market-data service is unavailable")] * count)

    def go_silent(self) -> None:
        """Keep connections open but deliver nothing from now on."""
        self.silent = True

    def set_price(self, symbol: str, last: float) -> None:
        """Set a symbol's price and push the new quote on every open connection carrying it."""
        self._prices[symbol] = last
        for connection in self.open_connections:
            if symbol in connection.symbols:
                connection.push(self.quote(symbol))

    def drop_connections(self) -> None:
        """End every open connection abruptly."""
        for connection in self.open_connections:
            connection.drop()

    def quote(self, symbol: str) -> Quote:
        """Return the symbol's current quote (100.00 until a price is set)."""
        last = self._prices.get(symbol, 100.0)
        return Quote(
            symbol=symbol,
            last=last,
            bid=round(last - 0.01, 4),
            ask=round(last + 0.01, 4),
            time=self._clock.now().isoformat(),
        )

    # --- inspection -------------------------------------------------------------------------------

    @property
    def pending_refusals(self) -> int:
        """Return how many of the next connects will still be refused."""
        return len(self._refusals)

    @property
    def open_connections(self) -> list[FakeQuoteConnection]:
        """Return the connections not closed yet."""
        return [c for c in self.connections if not c.closed]

    @property
    def current(self) -> FakeQuoteConnection:
        """Return the one open connection (fails the test if there are none or several)."""
        open_now = self.open_connections
        assert len(open_now) == 1, f"expected exactly one open connection, found {len(open_now)}"
        return open_now[0]

    def sent(self, action: str, connection: int | None = None) -> list[tuple[str, ...]]:
        """Return the symbol lists of every message of one action (optionally on one connection)."""
        return [m.symbols for m in self.log if m.action == action and connection in (None, m.connection)]
