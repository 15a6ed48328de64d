"""The cockpit's day P&L: one rule for both brokers, from the position and today's fills of its symbol.

A broker's own day figure (Fidelity's todaysGainLoss, here a deliberately wrong 999.0) does not enter the sums.
"""

from __future__ import annotations

from ftdesk.domain.accounts import Position
from ftdesk.domain.day_pnl import day_gain
from ftdesk.domain.orders import Order
from tests.unit.day_pnl_records import filled_order, held_position

BROKER_FIGURE = 999.0


def position(qty: float, last: float, prev: float, *, symbol: str = "TSLA", kind: str = "EQUITY") -> Position:
    return held_position(qty, last, prev, acct="X1", symbol=symbol, kind=kind, broker_day_gain=BROKER_FIGURE)


def fill(action: str, qty: float, price: float | None, *, symbol: str = "TSLA", acct: str = "X1") -> Order:
    conf_num = f"C{action}{qty}{price}"
    return filled_order(
        action, qty, price, acct=acct, symbol=symbol, conf_num=conf_num, entered="2026-11-16T10:00:00-05:00"
    )


def test_bought_today_counts_from_the_fill_not_the_previous_close() -> None:
    # The case: 3 TSLA bought at 658.19, last 657.33, previous close 613.86.
    assert day_gain(position(3, 657.33, 613.86), [fill("B", 3, 658.19)]) == -2.58


def test_held_overnight_counts_from_the_previous_close() -> None:
    assert day_gain(position(10, 105.0, 100.0), []) == 50.0


def test_held_overnight_and_bought_today() -> None:
    assert day_gain(position(15, 105.0, 100.0), [fill("B", 5, 103.0)]) == 60.0  # 10 x 5 + 5 x 2


def test_a_partial_sale_today_realises_against_the_previous_close() -> None:
    # 10 held overnight at a 100 close, 4 sold at 106, 6 left at 105: 6 x 5 + 4 x 6.
    assert day_gain(position(6, 105.0, 100.0), [fill("S", 4, 106.0)]) == 54.0


def test_options_count_the_contract_multiplier() -> None:
    call = position(3, 2.0, 1.5, symbol="AAPL261218C110", kind="OPTION")
    assert day_gain(call, [fill("BC", 2, 2.1, symbol="AAPL261218C110")]) == 30.0  # 1 x 50 - 2 x 10


def test_other_accounts_and_symbols_do_not_count() -> None:
    assert day_gain(position(10, 105.0, 100.0), [fill("B", 5, 1.0, acct="X2"), fill("B", 5, 1.0, symbol="KO")]) == 50


def test_the_brokers_figure_stands_in_only_where_the_rule_cannot_apply() -> None:
    assert day_gain(position(3, 657.33, 613.86), [fill("B", 3, None)]) == BROKER_FIGURE  # no fill price
    assert day_gain(position(10, 105.0, 0.0), []) == BROKER_FIGURE  # no previous close
    assert day_gain(position(3, 657.33, 0.0), [fill("B", 3, 658.19)]) == -2.58  # none needed: all bought today


def test_the_commission_an_order_status_gives_is_a_cost_of_the_day() -> None:
    bought = fill("B", 3, 658.19)
    charged = bought.model_copy(update={"status_detail": bought.status_detail.model_copy(update={"commission": 0.65})})
    assert day_gain(position(3, 657.33, 613.86), [charged]) == -3.23  # -2.58 less the 0.65 commission
