"""A market whose prices the test sets: the TradingMarket the paper ledger, engine and alerts see."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from datetime import date, datetime

from ftdesk.brokers.paper.options import option_description
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.domain.accounts import OptionContract, OptionType, SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import Quote


class ScriptedMarket:
    """Instruments and quotes set by the test; satisfies ``ftdesk.brokers.paper.ports.TradingMarket``.

    ``open`` is the session the test sets (open unless it says otherwise); ``prepared`` records what was made
    current; ``push`` tells the engine's listener that a symbol's quote changed, as a streaming market does.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._instruments: dict[str, Instrument] = {}
        self._quotes: dict[str, Quote] = {}
        self.open = True
        self.prepared: list[list[str]] = []
        self._listeners: list[Callable[[str], None]] = []

    def is_open(self) -> bool:
        """Return the session the test set."""
        return self.open

    async def prepare(self, symbols: Sequence[str]) -> None:
        """Record what the engine's caller wanted current."""
        self.prepared.append(list(symbols))

    def on_quote(self, listener: Callable[[str], None]) -> None:
        """Keep a listener ``push`` calls."""
        self._listeners.append(listener)

    def push(self, symbol: str, last: float, **changes: float) -> None:
        """Move a price and tell the listeners, as a quote arriving on a stream does."""
        self.set_price(symbol, last, **changes)  # type: ignore[arg-type]
        for listener in self._listeners:
            listener(symbol)

    def now(self) -> datetime:
        """Return the clock's time."""
        return self._clock.now()

    def add_equity(
        self,
        symbol: str,
        last: float,
        *,
        spread: float = 0.02,
        size: int = 500,
        security_type: SecurityType = SecurityType.EQUITY,
        prev_close: float | None = None,
    ) -> None:
        """List an equity (or ETF) at a price with a symmetric spread around it."""
        self._instruments[symbol] = Instrument(
            symbol=symbol,
            description=f"{symbol} INC",
            security_type=security_type,
            exchange="NASDAQ",
            cusip=f"{symbol:0<6.6}XX9"[:9],
        )
        self.set_price(symbol, last, spread=spread, size=size, prev_close=prev_close)

    def add_option(
        self,
        symbol: str,
        underlying: str,
        option_type: OptionType,
        strike: float,
        expiration: date,
        last: float,
        *,
        spread: float = 0.10,
        size: int = 50,
    ) -> None:
        """List an option series at a price."""
        contract = OptionContract(underlying=underlying, option_type=option_type, strike=strike, expiration=expiration)
        self._instruments[symbol] = Instrument(
            symbol=symbol,
            description=option_description(contract),
            security_type=SecurityType.OPTION,
            exchange="OPRA",
            # A stable digest: hash() of a str changes from one process to the next.
            cusip=f"O{zlib.crc32(symbol.encode()) % 10**8:08d}",
            option=contract,
        )
        self.set_price(symbol, last, spread=spread, size=size)

    def set_price(
        self,
        symbol: str,
        last: float,
        *,
        spread: float | None = None,
        size: int | None = None,
        bid: float | None = None,
        ask: float | None = None,
        prev_close: float | None = None,
    ) -> None:
        """Move a listed symbol's price (bid/ask default to last -/+ half the spread)."""
        if symbol not in self._instruments:
            raise KeyError(f"{symbol} is not listed in this ScriptedMarket")
        old = self._quotes.get(symbol)
        half = (spread if spread is not None else (old.ask - old.bid if old else 0.02)) / 2
        sz = size if size is not None else (old.bid_size if old else 500)
        pc = prev_close if prev_close is not None else (old.prev_close if old and old.prev_close else last)
        self._quotes[symbol] = Quote(
            symbol=symbol,
            last=last,
            bid=round(bid if bid is not None else last - half, 4),
            ask=round(ask if ask is not None else last + half, 4),
            bid_size=sz,
            ask_size=sz,
            last_size=100,
            volume=1_000_000,
            prev_close=pc,
            change=round(last - pc, 4),
            change_pct=round((last - pc) / pc * 100, 4) if pc else 0.0,
            time=self._clock.now().isoformat(),
        )

    def instrument(self, symbol: str) -> Instrument:
        """Return a listed instrument or raise NotFound."""
        try:
            return self._instruments[symbol]
        except KeyError:
            raise NotFound(f"Unknown symbol {symbol!r}") from None

    def withdraw_quote(self, symbol: str) -> None:
        """Leave a listed symbol without a quote, as a real market with no quote to give."""
        self._quotes.pop(symbol, None)

    def quote(self, symbol: str) -> Quote:
        """Return a listed symbol's current quote or raise NotFound."""
        self.instrument(symbol)
        try:
            return self._quotes[symbol]
        except KeyError:
            raise NotFound(f"No quote for {symbol} from this market: nothing can be priced on it now") from None
