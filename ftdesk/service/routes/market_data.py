"""Market data: quotes, option chain, depth of market, charts, historical time and sales, available markets."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
)

from ftdesk.domain import errors as e
from ftdesk.domain.base import Record
from ftdesk.domain.market import (
    AvailableMarkets,
    BarWidth,
    ChartResult,
    Montage,
    OptionChain,
    Quote,
    TimeAndSales,
)
from ftdesk.service.docs.cache_headers import cached_read_openapi
from ftdesk.service.routes.common import (
    DateRangeQuery,
    IsoDate,
    SymbolsQuery,
    context,
    in_market_data,
    in_quote_feed,
    path_symbol,
    upper_symbol,
)
from ftdesk.service.web.routing import Call, QueryBool, QueryModel, RouteTable

routes = RouteTable(tag="market-data")


class ChartQuery(DateRangeQuery):
    """Which bars to return."""

    start_date: IsoDate | None = Field(
        default=None,
        description="First day, YYYY-MM-DD (inclusive). Omitted: the brokerage's default window (paper: one year "
        "back for D, five years for W and M, and 1/5/10/30 days for 1/5/15/60-minute bars).",
    )
    bar_width: Annotated[BarWidth, BeforeValidator(upper_symbol)] = Field(  # w and W alike
        default=BarWidth.DAY,
        description="D daily, W weekly, M monthly; 1, 5, 15 or 60 for minute bars (intraday history is limited "
        "to about the last 30 days).",
    )
    extended_hours: QueryBool = Field(
        default=False, description="Minute bars only: include pre-market and after-hours trading (true or false)."
    )


MAX_TRADE_ROWS = 500
"""Most trades one time-and-sales answer holds; a larger max_rows is capped, not refused."""


def _at_most_the_cap(rows: int) -> int:
    return min(rows, MAX_TRADE_ROWS)


class QuotesAnswer(Record):
    """The latest quote of each known symbol asked for, and the symbols that have none."""

    quotes: list[Quote] = Field(description="One quote per known symbol, in the order asked (duplicates once).")
    unknown: list[str] = Field(
        description="Symbols asked for that the brokerage does not quote (unknown or not available); empty when "
        "every symbol was answered."
    )
    streamed: list[str] = Field(
        description="Symbols of `quotes` answered from the live quote stream the service already carries; the "
        "others come from a one-shot snapshot of the brokerage."
    )


class TimeAndSalesQuery(QueryModel):
    """How many trades, and which."""

    max_rows: Annotated[int, AfterValidator(_at_most_the_cap)] = Field(
        default=100,
        ge=1,
        description=f"Most trades to return, at least 1; more than {MAX_TRADE_ROWS} is taken as {MAX_TRADE_ROWS} "
        "(the server cap).",
    )
    low_price: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="Only trades at or above this price, US dollars per share."
    )
    high_price: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Only trades at or below this price, US dollars per share; not below low_price.",
    )
    low_size: int | None = Field(default=None, ge=1, description="Only trades of at least this many shares.")

    @field_validator("high_price")
    @classmethod
    def _high_not_below_low(cls, high: float | None, info: ValidationInfo) -> float | None:
        low = info.data.get("low_price")
        if high is not None and low is not None and high < low:
            raise ValueError(f"high_price {high} is below low_price {low}")
        return high


# --- endpoints ---------------------------------------------------------------------------------------


@routes.get(
    "/market-data/quotes",
    summary="Latest quotes",
    query=SymbolsQuery,
    response=QuotesAnswer,
    needs_session=True,
)
async def get_quotes(call: Call[None, SymbolsQuery]) -> QuotesAnswer:
    """Return the latest quote of each symbol, without opening a stream.

    `symbols` is a comma-separated list of 1 to 50 tickers or option symbols (case-insensitive). A symbol
    the service's live quote stream already carries (some SSE, WebSocket or shared subscription holds it)
    is answered from that stream's latest quote, at no cost upstream, and listed in `streamed`; the others
    come from one snapshot request to the brokerage. Symbols the brokerage does not quote are listed in
    `unknown` rather than failing the call; `quotes` keeps the order asked, each symbol once.
    """
    wanted = list(dict.fromkeys(call.query.symbols))
    hub = context(call).quotes
    held = {symbol: quote for symbol in wanted if (quote := hub.latest_quote(symbol)) is not None}
    rest = [symbol for symbol in wanted if symbol not in held]
    fetched: dict[str, Quote] = {}
    if rest:
        snapshot = await in_quote_feed(call, lambda feed: feed.snapshot(rest))
        fetched = {_bare(quote.symbol): quote for quote in snapshot}
    found = {symbol: held.get(symbol) or fetched.get(_bare(symbol)) for symbol in wanted}
    return QuotesAnswer(
        quotes=[quote for quote in found.values() if quote is not None],
        unknown=[symbol for symbol, quote in found.items() if quote is None],
        streamed=[symbol for symbol in wanted if symbol in held],
    )


def _bare(symbol: str) -> str:
    # An option symbol may carry the upstream's leading '-' on one side only; compare without it.
    return symbol.lstrip("-").upper()


@routes.get(
    "/market-data/chain/{symbol}",
    summary="Option chain",
    response=OptionChain,
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_option_chain(call: Call[None, None]) -> OptionChain:
    """Return every listed call and put of an underlying: expirations nearest first, strikes ascending.

    Each series carries bid, ask, last, volume, open interest and Greeks. An unknown symbol or one
    without listed options is `NOT_FOUND`.
    """
    symbol = path_symbol(call)
    return await in_market_data(call, lambda market: market.get_option_chain(symbol))


@routes.get(
    "/market-data/montage/{symbol}",
    summary="Depth of market (montage)",
    response=Montage,
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_montage(call: Call[None, None]) -> Montage:
    """Return each exchange's best bid and offer for a stock, ETF or option, best bid first.

    The first row's bid and the lowest ask are the national best bid and offer.
    """
    symbol = path_symbol(call)
    return await in_market_data(call, lambda market: market.get_montage(symbol))


@routes.get(
    "/market-data/chart/{symbol}",
    summary="Historical OHLCV bars",
    query=ChartQuery,
    response=ChartResult,
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_chart(call: Call[None, ChartQuery]) -> ChartResult:
    """Return OHLCV bars of a stock or ETF between `start_date` and `end_date`, oldest first.

    `bar_width` is `D` (default), `W`, `M`, or `1`/`5`/`15`/`60` minutes. Each bar's `date` is the first
    day (or minute) it covers; the last bar runs up to the current quote. `symbol_info.previous_close`
    is the prior session's close. `end_date` before `start_date` is a `VALIDATION_ERROR`.
    """
    symbol = path_symbol(call)
    q = call.query
    return await in_market_data(
        call, lambda market: market.get_chart(symbol, q.start_date, q.end_date, q.bar_width, q.extended_hours)
    )


@routes.get(
    "/market-data/time-and-sales/{symbol}",
    summary="Historical time and sales",
    query=TimeAndSalesQuery,
    response=TimeAndSales,
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_time_and_sales(call: Call[None, TimeAndSalesQuery]) -> TimeAndSales:
    """Return the latest trades of a stock or ETF, newest first, at most `max_rows`.

    The answer holds at most 500 trades: a larger `max_rows` is taken as 500, not refused (below 1 or not
    an integer is a `VALIDATION_ERROR`).

    Filters: `low_price` and `high_price` bound the trade price (inclusive), `low_size` is the minimum
    trade size. Each trade's `condition` is `F` regular, `I` odd lot or `T` extended hours.
    """
    symbol = path_symbol(call)
    q = call.query
    return await in_market_data(
        call, lambda market: market.get_time_and_sales(symbol, q.max_rows, q.low_price, q.high_price, q.low_size)
    )


@routes.get(
    "/market-data/markets/{symbol}",
    summary="Available markets",
    response=AvailableMarkets,
    needs_session=True,
    errors=(e.NotFound,),
    extra_openapi=cached_read_openapi(3600, "1 h: routing destinations change with a release, not a minute"),
)
async def get_available_markets(call: Call[None, None]) -> AvailableMarkets:
    """Return the trading destinations an order for this symbol can be routed to; `default` marks AUTO routing."""
    symbol = path_symbol(call)
    return await in_market_data(call, lambda market: market.get_available_markets(symbol))
