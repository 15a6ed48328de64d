"""Day P&L on paper: shares bought today count from their fill, shares held overnight from the previous close.

Today (the anchor, Monday 2026-11-16) AAPL last 100.00, previous close 98.00; the option CALL last 2.00 with
a previous close of 1.50. Sales made today count their realised day gain on the same rule.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from ftdesk.domain.accounts import Position
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import CALL, World, scripted_market

FRIDAY = date(2026, 11, 13)


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    market = scripted_market(clock)
    market.set_price(CALL, 2.0, prev_close=1.5)
    return World(tmp_path / "paper.db", clock, market)


def position(world: World, acct: str, symbol: str) -> Position:
    return next(p for p in world.ledger.positions(acct) if p.symbol == symbol)


def test_shares_bought_today_count_from_their_fill_price(world: World) -> None:
    acct = world.account("D1", cash="50000")
    world.fill(acct, "AAPL", 3, "101.50")  # bought above the last: a day loss, whatever the previous close
    aapl = position(world, acct, "AAPL")
    assert aapl.todays_gain_loss == -4.5  # 3 x (100.00 - 101.50), not 3 x (100.00 - 98.00)
    assert aapl.todays_gain_loss == aapl.total_gain_loss
    assert aapl.todays_gain_loss_pct == pytest.approx(-1.48, abs=0.01)


def test_shares_held_overnight_count_from_the_previous_close(world: World) -> None:
    acct = world.account("D2", cash="50000")
    world.fill(acct, "AAPL", 10, "90", on=FRIDAY)
    aapl = position(world, acct, "AAPL")
    assert aapl.todays_gain_loss == 20.0  # 10 x (100 - 98)
    assert aapl.total_gain_loss == 100.0


def test_held_overnight_and_bought_today_each_count_from_their_own_start(world: World) -> None:
    acct = world.account("D3", cash="50000")
    world.fill(acct, "AAPL", 10, "90", on=FRIDAY)
    world.fill(acct, "AAPL", 5, "99")
    aapl = position(world, acct, "AAPL")
    assert aapl.todays_gain_loss == 25.0  # 10 x (100 - 98) + 5 x (100 - 99)


def test_a_partial_sale_today_leaves_the_rest_from_the_close_and_realises_its_own_day_gain(world: World) -> None:
    acct = world.account("D4", cash="50000")
    world.fill(acct, "AAPL", 10, "90", on=FRIDAY)
    world.fill(acct, "AAPL", -4, "101")
    assert position(world, acct, "AAPL").todays_gain_loss == 12.0  # 6 left x (100 - 98)
    # 4 sold at 101 against the 98 close: +12 for the day (the 44 realised against cost is the tax figure).
    assert world.ledger.realized_day_gain(acct) == 12.0
    closed = world.ledger.closed_positions(acct, None, None)
    assert closed[0].gain_loss == 44.0


def test_shares_bought_and_sold_today_realise_from_their_fill(world: World) -> None:
    acct = world.account("D5", cash="50000")
    world.fill(acct, "AAPL", 10, "99")
    world.fill(acct, "AAPL", -10, "97")
    assert [p.symbol for p in world.ledger.positions(acct)] == []
    assert world.ledger.realized_day_gain(acct) == -20.0  # 10 x (97 - 99); the close does not enter


def test_earlier_sales_do_not_count_today(world: World) -> None:
    acct = world.account("D6", cash="50000")
    world.fill(acct, "AAPL", 10, "90", on=date(2026, 11, 12))
    world.fill(acct, "AAPL", -10, "95", on=FRIDAY)
    assert world.ledger.realized_day_gain(acct) == 0.0


def test_a_short_sold_today_counts_from_its_sale_price(world: World) -> None:
    acct = world.account("D7", cash="50000")
    world.fill(acct, "AAPL", -10, "102")
    assert position(world, acct, "AAPL").todays_gain_loss == 20.0  # 10 x (102 - 100)


def test_a_short_held_overnight_and_covered_today_realises_from_the_close(world: World) -> None:
    acct = world.account("D8", cash="50000")
    world.fill(acct, "AAPL", -10, "95", on=FRIDAY)
    world.fill(acct, "AAPL", 10, "97")
    assert world.ledger.realized_day_gain(acct) == 10.0  # 10 x (98 - 97)


def test_options_follow_the_same_rule_with_their_multiplier(world: World) -> None:
    acct = world.account("D9", cash="50000")
    world.fill(acct, CALL, 1, "1.20", on=FRIDAY)
    world.fill(acct, CALL, 2, "2.10")
    call = position(world, acct, CALL)
    assert call.todays_gain_loss == 30.0  # 1 x 100 x (2.00 - 1.50) + 2 x 100 x (2.00 - 2.10)
    world.fill(acct, CALL, -1, "2.20")  # FIFO closes the overnight contract
    assert world.ledger.realized_day_gain(acct) == 70.0  # 100 x (2.20 - 1.50)
    assert position(world, acct, CALL).todays_gain_loss == -20.0
