"""Fidelity market-data REST: option chain, montage, chart (JSONP), time and sales, markets, holidays.

fastquote GETs (chain, montage, chart, time and sales) are reads, so identical concurrent ones share one
upstream call; the chart callback name is fixed for that reason (any identifier works). The pure
mappers live in ``market_data_mapping``, the body parsing (JSON, JSONP, XML) in ``market_data_parsing``, the
holiday calendar in ``market_calendar``.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from types import MappingProxyType
from typing import Any

from yarl import URL

from ftdesk.brokers.fidelity import market_calendar as calendar
from ftdesk.brokers.fidelity import market_data_mapping as m
from ftdesk.brokers.fidelity.accounts import FidelityAccounts
from ftdesk.brokers.fidelity.http import DPSERVICE, FASTQUOTE, FidelityHttp
from ftdesk.brokers.fidelity.market_data_parsing import document
from ftdesk.brokers.fidelity.session import FidelitySession
from ftdesk.brokers.fidelity.values import new_york_date
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import ValidationFailed
from ftdesk.domain.market import AvailableMarkets, BarWidth, ChartResult, Montage, OptionChain, TimeAndSales
from ftdesk.domain.user_data import Holiday

CHAIN_URL = f"{FASTQUOTE}/service/quote/chainLite"
MONTAGE_URL = f"{FASTQUOTE}/service/quote/dtmontage"
CHART_URL = f"{FASTQUOTE}/service/marketdata/historical/chart/json"
TIME_AND_SALES_URL = f"{FASTQUOTE}/service/timeandsales/v2"
AVAILABLE_MARKETS_URL = f"{DPSERVICE}/ftgw/dp/reference/security/stock/availablemarket/v1"
CHART_CALLBACK = "jsonp_ftdesk_1"
VOLATILITY_LOOKBACK_DAYS = 90
# How far back a chart reaches when no start is given, by bar width.
_DEFAULT_SPAN = MappingProxyType({BarWidth.DAY: 365, BarWidth.WEEK: 2 * 365, BarWidth.MONTH: 5 * 365})


def fastquote_url(base: str, **query: str) -> str:
    """Return a fastquote URL with ``productid=atn`` and the given query."""
    return str(URL(base).with_query({**query, "productid": "atn"}))


def chart_url(symbol: str, start: date, end: date, bar_width: BarWidth, extended_hours: bool) -> str:
    """Return the JSONP chart request for New York midnight of ``start`` to the end of ``end``."""
    return str(
        URL(CHART_URL).with_query(
            {
                "callback": CHART_CALLBACK,
                "symbols": symbol,
                "startDate": f"{start:%Y/%m/%d}-00:00:00",
                "endDate": f"{end:%Y/%m/%d}-23:59:59",
                "barWidth": bar_width.value,
                "corpActions": "Y",
                "timestamp": "start",
                "extendedHours": "Y" if extended_hours else "N",
                "isInitialFetch": "true",
                "productid": "atn",
                "quoteType": "R",
            }
        )
    )


async def fetch_chart_payload(
    http: FidelityHttp, symbol: str, start: date, end: date, bar_width: BarWidth, extended_hours: bool
) -> Any:
    """GET a chart and return its inner JSON."""
    return await document(http, chart_url(symbol, start, end, bar_width, extended_hours), "chart request")


async def fetch_montage(http: FidelityHttp, symbol: str, now: datetime) -> Montage:
    """GET the montage of a symbol (equity or option, without the dash) and map it."""
    url = fastquote_url(MONTAGE_URL, symbols=m.quote_symbol(symbol))
    return m.map_montage(await document(http, url, "montage request"), symbol, now)


async def fetch_last_trade(http: FidelityHttp, symbol: str, today: date) -> float | None:
    """Return the last trade of a symbol from a one-week daily chart (the SDK's own "quote")."""
    payload = await fetch_chart_payload(http, symbol, today - timedelta(days=7), today, BarWidth.DAY, False)
    return m.last_trade(payload, symbol)


class FidelityMarketData:
    """The market-data group (REST; streaming quotes come from the MDDS feed)."""

    def __init__(self, session: FidelitySession, clock: Clock, accounts: FidelityAccounts) -> None:
        self._session = session
        self._clock = clock
        # Available markets are asked for the default tradable account.
        self._accounts = accounts

    def _today(self) -> date:
        return new_york_date(self._clock.now())

    async def get_option_chain(self, symbol: str) -> OptionChain:
        """Return calls and puts for all strikes and expirations (Greeks modelled: see market_data_mapping)."""
        http = self._session.require()
        underlying = symbol.strip().upper()
        payload = await document(http, fastquote_url(CHAIN_URL, symbols=underlying), "option chain request")
        today = self._today()
        chart = await fetch_chart_payload(
            http, underlying, today - timedelta(days=VOLATILITY_LOOKBACK_DAYS), today, BarWidth.DAY, False
        )
        daily = m.map_chart(chart, underlying, BarWidth.DAY)
        volatility = m.historical_volatility([bar.close for bar in daily.bars])
        return m.map_chain(payload, underlying, today, m.last_trade(chart, underlying), volatility)

    async def get_montage(self, symbol: str) -> Montage:
        """Return per-exchange quotes, best bid first."""
        return await fetch_montage(self._session.require(), symbol.strip().upper().lstrip("-"), self._clock.now())

    async def get_chart(
        self, symbol: str, start: date | None, end: date | None, bar_width: BarWidth, extended_hours: bool
    ) -> ChartResult:
        """Return OHLCV bars in time order (default span: a year of days, or today for intraday bars)."""
        wanted = symbol.strip().upper()
        last = end or self._today()
        first = start or last - timedelta(days=_DEFAULT_SPAN.get(bar_width, 0))
        if first > last:
            raise ValidationFailed.for_field("end_date", f"Chart start {first} is after end {last}", location="query")
        payload = await fetch_chart_payload(self._session.require(), wanted, first, last, bar_width, extended_hours)
        return m.map_chart(payload, wanted, bar_width)

    async def get_time_and_sales(
        self, symbol: str, max_rows: int, low_price: float | None, high_price: float | None, low_size: int | None
    ) -> TimeAndSales:
        """Return recent trades, newest first, at most ``max_rows`` (capped at 500)."""
        if max_rows < 1:
            raise ValidationFailed.for_field("max_rows", "max_rows must be at least 1", location="query")
        if low_price is not None and high_price is not None and low_price > high_price:
            raise ValidationFailed.for_field(
                "high_price", f"low_price {low_price} is above high_price {high_price}", location="query"
            )
        wanted = symbol.strip().upper().lstrip("-")
        rows = str(min(max_rows, m.TIME_AND_SALES_CAP))
        url = fastquote_url(TIME_AND_SALES_URL, symbols=m.quote_symbol(wanted), maxRows=rows)
        payload = await document(self._session.require(), url, "time and sales request")
        return m.map_time_and_sales(payload, wanted, max_rows, low_price, high_price, low_size)

    async def get_available_markets(self, symbol: str) -> AvailableMarkets:
        """Return the routing destinations for a symbol (asked for the default tradable account)."""
        http = self._session.require()
        wanted = symbol.strip().upper().lstrip("-")
        tradable = sorted(
            (a for a in await self._accounts.get_accounts() if a.tradable), key=lambda a: not a.is_default
        )
        body = {
            "symbol": wanted,
            "accounts": [a.acct_num for a in tradable[:1]],
            "requestType": "",
            "isCheckShares": False,
        }
        payload = await http.json("POST", AVAILABLE_MARKETS_URL, body=body, read=True, what="available markets request")
        return m.map_available_markets(payload, wanted)

    async def get_holiday_calendar(self, year: int | None) -> list[Holiday]:
        """Return market holidays and early closes of a year (default: this year in New York)."""
        wanted = year if year is not None else self._today().year
        return await calendar.fetch_holidays(self._session.require(), wanted)
