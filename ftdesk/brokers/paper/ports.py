"""The seams inside the paper brokerage: what the ledger and engine need from the market."""

from __future__ import annotations

from collections.abc import Callable
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


EventSink = Callable[[AccountEvent], None]
"""Where the ledger, engine and alerts publish account events (fills, cancels, balances, alerts)."""
