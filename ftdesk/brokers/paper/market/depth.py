"""What the simulated market shows beyond the quote: the per-exchange montage, time and sales, routing venues."""

from __future__ import annotations

import random

from ftdesk.brokers.paper.market.paths import REGULAR_CLOSE_MINUTE, REGULAR_OPEN_MINUTE, tick
from ftdesk.brokers.paper.market.prices import PriceSource, iso, normalize
from ftdesk.brokers.paper.market.randomness import allocate
from ftdesk.brokers.paper.market.venues import EQUITY_MARKET_MAKERS, EQUITY_VENUES, OPTION_VENUES
from ftdesk.domain.errors import ValidationFailed
from ftdesk.domain.market import (
    AvailableMarkets,
    ExchangeQuote,
    MarketDestination,
    Montage,
    Quote,
    TimeAndSales,
    TradeExecution,
)

TIME_AND_SALES_CAP = 500
"""Most trades one time-and-sales request returns (the upstream server cap)."""


def montage(seed: int, quote: Quote, ts: int, *, is_option: bool) -> Montage:
    """Return per-exchange quotes whose best bid and offer are the NBBO of ``quote`` (taken at ``ts``)."""
    venues = OPTION_VENUES if is_option else EQUITY_VENUES
    lot = 1 if is_option else 100
    increment = 0.01 if is_option else tick(quote.bid)
    rng = random.Random(f"{seed}/{quote.symbol}/montage/{ts}")
    order = list(range(len(venues)))
    rng.shuffle(order)
    bids = _spread_depth(rng, quote.bid, quote.bid_size, lot, increment, len(venues), downward=True)
    asks = _spread_depth(rng, quote.ask, quote.ask_size, lot, increment, len(venues), downward=False)
    asks_order = list(range(len(venues)))
    rng.shuffle(asks_order)
    time_text = iso(ts)
    rows = []
    for position, venue_index in enumerate(order):
        code, name = venues[venue_index]
        bid_price, bid_size = bids[position]
        ask_price, ask_size = asks[asks_order[position]]
        rows.append(
            ExchangeQuote(
                exchange=code,
                exchange_name=name,
                bid=bid_price,
                bid_size=bid_size,
                ask=ask_price,
                ask_size=ask_size,
                time=time_text,
            )
        )
    rows.sort(key=lambda row: (-row.bid, row.ask, row.exchange))
    return Montage(symbol=quote.symbol, quotes=rows)


def time_and_sales(
    prices: PriceSource,
    symbol: str,
    max_rows: int = 100,
    low_price: float | None = None,
    high_price: float | None = None,
    low_size: int | None = None,
) -> TimeAndSales:
    """Return recent trades, newest first, filtered by price range and minimum size (at most 500)."""
    if max_rows < 1:
        raise ValidationFailed.for_field("max_rows", "max_rows must be at least 1", location="query")
    if low_price is not None and high_price is not None and low_price > high_price:
        raise ValidationFailed.for_field(
            "high_price", f"low_price {low_price} is above high_price {high_price}", location="query"
        )
    ts = prices.now_ts()
    under = prices.equity(normalize(symbol), purpose="Time and sales")
    limit = min(max_rows, TIME_AND_SALES_CAP)
    day_index, minute, second = prices.locate(ts)
    trades: list[TradeExecution] = []
    for _ in range(24 * 60):  # look back at most one day
        day = prices.intraday(under, day_index)
        tape = prices.tape(under, day, day_index, minute, cache=False)
        regular = REGULAR_OPEN_MINUTE <= day.local_minute(minute) < REGULAR_CLOSE_MINUTE
        for k in range(len(tape.seconds) - 1, -1, -1):
            sec = tape.seconds[k]
            if sec > second:
                continue
            price, size = tape.prices[k], tape.sizes[k]
            if low_price is not None and price < low_price:
                continue
            if high_price is not None and price > high_price:
                continue
            if low_size is not None and size < low_size:
                continue
            condition = "F" if regular else "T"
            if regular and size < 100:
                condition = "I"
            trades.append(
                TradeExecution(
                    time=iso(day.start + minute * 60 + sec),
                    price=price,
                    size=size,
                    exchange=EQUITY_VENUES[tape.venues[k]][0],
                    condition=condition,
                )
            )
            if len(trades) >= limit:
                return TimeAndSales(symbol=under.security.symbol, trades=trades)
        second = 59
        minute -= 1
        if minute < 0:
            if day_index == 0:
                break
            day_index -= 1
            minute = prices.intraday(under, day_index).minutes - 1
    return TimeAndSales(symbol=under.security.symbol, trades=trades)


def available_markets(symbol: str, *, is_option: bool) -> AvailableMarkets:
    """Return the routing destinations of a canonical symbol: AUTO (the default) and the venues."""
    markets = [MarketDestination(routing_code="AUTO", name="AUTO", market_type="AUTO", default=True)]
    if is_option:
        markets += [
            MarketDestination(routing_code=code, name=name, market_type="EXCHANGE") for code, name in OPTION_VENUES
        ]
        return AvailableMarkets(symbol=symbol, markets=markets)
    markets += [MarketDestination(routing_code=code, name=name, market_type="EXCHANGE") for code, name in EQUITY_VENUES]
    markets += [
        MarketDestination(routing_code=code, name=name, market_type=kind) for code, name, kind in EQUITY_MARKET_MAKERS
    ]
    return AvailableMarkets(symbol=symbol, markets=markets)


def _spread_depth(
    rng: random.Random, best: float, best_size: int, lot: int, increment: float, venues: int, *, downward: bool
) -> list[tuple[float, int]]:
    """Return one (price, size) per venue: some at the best price sharing its size, the rest behind it."""
    lots = max(1, best_size // lot)
    at_best = max(1, min(lots, rng.randint(1, 3)))
    split = allocate(lots - at_best, [rng.random() + 0.1 for _ in range(at_best)])
    rows = [(best, (1 + extra) * lot) for extra in split]
    for _ in range(venues - at_best):
        steps = rng.randint(1, 4)
        price = best - steps * increment if downward else best + steps * increment
        price = round(max(price, 0.0), 4 if increment < 0.01 else 2)
        rows.append((price, lot * rng.randint(1, 10)))
    return rows
