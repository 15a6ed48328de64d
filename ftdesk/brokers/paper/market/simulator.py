"""The simulated market the paper broker trades on: one ``MarketSimulator`` assembling its parts.

Every number is a deterministic function of (seed, symbol, time): asking at the same clock time gives
the same answer whatever else was asked before, so two simulators with the same seed agree and a
restarted world continues where it left off. The simulated market trades around the clock, every day
of the week (holidays included); the holiday calendar only moves option expirations.

The parts: ``market.paths`` (the price process), ``market.prices`` (per-world state and equity
snapshots), ``market.listings`` and ``market.option_prices`` (listed series and their prices),
``market.charts``, ``market.depth`` (montage, time and sales, venues) and ``market.short`` (borrow and
short interest).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime

from ftdesk.brokers.paper.market import charts as market_charts
from ftdesk.brokers.paper.market import depth as market_depth
from ftdesk.brokers.paper.market.listings import OptionListings
from ftdesk.brokers.paper.market.option_prices import OptionMarket
from ftdesk.brokers.paper.market.prices import Lru, PriceSource, normalize
from ftdesk.brokers.paper.market.short import ShortData
from ftdesk.brokers.paper.options import option_description, parse_option_symbol
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import (
    HardToBorrowPosition,
    OptionContract,
    SecurityType,
    ShortInsightDetail,
    ShortInsightSeries,
)
from ftdesk.domain.clock import Clock
from ftdesk.domain.market import (
    AvailableMarkets,
    BarWidth,
    ChartResult,
    Montage,
    OptionChain,
    Quote,
    TimeAndSales,
)

_QUOTE_CACHE_SIZE = 4096  # one entry per recently quoted symbol (equities and option series)


class MarketSimulator:
    """The paper brokerage's market: a seeded, clock-driven simulation of the universe."""

    def __init__(self, universe: Universe, seed: int, clock: Clock) -> None:
        self._prices = PriceSource(universe, seed, clock)
        self._listings = OptionListings(self._prices)
        self._options = OptionMarket(self._prices, self._listings)
        self._short = ShortData(self._prices)
        # A quote is a pure function of (symbol, whole second): reuse it within the second. Positions,
        # balances, fills and every streaming consumer ask for the same quotes many times per tick.
        self._quote_cache: Lru[str, tuple[int, Quote]] = Lru(_QUOTE_CACHE_SIZE)

    @property
    def universe(self) -> Universe:
        """Return the universe this market trades."""
        return self._prices.universe

    @property
    def seed(self) -> int:
        """Return the seed of this world."""
        return self._prices.seed

    # --- TradingMarket -------------------------------------------------------------------------

    def is_open(self) -> bool:
        """Return True: the simulated market trades around the clock."""
        return True

    async def prepare(self, symbols: Sequence[str]) -> None:
        """Do nothing: every simulated quote is current when asked for."""

    def on_quote(self, listener: Callable[[str], None]) -> None:
        """Ignore the listener: the world's tick works every order against the simulated market."""

    # --- MarketView ----------------------------------------------------------------------------

    def now(self) -> datetime:
        """Return the market's current UTC time."""
        return self._prices.now()

    def instrument(self, symbol: str) -> Instrument:
        """Return reference data of an equity, ETF or listed option; raise ``NotFound`` if unknown."""
        text = normalize(symbol)
        security = self._prices.universe.get(text)
        if security is not None:
            return Instrument(
                symbol=security.symbol,
                description=security.description,
                security_type=security.security_type,
                exchange=security.exchange,
                cusip=security.cusip,
            )
        contract, canonical, _ = self._listings.listed_option(text, self._prices.now_ts())
        return Instrument(
            symbol=canonical,
            description=option_description(contract),
            security_type=SecurityType.OPTION,
            exchange="OPRA",
            cusip=_invented_cusip(canonical),
            option=contract,
        )

    def quote(self, symbol: str) -> Quote:
        """Return the current quote of an equity, ETF or option symbol; raise ``NotFound`` if unknown."""
        text = normalize(symbol)
        ts = self._prices.now_ts()
        cached = self._quote_cache.get(text)
        if cached is not None and cached[0] == ts:
            return cached[1].model_copy()  # a copy: callers may not alter the cached value
        quote = self._quote(text, ts)
        self._quote_cache.put(text, (ts, quote))
        return quote.model_copy()

    def warm_up(self, symbol: str) -> Iterator[None]:
        """Compute what the first quote of a symbol needs in steps of about a millisecond, yielding after each.

        A symbol's first quote walks its daily history since the first simulated day and builds today's
        minutes, about 10 ms in all. A caller on an event loop yields to the loop between the steps (one
        block of daily history, then the day's minutes), so subscribing many cold symbols never blocks it
        for long. An option warms its underlying. Unknown symbols, and symbols already warm, take no step.
        The steps compute exactly what ``quote()`` would, so the quotes are the same with or without a
        warm-up.
        """
        text = symbol.strip().upper() if isinstance(symbol, str) else ""
        security = self._prices.universe.get(text)
        if security is None:
            try:
                security = self._prices.universe.get(parse_option_symbol(text).underlying)
            except ValueError:
                return
            if security is None:
                return
        yield from self._prices.warm_up(security)

    def quotes(self, symbols: Iterable[str]) -> list[Quote]:
        """Return current quotes of several symbols (all at the same instant), in the order asked."""
        ts = self._prices.now_ts()
        return [self._quote(normalize(symbol), ts) for symbol in symbols]

    # --- market data -----------------------------------------------------------------------------

    def option_chain(self, symbol: str) -> OptionChain:
        """Return every listed series of an optionable underlying, priced now."""
        return self._options.chain(symbol)

    def montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes whose best bid and offer are the NBBO of ``quote()``."""
        ts = self._prices.now_ts()
        text = normalize(symbol)
        quote = self._quote(text, ts)
        is_option = self._prices.universe.get(text) is None
        return market_depth.montage(self._prices.seed, quote, ts, is_option=is_option)

    def chart(
        self,
        symbol: str,
        start: date | None = None,
        end: date | None = None,
        bar_width: BarWidth = BarWidth.DAY,
        extended_hours: bool = False,
    ) -> ChartResult:
        """Return OHLCV bars of a stock or ETF; the last bar ends at the current quote."""
        return market_charts.chart(self._prices, symbol, start, end, bar_width, extended_hours)

    def time_and_sales(
        self,
        symbol: str,
        max_rows: int = 100,
        low_price: float | None = None,
        high_price: float | None = None,
        low_size: int | None = None,
    ) -> TimeAndSales:
        """Return recent trades, newest first, filtered by price range and minimum size (at most 500)."""
        return market_depth.time_and_sales(self._prices, symbol, max_rows, low_price, high_price, low_size)

    def available_markets(self, symbol: str) -> AvailableMarkets:
        """Return the routing destinations of a symbol: AUTO (the default) and the venues."""
        text = normalize(symbol)
        security = self._prices.universe.get(text)
        if security is None:
            _, canonical, _ = self._listings.listed_option(text, self._prices.now_ts())
            return market_depth.available_markets(canonical, is_option=True)
        return market_depth.available_markets(security.symbol, is_option=False)

    # --- borrow and short interest ----------------------------------------------------------

    def hard_to_borrow(self, symbols: Sequence[str]) -> list[HardToBorrowPosition]:
        """Return today's borrow rate and availability of each stock or ETF."""
        return self._short.hard_to_borrow(symbols)

    def short_insights(self, symbols: Sequence[str]) -> list[ShortInsightDetail]:
        """Return the latest published short-interest figures of each stock or ETF."""
        return self._short.short_insights(symbols)

    def short_insight_series(
        self, symbol: str, metric: str, start: date | None = None, end: date | None = None
    ) -> ShortInsightSeries:
        """Return one short-interest metric at each published settlement date between two dates."""
        return self._short.short_insight_series(symbol, metric, start, end)

    # --- figures research needs ----------------------------------------------------------------

    def listed_expirations(self, symbol: str) -> list[date]:
        """Return the expirations listed now for an optionable underlying, nearest first."""
        return self._options.expirations(symbol)

    def listed_strikes(self, symbol: str, expiration: date) -> list[float]:
        """Return the strikes listed now for one expiration of an optionable underlying."""
        return self._options.strikes(symbol, expiration)

    def series_iv(self, contract: OptionContract) -> float:
        """Return the current implied volatility of an option series (also for unlisted strikes)."""
        return self._options.series_iv(contract)

    def atm_iv(self, symbol: str, days: int = 30) -> float:
        """Return the current at-the-money implied volatility for a ``days``-day horizon."""
        return self._options.atm_iv(symbol, days)

    def iv_history(self, symbol: str, days: int = 365) -> list[float]:
        """Return the 30-day at-the-money implied volatility of each of the last ``days`` days (today last)."""
        return self._options.iv_history(symbol, days)

    def daily_closes(self, symbol: str, count: int) -> list[float]:
        """Return the last ``count`` completed daily closes (yesterday last)."""
        under = self._prices.equity(normalize(symbol), purpose="Price history")
        today = self._prices.locate(self._prices.now_ts())[0]
        under.path.ensure(today)
        first = max(0, today - count)
        return list(under.path.close[first:today])

    def _quote(self, text: str, ts: int) -> Quote:
        security = self._prices.universe.get(text)
        if security is None:
            return self._options.quote(text, ts)
        return self._prices.equity_quote(security, ts)


def _invented_cusip(symbol: str) -> str:
    """Return a stable invented 9-character identifier for a symbol without a CUSIP of its own."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    number = int.from_bytes(hashlib.blake2b(symbol.encode(), digest_size=8).digest(), "big")
    chars = []
    for _ in range(8):
        number, rem = divmod(number, 36)
        chars.append(alphabet[rem])
    body = "".join(chars)
    total = 0
    for index, char in enumerate(body):
        value = alphabet.index(char) * (2 if index % 2 else 1)
        total += value // 10 + value % 10
    return body + str((10 - total % 10) % 10)
