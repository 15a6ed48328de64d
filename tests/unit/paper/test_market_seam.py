"""The paper engine's market seam: session hours, quotes pushed between ticks, and a market without a quote."""

from __future__ import annotations

from pathlib import Path

import pytest

from ftdesk.domain.errors import OrderRejected
from ftdesk.domain.orders import EquityOrder, OrderStatus
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import World, scripted_market


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    return World(tmp_path / "paper.db", clock, scripted_market(clock))


def _place(world: World, order: EquityOrder) -> str:
    return world.engine.place_equity(order, world.engine.preview_equity(order).conf_num).conf_num


def _status(world: World, conf: str) -> OrderStatus:
    return world.engine.order_detail(conf, None).orders[0].status_detail.status


def test_a_market_order_rests_while_the_market_is_closed_and_fills_when_it_opens(world: World) -> None:
    acct = world.account("A1", cash="100000")
    world.market.open = False
    conf = _place(world, EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="M"))
    assert _status(world, conf) is OrderStatus.OPEN
    assert world.engine.process_market() == 0
    assert _status(world, conf) is OrderStatus.OPEN
    world.market.open = True
    assert world.engine.process_market() == 1
    assert _status(world, conf) is OrderStatus.FILLED


def test_a_pushed_quote_fills_a_resting_limit_at_once_without_a_tick(world: World) -> None:
    acct = world.account("A1", cash="100000")
    world.market.on_quote(world.engine.process_symbol)  # as the paper broker wires its market
    conf = _place(world, EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="L", limit_price=99))
    assert _status(world, conf) is OrderStatus.OPEN
    world.market.push("AAPL", 100.5)  # still above the limit: nothing happens
    assert _status(world, conf) is OrderStatus.OPEN
    world.events.clear()
    world.market.push("AAPL", 98.5)  # the ask (98.51) crosses the limit
    assert _status(world, conf) is OrderStatus.FILLED
    fill = next(e for e in world.events if e.event_type == "ORDER_FILL")
    assert fill.desc["price"] == 98.51


def test_the_working_symbols_are_what_the_market_must_keep_current(world: World) -> None:
    acct = world.account("A1", cash="100000")
    _place(world, EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="L", limit_price=99))
    assert world.engine.working_symbols() == ["AAPL"]


def test_a_listed_symbol_the_market_cannot_quote_is_refused_not_priced(world: World) -> None:
    acct = world.account("A1", cash="100000")
    world.market.withdraw_quote("AAPL")
    with pytest.raises(OrderRejected) as info:
        world.engine.preview_equity(EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="M"))
    assert info.value.reason == "NO_QUOTE"
    assert "No quote for AAPL" in info.value.message


async def test_on_a_pushed_quote_the_fill_is_heard_before_the_balances_are_built(world: World) -> None:
    from tests.fakes.waiting import wait_until

    acct = world.account("A1", cash="100000")
    outbox = world.ledger.outbox

    def on_quote(symbol: str) -> None:  # as the paper broker works a pushed quote
        with outbox.deferring():
            world.engine.process_symbol(symbol)

    world.market.on_quote(on_quote)
    _place(world, EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="L", limit_price=99))
    world.events.clear()
    world.market.push("AAPL", 98.5)
    assert "ORDER_FILL" in world.types() and "BALANCE_UPDATED" not in world.types()  # not built yet
    await wait_until(lambda: "BALANCE_UPDATED" in world.types())
    balance = next(e for e in world.events if e.event_type == "BALANCE_UPDATED")
    assert balance.desc["cash"] == world.ledger.balances(acct).cash  # read from the committed fill


def test_without_a_running_loop_or_outside_deferring_the_balances_follow_the_fill_at_once(world: World) -> None:
    acct = world.account("A1", cash="100000")
    world.events.clear()
    _place(world, EquityOrder(acct_num=acct, symbol="AAPL", action="B", qty=10, price_type="M"))
    assert world.types().index("ORDER_FILL") < world.types().index("BALANCE_UPDATED")
