"""Market-data records (the market-data endpoints) and the streaming quote."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ftdesk.domain.accounts import OptionType
from ftdesk.domain.base import IsoDate, Record, UpstreamRecord


class BarWidth(StrEnum):
    """Chart bar widths: daily, weekly, monthly, and intraday minutes."""

    DAY = "D"
    WEEK = "W"
    MONTH = "M"
    MIN1 = "1"
    MIN5 = "5"
    MIN15 = "15"
    MIN60 = "60"


class Greeks(Record):
    """Option sensitivities."""

    delta: float
    gamma: float
    theta: float = Field(description="Per calendar day.")
    vega: float = Field(description="Per 1 volatility point.")
    rho: float
    implied_volatility: float = Field(description="Annualised, as a fraction (0.25 = 25%).")


class Quote(Record):
    """A real-time quote; the four spec fields plus what a trader expects beside them."""

    symbol: str
    last: float
    bid: float
    ask: float
    bid_size: int = 0
    ask_size: int = 0
    last_size: int = 0
    volume: int = 0
    open: float | None = None
    high: float | None = None
    low: float | None = None
    prev_close: float | None = None
    change: float | None = None
    change_pct: float | None = None
    time: str = Field(description="ISO 8601 time of the last update.")
    greeks: Greeks | None = Field(default=None, description="Present on option symbols when known.")


class BookLevel(Record):
    """One price level of an order book side."""

    price: float = Field(description="US dollars per share; for an option, per share of the contract.")
    size: int = Field(description="Shares (contracts for an option) wanted or offered at this price.")
    venue: str | None = Field(default=None, description="Market identifier code of the venue (XNYS, ARCX, ...).")
    time: str | None = Field(default=None, description="Time of the level's last change as the upstream gave it.")


class OrderBook(Record):
    """Level 2: the best bids and asks of a symbol, best first (up to 25 levels a side on Fidelity)."""

    symbol: str
    bids: list[BookLevel] = Field(description="Bid levels, highest price first.")
    asks: list[BookLevel] = Field(description="Ask levels, lowest price first.")
    time: str = Field(description="ISO 8601 time of the last update.")


class OptionQuote(Record):
    """One option series in a chain."""

    symbol: str
    option_type: OptionType
    strike: float
    expiration: IsoDate
    bid: float
    ask: float
    last: float
    volume: int
    open_interest: int
    greeks: Greeks


class ChainStrike(Record):
    """The call and put at one strike."""

    strike: float
    call: OptionQuote | None
    put: OptionQuote | None


class ChainExpiration(Record):
    """All strikes of one expiration."""

    expiration: IsoDate
    days_to_expiration: int
    strikes: list[ChainStrike]


class OptionChain(UpstreamRecord):
    """Calls and puts for all strikes and expirations of an underlying."""

    symbol: str
    underlying_price: float
    expirations: list[ChainExpiration]


class ExchangeQuote(Record):
    """One exchange's best bid and offer."""

    exchange: str
    exchange_name: str
    bid: float
    bid_size: int
    ask: float
    ask_size: int
    time: str


class Montage(UpstreamRecord):
    """Depth of market: per-exchange quotes."""

    symbol: str
    quotes: list[ExchangeQuote]


class Bar(Record):
    """One OHLCV bar."""

    date: str
    open: float
    high: float
    low: float
    close: float
    volume: int


class SymbolInfo(Record):
    """Context of a chart (spec: previous_close)."""

    previous_close: float
    description: str = ""
    exchange: str = ""


class ChartResult(UpstreamRecord):
    """Historical bars (spec: bars and symbol_info)."""

    symbol: str
    bar_width: BarWidth
    bars: list[Bar]
    symbol_info: SymbolInfo


class TradeExecution(Record):
    """One historical trade (spec record)."""

    time: str
    price: float = Field(description="US dollars per share; for an option, per share of the contract.")
    size: int = Field(description="Shares (contracts for an option) traded.")
    exchange: str
    condition: str = Field(description="F regular, I odd lot, T extended hours.")


class TimeAndSales(UpstreamRecord):
    """Historical trades of a symbol."""

    symbol: str
    trades: list[TradeExecution]


class MarketDestination(Record):
    """A trading destination an order can be routed to."""

    routing_code: str
    name: str
    market_type: str = Field(description="EXCHANGE, ECN, MARKET_MAKER or AUTO.")
    default: bool = False


class AvailableMarkets(UpstreamRecord):
    """The trading destinations available for a symbol."""

    symbol: str
    markets: list[MarketDestination]
