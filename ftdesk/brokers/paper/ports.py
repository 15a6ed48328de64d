"""The seams inside the paper brokerage: what the ledger and engine need from the market."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ftdesk.domain.accounts import OptionContract, SecurityType
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.market import Quote


@dataclass(frozen=True)
class Instrument:
    """Reference data of a tradable symbol (equity, ETF or option)."""

    symbol: str
    description: str
    security_type: SecurityType
    exchange: str
    cusip: str
    option: OptionContract | None = None

    @property
    def multiplier(self) -> int:
        """Shares per unit: 100 for options, 1 otherwise."""
        return self.option.multiplier if self.option else 1


class MarketView(Protocol):
    """The simulated market as the ledger, order engine and alerts see it."""

    def now(self) -> datetime:
        """Return the market's current UTC time."""

    def instrument(self, symbol: str) -> Instrument:
        """Return reference data of an equity, ETF or option symbol; raise ``NotFound`` if unknown."""

    def quote(self, symbol: str) -> Quote:
        """Return the current quote of an equity, ETF or option symbol; raise ``NotFound`` if unknown."""


class TradingMarket(MarketView, Protocol):
    """The market the paper engine trades on: the simulated one, or a real broker's quotes.

    The engine, ledger and alerts see only this: quotes (with the displayed size at the touch), reference
    data (option terms included) and whether the session is open. A market that pushes quotes between ticks
    calls the listener given to ``on_quote`` so resting orders on that symbol are worked at once.
    """

    def is_open(self) -> bool:
        """Return whether orders can fill now (the market's session hours, on the injected clock)."""

    async def prepare(self, symbols: Sequence[str]) -> None:
        """Make the quotes of these symbols current before they are priced (subscribe, take a snapshot)."""

    def on_quote(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(symbol)`` whenever a symbol's quote changes between ticks (never, for a ticked market)."""


EventSink = Callable[[AccountEvent], None]
"""Where the ledger, engine and alerts publish account events (fills, cancels, balances, alerts)."""
