"""The daily loss limit on paper: the real ledger and order engine, on the scripted market and a manual clock.

Monday 16 November 2026. AAPL was bought on Friday at 90.00, closed at 100.00 and trades at 97.00 today
(96.99 x 97.01). The figure the limit compares is the paper ledger's own day P&L (the positions' day gain plus
``Ledger.realized_day_gain``) less the sale's SEC fee and FINRA TAF, which no order status carries (equity
commission is 0 on paper); a loss equal to the limit passes while one cent more halts.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from ftdesk.brokers.paper.ledger.money import sell_fees_cents
from ftdesk.domain.accounts import Position
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import EquityOrder, Order
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import World, scripted_market
from tests.unit.test_safety_reads import ACCT, assert_boundary, reads

FRIDAY = date(2026, 11, 13)


class PaperAccount:
    """The three reads the limit makes, answered by the paper ledger, engine and market."""

    def __init__(self, world: World) -> None:
        self.world = world

    async def get_positions(self, acct_num: str) -> list[Position]:
        return self.world.ledger.positions(acct_num)

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        return self.world.engine.order_status(acct_num)

    async def snapshot(self, symbols: list[str]) -> list[Quote]:
        return [self.world.market.quote(symbol) for symbol in symbols]


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    market = scripted_market(clock)
    market.set_price("AAPL", 97.0, prev_close=100.0)
    return World(tmp_path / "paper.db", clock, market)


def trade(world: World, action: str, qty: float) -> None:
    order = EquityOrder(acct_num=ACCT, symbol="AAPL", action=action, qty=qty, price_type="M")
    world.engine.place_equity(order, world.engine.preview_equity(order).conf_num)


def ledger_day_before_fees(world: World, sold: int, price: float) -> float:
    """Return the paper ledger's day P&L with the fees of one sale (``sold`` at ``price``) put back."""
    held = sum(p.todays_gain_loss for p in world.ledger.positions(ACCT))
    fees = sell_fees_cents(sold, round(sold * price * 100), is_option=False) / 100
    assert fees > 0
    return round(held + world.ledger.realized_day_gain(ACCT) + fees, 2)


async def limit_figure(world: World) -> float:
    return (await reads(PaperAccount(world), world.clock).pnl(ACCT)).total


async def test_held_overnight_and_sold_today_below_the_close_above_the_cost(world: World, tmp_path: Path) -> None:
    world.account(ACCT, cash="50000")
    world.fill(ACCT, "AAPL", 10, "90", on=FRIDAY)
    trade(world, "S", 10)  # at the 96.99 bid: +69.90 against the cost, -30.10 against the close
    assert world.ledger.closed_positions(ACCT, None, None)[0].gain_loss > 69  # a gain on the tax report
    assert await limit_figure(world) == ledger_day_before_fees(world, 10, 96.99) == -30.1
    await assert_boundary(tmp_path, PaperAccount(world), 30.1, world.clock)


async def test_bought_and_sold_today(world: World, tmp_path: Path) -> None:
    world.account(ACCT, cash="50000")
    trade(world, "B", 10)  # at the 97.01 ask
    trade(world, "S", 10)  # at the 96.99 bid
    assert await limit_figure(world) == ledger_day_before_fees(world, 10, 96.99) == -0.2
    await assert_boundary(tmp_path, PaperAccount(world), 0.2, world.clock)


async def test_a_partial_sale(world: World, tmp_path: Path) -> None:
    world.account(ACCT, cash="50000")
    world.fill(ACCT, "AAPL", 10, "90", on=FRIDAY)
    trade(world, "S", 4)  # 4 x (96.99 - 100) realised, 6 x (97 - 100) held
    assert await limit_figure(world) == ledger_day_before_fees(world, 4, 96.99) == -30.04
    await assert_boundary(tmp_path, PaperAccount(world), 30.04, world.clock)
