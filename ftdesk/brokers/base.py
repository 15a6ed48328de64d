"""The protocols every brokerage implements; nothing concrete lives here.

``Broker`` exposes one object per capability group of the spec (the Protocols of
``ftdesk.brokers.capabilities``), the two upstream streams and its lifecycle.

``QuoteFeed`` and ``AccountEventFeed`` are the two upstream streams. Each ``connect()`` opens one
connection; the streaming hub owns reconnects, backoff, refcounts and fan-out, so a feed only has
to speak its protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from ftdesk.brokers.capabilities import (
    AccountsApi,
    MarketDataApi,
    OrdersApi,
    ResearchApi,
    SessionApi,
    UserDataApi,
)
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.market import OrderBook, Quote


class SymbolError(Exception):
    """An upstream refusal of one symbol on a quote connection (e.g. MDDS error 18)."""

    def __init__(self, symbol: str, message: str) -> None:
        super().__init__(f"{symbol}: {message}")
        self.symbol = symbol
        self.message = message


QuoteFeedMessage = Quote | OrderBook | SymbolError

BOOK_KEY_SUFFIX = "#BOOK"
"""A held "symbol" that ends with this is the order book (level 2) of the symbol before it."""


def book_key(symbol: str) -> str:
    """Return the subscription key of a symbol's order book (what the hub holds and the feed subscribes)."""
    return f"{symbol}{BOOK_KEY_SUFFIX}"


def book_symbol(key: str) -> str | None:
    """Return the symbol whose order book ``key`` stands for, or None for a plain symbol."""
    return key[: -len(BOOK_KEY_SUFFIX)] if key.endswith(BOOK_KEY_SUFFIX) else None


def message_key(message: QuoteFeedMessage) -> str:
    """Return the subscription key a feed message belongs to (a book's key for an ``OrderBook``)."""
    return book_key(message.symbol) if isinstance(message, OrderBook) else message.symbol


class QuoteConnection(Protocol):
    """One open upstream market-data connection.

    A subscribed key made by ``book_key`` asks for the symbol's order book instead of its quote: the connection
    then yields ``OrderBook`` messages for it, and a refusal as a ``SymbolError`` whose symbol is that key.
    """

    async def subscribe(self, symbols: Sequence[str]) -> None:
        """Ask for updates of these symbols or book keys (at most ``QuoteFeed.max_symbols_per_message``)."""

    async def unsubscribe(self, symbols: Sequence[str]) -> None:
        """Stop updates of these symbols."""

    def messages(self) -> AsyncIterator[QuoteFeedMessage]:
        """Yield quotes and per-symbol errors until the connection ends (then stop iterating)."""

    async def close(self) -> None:
        """Close the connection; idempotent."""


@runtime_checkable
class QuoteFeed(Protocol):
    """Opens upstream market-data connections (MDDS for Fidelity, the simulated market for paper)."""

    max_symbols_per_message: int

    async def connect(self) -> QuoteConnection:
        """Open one connection; raise ``AuthRequired``/``SessionExpired``/``BrokerError`` on failure."""

    async def snapshot(self, symbols: Sequence[str]) -> list[Quote]:
        """Return the current quote of each known symbol without subscribing."""


class AccountEventConnection(Protocol):
    """One open upstream account-event connection."""

    def events(self) -> AsyncIterator[AccountEvent]:
        """Yield events until the connection ends (then stop iterating)."""

    async def close(self) -> None:
        """Close the connection; idempotent."""


@runtime_checkable
class AccountEventFeed(Protocol):
    """Opens upstream account-event connections (BEPS for Fidelity, the paper ledger for paper)."""

    def unavailable_reason(self) -> str | None:
        """Say why the feed cannot run (e.g. which FTSERVICE_BEPS_* variables are missing), or None."""

    async def connect(self) -> AccountEventConnection:
        """Open one connection; raise ``StreamingUnavailable`` when not configured."""


@runtime_checkable
class AccountEventFallback(Protocol):
    """Polls for the events an account-event feed would carry, while that feed is down (Fidelity: GetAlerts)."""

    source: str
    """What events from here are marked with (e.g. ``alerts``)."""
    interval: float
    """Seconds between polls."""

    async def poll(self) -> list[AccountEvent]:
        """Return the events not returned before (the first poll of a session only notes what exists)."""

    def reset(self) -> None:
        """Forget what was seen: a new session starts."""

    def dedupe_key(self, event: AccountEvent) -> str | None:
        """Return a key shared by the feed's and the fallback's copies of one event (None: not comparable)."""


@runtime_checkable
class Broker(Protocol):
    """A brokerage: one object per capability group, the upstream streams, and start/close."""

    @property
    def name(self) -> str:
        """Return the broker's name: 'paper' or 'fidelity'."""

    @property
    def quote_feed(self) -> QuoteFeed:
        """Return the market-data feed."""

    @property
    def account_events(self) -> AccountEventFeed:
        """Return the account-event feed."""

    @property
    def event_fallback(self) -> AccountEventFallback | None:
        """Return what polls for account events while the feed is down (None: the broker needs none)."""

    @property
    def session(self) -> SessionApi:
        """Return the session group: login, logout, keep-alive."""

    @property
    def accounts(self) -> AccountsApi:
        """Return the accounts and portfolio group."""

    @property
    def orders(self) -> OrdersApi:
        """Return the orders group."""

    @property
    def market_data(self) -> MarketDataApi:
        """Return the on-request market-data group."""

    @property
    def research(self) -> ResearchApi:
        """Return the research group."""

    @property
    def user_data(self) -> UserDataApi:
        """Return the user-data group: watchlists, alerts, price triggers, preferences."""

    async def start(self) -> None:
        """Open resources (databases, HTTP sessions, simulators)."""

    async def close(self) -> None:
        """Release every resource; idempotent."""
