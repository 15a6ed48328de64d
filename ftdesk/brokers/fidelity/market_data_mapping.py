"""Pure mappers of the market-data answers to domain records, and the chain's Greeks model.

chainLite lists contract symbols only (Trader+ prices chains through MDDS), so a chain's Greeks are
Black-Scholes estimates from the underlying's last trade and its historical volatility (both from the daily
chart), and its prices stay 0: an invented bid or ask could end up in an order. docs/fidelity-gaps.md says so.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.market_data_parsing import check_base
from ftdesk.brokers.fidelity.values import option_contract
from ftdesk.domain.accounts import OptionType
from ftdesk.domain.errors import NotFound
from ftdesk.domain.market import (
    AvailableMarkets,
    Bar,
    BarWidth,
    ChainExpiration,
    ChainStrike,
    ChartResult,
    ExchangeQuote,
    Greeks,
    MarketDestination,
    Montage,
    OptionChain,
    OptionQuote,
    SymbolInfo,
    TimeAndSales,
    TradeExecution,
)

TIME_AND_SALES_CAP = 500
RISK_FREE_RATE = 0.04
"""Annual rate of the chain's Greeks model (no rate comes from the upstream)."""
DEFAULT_VOLATILITY = 0.30
"""Volatility of the model when the chart has too few closes to measure one."""
TRADING_DAYS = 252
_DAILY_WIDTHS = (BarWidth.DAY, BarWidth.WEEK, BarWidth.MONTH)


def quote_symbol(symbol: str) -> str:
    """Return a symbol in fastquote's form: options take a leading dash."""
    text = symbol.strip().upper()
    return f"-{text.lstrip('-')}" if option_contract(text) is not None else text


# --- option chain -------------------------------------------------------------------------------


def chain_contracts(payload: Any, symbol: str) -> list[tuple[OptionType, date, float, str]]:
    """Return ``(type, expiration, strike, symbol)`` of every contract chainLite lists; ``NotFound`` on ``err``."""
    root = v.obj(payload, "OPTIONCHAIN") or v.obj(payload)
    check_base(v.obj(root, "BASE"), root, symbol, "option chain")
    out: list[tuple[OptionType, date, float, str]] = []
    for side, option_type in (("CALLS", OptionType.CALL), ("PUTS", OptionType.PUT)):
        for expiration in v.items(root, "CHAIN", side, "EXP_DATE"):
            day = v.day(expiration.get("dt"))
            for contract in v.items(expiration, "O"):
                strike = v.number(contract.get("st"))
                code = v.text(contract.get("s"))
                if day is None or strike is None or code is None:
                    continue
                out.append((option_type, day, strike, code.lstrip("-")))
    return out


def map_chain(payload: Any, symbol: str, today: date, underlying_price: float | None, volatility: float) -> OptionChain:
    """Map a chainLite answer into expirations and strikes, Greeks from the model of the module docstring."""
    price = underlying_price or 0.0
    grid: dict[date, dict[float, dict[OptionType, OptionQuote]]] = {}
    for option_type, expiration, strike, code in chain_contracts(payload, symbol):
        if expiration < today:
            continue
        years = max((expiration - today).days, 1) / 365.0
        greeks = black_scholes_greeks(option_type, price, strike, years, volatility, RISK_FREE_RATE)
        grid.setdefault(expiration, {}).setdefault(strike, {})[option_type] = OptionQuote(
            symbol=code,
            option_type=option_type,
            strike=strike,
            expiration=expiration.isoformat(),
            bid=0.0,
            ask=0.0,
            last=0.0,
            volume=0,
            open_interest=0,
            greeks=greeks,
        )
    expirations = [
        ChainExpiration(
            expiration=expiration.isoformat(),
            days_to_expiration=(expiration - today).days,
            strikes=[
                ChainStrike(strike=strike, call=sides.get(OptionType.CALL), put=sides.get(OptionType.PUT))
                for strike, sides in sorted(grid[expiration].items())
            ],
        )
        for expiration in sorted(grid)
    ]
    raw = payload if isinstance(payload, dict) else None
    return OptionChain(symbol=symbol, underlying_price=price, expirations=expirations, raw=raw)


def historical_volatility(closes: Sequence[float]) -> float:
    """Return the annualised standard deviation of daily log returns, or the default with too few closes."""
    returns = [math.log(b / a) for a, b in itertools.pairwise(closes) if a > 0 and b > 0]
    if len(returns) < 5:
        return DEFAULT_VOLATILITY
    measured = statistics.stdev(returns) * math.sqrt(TRADING_DAYS)
    return measured if measured > 0 else DEFAULT_VOLATILITY


def black_scholes_greeks(
    option_type: OptionType, spot: float, strike: float, years: float, volatility: float, rate: float
) -> Greeks:
    """Return Black-Scholes Greeks (theta per calendar day, vega and rho per point); zeros without a spot."""
    if spot <= 0 or strike <= 0 or years <= 0 or volatility <= 0:
        return Greeks(delta=0.0, gamma=0.0, theta=0.0, vega=0.0, rho=0.0, implied_volatility=0.0)
    root_t = math.sqrt(years)
    d1 = (math.log(spot / strike) + (rate + volatility**2 / 2) * years) / (volatility * root_t)
    d2 = d1 - volatility * root_t
    density = math.exp(-(d1**2) / 2) / math.sqrt(2 * math.pi)
    discount = math.exp(-rate * years)
    gamma = density / (spot * volatility * root_t)
    vega = spot * density * root_t / 100
    decay = -spot * density * volatility / (2 * root_t)
    if option_type is OptionType.CALL:
        delta = _cdf(d1)
        theta = (decay - rate * strike * discount * _cdf(d2)) / 365
        rho = strike * years * discount * _cdf(d2) / 100
    else:
        delta = _cdf(d1) - 1
        theta = (decay + rate * strike * discount * _cdf(-d2)) / 365
        rho = -strike * years * discount * _cdf(-d2) / 100
    return Greeks(
        delta=round(delta, 6),
        gamma=round(gamma, 6),
        theta=round(theta, 6),
        vega=round(vega, 6),
        rho=round(rho, 6),
        implied_volatility=round(volatility, 6),
    )


def _cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


# --- montage ------------------------------------------------------------------------------------


def map_montage(payload: Any, symbol: str, now: datetime) -> Montage:
    """Map a dtmontage answer (XML or JSON, ``O`` alone or in a list); best bids first."""
    root = v.obj(payload, "OPTIONS_MONTAGE") or v.obj(payload)
    check_base(v.obj(root, "BASE"), root, symbol, "montage")
    stamp = now.isoformat()
    quotes = [
        ExchangeQuote(
            exchange=v.text(row.get("ec")) or v.text(row.get("es")) or v.text_or(row.get("se")),
            exchange_name=v.text(row.get("en")) or v.text(row.get("es")) or "",
            bid=v.number_or(row.get("b")),
            bid_size=v.integer(row.get("bs")) or 0,
            ask=v.number_or(row.get("a")),
            ask_size=v.integer(row.get("as")) or 0,
            time=stamp,
        )
        for row in v.items(root, "EXCH_QUOTES", "O")
    ]
    quotes.sort(key=lambda q: (-q.bid, q.ask if q.ask > 0 else math.inf, q.exchange))
    return Montage(symbol=symbol, quotes=quotes, raw=payload if isinstance(payload, dict) else None)


def best_mid(montage: Montage) -> float | None:
    """Return the midpoint of the best bid and best offer across exchanges, or None without both."""
    bids = [q.bid for q in montage.quotes if q.bid > 0]
    asks = [q.ask for q in montage.quotes if q.ask > 0]
    if not bids or not asks:
        return None
    return round((max(bids) + min(asks)) / 2, 4)


# --- chart --------------------------------------------------------------------------------------


def chart_symbol(payload: Any, symbol: str) -> dict[str, Any]:
    """Return the ``Symbol`` entry of a chart answer for ``symbol``; ``NotFound`` when there is none."""
    entries = v.items(payload, "Symbol")
    for entry in entries:
        if v.text_or(entry.get("Identifier")).upper() == symbol:
            return entry
    if len(entries) == 1 and v.items(entries[0], "BarList", "BarRecord"):
        return entries[0]
    raise NotFound(f"Fidelity has no chart for {symbol!r}", details={"symbol": symbol})


def map_chart(payload: Any, symbol: str, bar_width: BarWidth) -> ChartResult:
    """Map a chart answer: bars in time order (one per start time), the symbol's context."""
    entry = chart_symbol(payload, symbol)
    bars: dict[str, Bar] = {}
    for record in v.items(entry, "BarList", "BarRecord"):
        when = _bar_time(record.get("lt"), bar_width)
        values = [v.number(record.get(key)) for key in ("op", "hi", "lo", "cl")]
        if when is None or any(value is None for value in values):
            continue
        opened, high, low, closed = (value or 0.0 for value in values)
        bars[when] = Bar(
            date=when, open=opened, high=high, low=low, close=closed, volume=v.integer(record.get("v")) or 0
        )
    previous = v.number(entry.get("PreviousClose"))
    info = SymbolInfo(
        previous_close=previous if previous is not None else 0.0,
        description=v.text_or(entry.get("Description")),
        exchange=v.text_or(entry.get("Exchange")),
    )
    ordered = [bars[key] for key in sorted(bars)]
    return ChartResult(symbol=symbol, bar_width=bar_width, bars=ordered, symbol_info=info, raw=entry)


def last_trade(payload: Any, symbol: str) -> float | None:
    """Return the chart answer's ``LastTrade`` (or the last bar's close)."""
    entry = chart_symbol(payload, symbol)
    price = v.number(entry.get("LastTrade"))
    if price is not None:
        return price
    closes = [v.number(bar.get("cl")) for bar in v.items(entry, "BarList", "BarRecord")]
    known = [close for close in closes if close is not None]
    return known[-1] if known else None


def _bar_time(value: Any, bar_width: BarWidth) -> str | None:
    raw = v.text(value)
    if raw is None:
        return None
    if bar_width in _DAILY_WIDTHS:
        # A daily bar's date is the exchange's calendar date, whatever the clock part says.
        return v.iso_day(raw.split("-")[0] if "/" in raw else raw)
    return v.iso_time(raw)


# --- time and sales (shape assumed) -------------------------------------------------------------

_TIME_KEYS = ("tm", "t", "time", "tradeTime", "dt")
_PRICE_KEYS = ("p", "pr", "price", "tradePrice", "lt")
_SIZE_KEYS = ("sz", "s", "size", "v", "vol", "tradeSize")
_EXCHANGE_KEYS = ("ex", "e", "exch", "exchange", "ec")
_CONDITION_KEYS = ("c", "cond", "condition", "tc")


def map_time_and_sales(
    payload: Any,
    symbol: str,
    max_rows: int,
    low_price: float | None,
    high_price: float | None,
    low_size: int | None,
) -> TimeAndSales:
    """Map a time-and-sales answer: every record with a time and a price, filtered, newest first, capped."""
    root = next(iter(payload.values()), {}) if isinstance(payload, dict) and len(payload) == 1 else payload
    if isinstance(root, dict):
        check_base(v.obj(root, "BASE"), root, symbol, "time and sales")
    trades: list[tuple[datetime, TradeExecution]] = []
    for record in v.walk_dicts(root):
        when = v.timestamp(v.first(record, *_TIME_KEYS))
        price = v.number(v.first(record, *_PRICE_KEYS))
        if when is None or price is None or "BASE" in record:
            continue
        size = v.integer(v.first(record, *_SIZE_KEYS)) or 0
        if (low_price is not None and price < low_price) or (high_price is not None and price > high_price):
            continue
        if low_size is not None and size < low_size:
            continue
        trade = TradeExecution(
            time=when.isoformat(),
            price=price,
            size=size,
            exchange=v.text_or(v.first(record, *_EXCHANGE_KEYS)),
            condition=v.text(v.first(record, *_CONDITION_KEYS)) or "F",
        )
        trades.append((when, trade))
    trades.sort(key=lambda item: item[0], reverse=True)
    limit = max(1, min(max_rows, TIME_AND_SALES_CAP))
    raw = payload if isinstance(payload, dict) else None
    return TimeAndSales(symbol=symbol, trades=[trade for _, trade in trades[:limit]], raw=raw)


# --- available markets --------------------------------------------------------------------------


def map_available_markets(payload: Any, symbol: str) -> AvailableMarkets:
    """Map the routing destinations; ``AUTO`` is the default; ``NotFound`` when the security is unknown."""
    security = v.obj(payload, "security")
    rows = v.items(payload, "availableMarkets")
    if not rows:
        raise NotFound(f"Fidelity lists no trading destinations for {symbol!r}", details={"symbol": symbol})
    markets: list[MarketDestination] = []
    for row in rows:
        marketplace = v.text_or(row.get("marketplace")).upper()
        routing_code = v.text(row.get("routingCode")) or marketplace
        is_auto = marketplace == "AUTO"
        markets.append(
            MarketDestination(
                routing_code=routing_code,
                name=v.text(row.get("name")) or marketplace or routing_code,
                market_type="AUTO" if is_auto else "EXCHANGE",
                default=is_auto,
            )
        )
    if markets and not any(m.default for m in markets):
        markets[0] = markets[0].model_copy(update={"default": True})
    return AvailableMarkets(
        symbol=v.text(security.get("symbol")) or symbol,
        markets=markets,
        raw=payload if isinstance(payload, dict) else None,
    )
