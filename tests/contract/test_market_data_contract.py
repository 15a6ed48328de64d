"""The market-data group's contract (``broker.market_data``): montage, charts, trades, markets, chains, holidays."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from ftdesk.brokers.capabilities import MarketDataApi
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.market import BarWidth


async def test_market_data_for_a_held_symbol(
    market_data: MarketDataApi, equity_position: tuple[Account, Position], today: date
) -> None:
    _, position = equity_position
    symbol = position.symbol
    montage = await market_data.get_montage(symbol)
    assert montage.symbol == symbol and montage.quotes
    assert all(q.bid <= q.ask for q in montage.quotes)
    chart = await market_data.get_chart(symbol, today - timedelta(days=60), None, BarWidth.DAY, False)
    assert chart.bars and [b.date for b in chart.bars] == sorted(b.date for b in chart.bars)
    assert all(b.low <= min(b.open, b.close) <= max(b.open, b.close) <= b.high for b in chart.bars)
    trades = await market_data.get_time_and_sales(symbol, 25, None, None, None)
    assert 0 < len(trades.trades) <= 25
    assert (await market_data.get_available_markets(symbol)).markets
    with pytest.raises(e.NotFound):
        await market_data.get_montage("NOSUCHSYMBOLX")


async def test_option_chain_has_calls_and_puts_with_greeks(market_data: MarketDataApi, optionable_symbol: str) -> None:
    chain = await market_data.get_option_chain(optionable_symbol)
    assert chain.symbol == optionable_symbol and chain.expirations
    expiration = chain.expirations[0]
    strike = min(expiration.strikes, key=lambda s: abs(s.strike - chain.underlying_price))
    assert strike.call is not None and strike.put is not None
    assert 0 < strike.call.greeks.delta < 1 and -1 < strike.put.greeks.delta < 0


async def test_holiday_calendar_of_a_year(market_data: MarketDataApi, today: date) -> None:
    holidays = await market_data.get_holiday_calendar(today.year)
    assert holidays and all(h.date.startswith(str(today.year)) for h in holidays)
