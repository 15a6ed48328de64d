"""The paper order engine: every order type, fills, cancels, replaces, conditionals and rejections."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ftdesk.domain.errors import Conflict, NotFound, OrderRejected, ValidationFailed
from ftdesk.domain.orders import (
    ConditionalLeg,
    ConditionalOrder,
    ConditionalReplace,
    EquityOrder,
    MultiLegOptionLeg,
    MultiLegOptionOrder,
    OptionOrder,
    OrderPlacement,
    OrderStatus,
    ReplaceOrder,
    StagedOrderDraft,
    TimeInForce,
)
from tests.fakes.clock import ManualClock
from tests.unit.paper.test_ledger import CALL, PUT, World, scripted_market

C120 = "AAPL261218C120"
P100 = "AAPL261218P100"


@pytest.fixture
def world(tmp_path: Path) -> World:
    clock = ManualClock()
    return World(tmp_path / "paper.db", clock, scripted_market(clock))


def eq(acct: str, action: str, qty: float, pt: str = "M", *, symbol: str = "AAPL", **kw: Any) -> EquityOrder:
    return EquityOrder(acct_num=acct, symbol=symbol, action=action, qty=qty, price_type=pt, **kw)


def opt(acct: str, symbol: str, action: str, qty: int, pt: str = "M", **kw: Any) -> OptionOrder:
    return OptionOrder(acct_num=acct, symbol=symbol, action=action, qty=qty, price_type=pt, **kw)


def leg(action: str, qty: float, pt: str = "M", **kw: Any) -> ConditionalLeg:
    return ConditionalLeg(symbol="AAPL", action=action, qty=qty, price_type=pt, **kw)


def place(world: World, order: EquityOrder) -> OrderPlacement:
    return world.engine.place_equity(order, world.engine.preview_equity(order).conf_num)


def place_option(world: World, order: OptionOrder) -> OrderPlacement:
    return world.engine.place_option(order, world.engine.preview_option(order).conf_num)


def place_conditional(world: World, order: ConditionalOrder) -> OrderPlacement:
    return world.engine.place_conditional(order, world.engine.preview_conditional(order).conf_nums)


def tick(world: World, seconds: float = 1, **prices: Any) -> int:
    """Move time on, set prices (symbol=last or symbol=(last, size)), and run the engine once."""
    world.clock.set_wall(world.clock.now() + timedelta(seconds=seconds))
    for symbol, value in prices.items():
        last, size = value if isinstance(value, tuple) else (value, None)
        world.market.set_price(symbol, last, size=size)
    return world.engine.process_market()


def status(world: World, conf: str) -> Any:
    return world.engine.order_detail(conf, None).orders[0].status_detail


def reason_of(call: Any) -> OrderRejected:
    with pytest.raises(OrderRejected) as info:
        call()
    return info.value


# --- market, limit, stop, stop-limit --------------------------------------------------------------------------


def test_market_buy_fills_at_the_ask_with_events_in_order(world: World) -> None:
    acct = world.account("A1", cash="100000")
    order = eq(acct, "B", 10)
    preview = world.engine.preview_equity(order)
    assert re.fullmatch(r"[A-Z0-9]{8}", preview.conf_num) and preview.quote is not None
    assert (preview.est_cost, preview.est_commission, preview.quote.ask) == (1000.10, 0.0, 100.01)
    assert any("Day order" in w for w in preview.warnings)
    world.events.clear()
    placed = world.engine.place_equity(order, preview.conf_num)
    assert (placed.conf_num, placed.status, placed.message) == (
        preview.conf_num,
        OrderStatus.FILLED,
        "Filled at $100.01",
    )
    assert world.types() == ["ORDER_UPDATED", "ORDER_FILL", "POSITION_CHANGED", "BALANCE_UPDATED", "COST_BASIS_UPDATED"]
    fill = world.events[1].desc
    assert (fill["fill_qty"], fill["price"], fill["cum_qty"], fill["partial"]) == (10, 100.01, 10, False)
    detail = status(world, placed.conf_num)
    assert (detail.cancelable_ind, detail.replaceable_ind, detail.avg_exec_price) == (False, False, 100.01)
    assert world.ledger.balances(acct).cash == 100000 - 1000.10


def test_cash_to_the_cent_after_fills_with_commissions_and_fees(world: World) -> None:
    acct = world.account("A2", margin=False, level=2, cash="10000")
    place(world, eq(acct, "B", 10))  # 10 x 100.01
    sale = eq(acct, "S", 4)
    assert world.engine.preview_equity(sale).est_fees == 0.03  # SEC 0.02 + TAF 0.01 on 399.96
    place(world, sale)  # 399.96 - 0.03
    buy_call = opt(acct, CALL, "BC", 2)
    assert world.engine.preview_option(buy_call).est_cost == 411.30  # 2 x 2.05 x 100 + 2 x 0.65
    place_option(world, buy_call)
    place_option(world, opt(acct, CALL, "SC", 1))  # 195 - 0.65 - 0.02
    assert world.ledger.balances(acct).cash == 9182.86
    orders = world.engine.order_status(acct)
    assert [o.status_detail.commission for o in orders] == [0.65, 1.30, 0.0, 0.0]


def test_limit_buy_waits_then_fills_at_the_ask(world: World) -> None:
    acct = world.account("A3", cash="100000")
    placed = place(world, eq(acct, "B", 10, "L", limit_price=95))
    assert placed.status is OrderStatus.OPEN
    bal = world.ledger.balances(acct)
    assert bal.cash_committed_to_open_orders == 950.0
    assert bal.margin_buying_power == 200000 - 950.0  # 50% of 950 out of excess equity, doubled
    assert tick(world, AAPL=96.0) == 0
    assert tick(world, AAPL=94.0) == 1
    detail = status(world, placed.conf_num)
    assert (detail.status, detail.avg_exec_price) == (OrderStatus.FILLED, 94.01)
    assert world.ledger.balances(acct).cash_committed_to_open_orders == 0.0


def test_marketable_sell_limit_fills_at_the_better_bid(world: World) -> None:
    acct = world.account("A4", cash="100000")
    place(world, eq(acct, "B", 10))
    placed = place(world, eq(acct, "S", 10, "L", limit_price=95))
    assert status(world, placed.conf_num).avg_exec_price == 99.99


def test_stop_triggers_on_the_last_price_and_fills_as_market(world: World) -> None:
    acct = world.account("A5", cash="100000")
    place(world, eq(acct, "B", 10))
    placed = place(world, eq(acct, "S", 10, "S", stop_price=95, tif="G"))
    assert status(world, placed.conf_num).status_desc == "Open: waiting for the stop at $95.00"
    assert tick(world, AAPL=96.0) == 0
    world.events.clear()
    assert tick(world, AAPL=94.5) == 1
    assert world.types()[:2] == ["ORDER_UPDATED", "ORDER_FILL"]
    assert world.events[0].desc["event"] == "STOP_TRIGGERED"
    assert status(world, placed.conf_num).avg_exec_price == 94.49


def test_stop_limit_becomes_a_limit_order(world: World) -> None:
    acct = world.account("A6", cash="100000")
    placed = place(world, eq(acct, "B", 10, "SL", stop_price=105, limit_price=106, tif="G"))
    assert tick(world, AAPL=110.0) == 0  # triggered, but 110.01 is above the limit
    detail = status(world, placed.conf_num)
    assert (detail.status, detail.status_desc) == (OrderStatus.OPEN, "Open: stop triggered")
    assert tick(world, AAPL=105.8) == 1
    assert status(world, placed.conf_num).avg_exec_price == 105.81


def test_day_orders_expire_at_the_close_and_gtc_orders_stay(world: World) -> None:
    acct = world.account("A7", cash="100000")
    day = place(world, eq(acct, "B", 10, "L", limit_price=90))
    gtc = place(world, eq(acct, "B", 10, "L", limit_price=90, tif="G"))
    world.clock.set_wall(datetime(2026, 11, 16, 20, 59, 59, tzinfo=UTC))  # 15:59:59 New York
    world.engine.process_market()
    assert status(world, day.conf_num).status is OrderStatus.OPEN
    world.events.clear()
    world.clock.set_wall(datetime(2026, 11, 16, 21, 0, tzinfo=UTC))
    world.engine.process_market()
    assert status(world, day.conf_num).status is OrderStatus.EXPIRED
    assert world.types() == ["ORDER_EXPIRED"] and world.events[0].desc["status"] == "EXPIRED"
    world.clock.set_wall(datetime(2026, 11, 20, 21, 0, tzinfo=UTC))
    world.engine.process_market()
    assert status(world, gtc.conf_num).status is OrderStatus.OPEN


def test_a_day_order_entered_after_the_close_works_the_next_session(world: World) -> None:
    acct = world.account("A8", cash="100000")
    world.clock.set_wall(datetime(2026, 11, 20, 22, 0, tzinfo=UTC))  # Friday 17:00 New York
    order = eq(acct, "B", 10, "L", limit_price=90)
    assert any("2026-11-23" in w for w in world.engine.preview_equity(order).warnings)  # Monday
    placed = place(world, order)
    world.clock.set_wall(datetime(2026, 11, 23, 20, 0, tzinfo=UTC))
    world.engine.process_market()
    assert status(world, placed.conf_num).status is OrderStatus.OPEN
    world.clock.set_wall(datetime(2026, 11, 23, 21, 0, tzinfo=UTC))
    world.engine.process_market()
    assert status(world, placed.conf_num).status is OrderStatus.EXPIRED


def test_orders_larger_than_the_displayed_size_fill_in_parts(world: World) -> None:
    acct = world.account("A9", cash="500000")
    order = eq(acct, "B", 1200)
    assert any("larger than the 500 displayed" in w for w in world.engine.preview_equity(order).warnings)
    placed = place(world, order)
    assert placed.status is OrderStatus.PARTIALLY_FILLED
    assert world.engine.process_market() == 0  # the same quote's size is used up
    assert tick(world, AAPL=100.0) == 1
    detail = status(world, placed.conf_num)
    assert (detail.status, detail.qty_exec, detail.qty_remaining) == (OrderStatus.PARTIALLY_FILLED, 1000, 200)
    assert detail.status_desc == "Partially filled: 1,000 of 1,200 at $100.01 average"
    tick(world, AAPL=100.0)
    fills = [e.desc for e in world.events if e.upstream_code == "MFCEX"]
    assert [(f["fill_qty"], f["cum_qty"], f["partial"]) for f in fills] == [
        (500, 500, True),
        (500, 1000, True),
        (200, 1200, False),
    ]
    assert status(world, placed.conf_num).status is OrderStatus.FILLED
    assert world.ledger.positions(acct)[0].quantity == 1200


# --- buy, sell, short, cover ------------------------------------------------------------------------------------


def test_short_sale_and_buy_to_cover(world: World) -> None:
    acct = world.account("B1", cash="100000")
    preview = world.engine.preview_equity(eq(acct, "SS", 10))
    assert (
        any("Short sale" in w for w in preview.warnings) and preview.est_proceeds == 999.86
    )  # 999.90 - 0.03 SEC - 0.01 TAF
    place(world, eq(acct, "SS", 10))
    assert world.ledger.positions(acct)[0].quantity == -10
    assert world.ledger.balances(acct).short_proceeds_held == 999.86
    assert reason_of(lambda: world.engine.preview_equity(eq(acct, "B", 5))).reason == "POSITION_CONFLICT"
    assert reason_of(lambda: world.engine.preview_equity(eq(acct, "BC", 11))).reason == "INSUFFICIENT_POSITION"
    place(world, eq(acct, "BC", 10))
    assert world.ledger.positions(acct) == []
    (closed,) = world.ledger.closed_lots(acct, "AAPL", None, None)
    assert (closed.proceeds, closed.cost_basis, closed.gain_loss) == (999.86, 1000.10, -0.24)


def test_short_selling_is_refused_outside_margin(world: World) -> None:
    ira = world.account("B2", margin=False, level=2, retirement=True, cash="100000")
    error = reason_of(lambda: world.engine.preview_equity(eq(ira, "SS", 10)))
    assert error.reason == "SHORT_NOT_ALLOWED" and "margin account" in error.message
    margin = world.account("B3", cash="100000")
    place(world, eq(margin, "B", 10))
    assert reason_of(lambda: world.engine.preview_equity(eq(margin, "SS", 10))).reason == "POSITION_CONFLICT"


# --- options ------------------------------------------------------------------------------------------------------


def test_single_leg_option_opens_then_closes_by_position(world: World) -> None:
    acct = world.account("C1", cash="100000")
    place_option(world, opt(acct, CALL, "BC", 2))
    (pos,) = world.ledger.positions(acct)
    assert (pos.symbol, pos.quantity, pos.cost_basis) == (CALL, 2, 411.30)
    place_option(world, opt(acct, CALL, "SC", 2))  # selling against the long closes it
    assert world.ledger.positions(acct) == []
    (closed,) = world.ledger.closed_lots(acct, CALL, None, None)
    assert (closed.proceeds, closed.cost_basis) == (388.67, 411.30)  # 390 - 1.30 commission - 0.03 fees
    txns = world.ledger.transactions(acct, None, None)
    assert "CLOSING" in txns[0].description and "OPENING" in txns[1].description


def test_option_levels_are_enforced(world: World) -> None:
    level3 = world.account("C2", cash="100000")
    naked = reason_of(lambda: world.engine.preview_option(opt(level3, CALL, "SC", 1)))
    assert naked.reason == "OPTION_LEVEL_TOO_LOW" and naked.details["required_level"] == 4
    assert "level 4" in naked.message

    covered_only = world.account("C3", level=1, cash="100000")
    assert (
        reason_of(lambda: world.engine.preview_option(opt(covered_only, CALL, "BC", 1))).details["required_level"] == 2
    )
    place(world, eq(covered_only, "B", 100))
    assert place_option(world, opt(covered_only, CALL, "SC", 1)).status is OrderStatus.FILLED
    assert reason_of(lambda: world.engine.preview_option(opt(covered_only, CALL, "SC", 1))).reason == (
        "OPTION_LEVEL_TOO_LOW"
    )

    ira = world.account("C4", margin=False, level=2, retirement=True, cash="20000")
    assert place_option(world, opt(ira, PUT, "SP", 1)).status is OrderStatus.FILLED  # cash-secured
    assert world.ledger.balances(ira).cash_buying_power == 20000 - 9000.0
    wrong = reason_of(lambda: world.engine.preview_option(opt(ira, PUT, "BC", 1)))
    assert wrong.reason == "INVALID_ACTION"


def test_multi_leg_needs_the_agreement_and_fills_at_mids(world: World) -> None:
    acct = world.account("D1", cash="100000")
    spread = MultiLegOptionOrder(
        acct_num=acct,
        underlying="AAPL",
        legs=[MultiLegOptionLeg(symbol=CALL, action="BO", qty=1), MultiLegOptionLeg(symbol=C120, action="SO", qty=1)],
        net_price=0.90,
        debit_credit="DB",
        tif="G",
    )
    missing = reason_of(lambda: world.engine.preview_multileg(spread))
    assert missing.reason == "TRADE_AGREEMENT_REQUIRED" and "MULTI_LEG_OPTIONS" in missing.message
    with pytest.raises(ValidationFailed, match="MULTI_LEG_OPTIONS"):
        world.engine.accept_trade_agreement(acct, "NOT_A_THING")
    accepted = world.engine.accept_trade_agreement(acct, "MULTI_LEG_OPTIONS")
    assert accepted.accepted and accepted.accepted_at
    preview = world.engine.preview_multileg(spread)
    assert preview.est_cost == 91.32  # 0.90 x 100 + 2 x 0.65 + 0.02 fees on the sold leg
    placed = world.engine.place_multileg(spread, preview.conf_num)
    assert placed.status is OrderStatus.OPEN  # mids net to 1.00, above the 0.90 limit
    assert tick(world, **{C120: 1.15}) == 1  # now 2.00 - 1.15 = 0.85
    detail = status(world, placed.conf_num)
    assert (detail.status, detail.avg_exec_price, detail.commission) == (OrderStatus.FILLED, 0.85, 1.30)
    assert {p.symbol: p.quantity for p in world.ledger.positions(acct)} == {CALL: 1, C120: -1}
    assert world.ledger.options_summary(acct).underlyings[0].strategy == "VERTICAL"

    absurd = spread.model_copy(update={"net_price": 100.0})
    assert reason_of(lambda: world.engine.preview_multileg(absurd)).reason == "PRICE_OUT_OF_BOUNDS"

    low = world.account("D2", level=2, cash="100000")
    world.engine.accept_trade_agreement(low, "MULTI_LEG_OPTIONS")
    spread_low = spread.model_copy(update={"acct_num": low})
    assert reason_of(lambda: world.engine.preview_multileg(spread_low)).details["required_level"] == 3


def test_credit_spread_fills_when_the_mids_net_to_the_credit(world: World) -> None:
    acct = world.account("D3", cash="100000")
    world.engine.accept_trade_agreement(acct, "MULTI_LEG_OPTIONS")
    spread = MultiLegOptionOrder(
        acct_num=acct,
        underlying="AAPL",
        legs=[MultiLegOptionLeg(symbol=P100, action="SO", qty=2), MultiLegOptionLeg(symbol=PUT, action="BO", qty=2)],
        net_price=2.60,
        debit_credit="CR",
        tif="G",
    )
    preview = world.engine.preview_multileg(spread)
    assert (preview.qty, preview.est_proceeds) == (2, 517.36)  # 2 x 260 - 4 x 0.65 - 0.04 fees (SEC 0.03, TAF 0.01)
    placed = world.engine.place_multileg(spread, preview.conf_num)
    assert placed.status is OrderStatus.OPEN  # mids: 4.00 - 1.50 = a 2.50 credit
    tick(world, **{P100: 4.2})
    detail = status(world, placed.conf_num)
    assert (detail.status, detail.avg_exec_price) == (OrderStatus.FILLED, 2.70)
    assert {p.symbol: p.quantity for p in world.ledger.positions(acct)} == {PUT: 2, P100: -2}
    # the spread's width is what it can lose: 2 x (100 - 90) x 100, plus the long puts at market (no loan value)
    assert world.ledger.balances(acct).maintenance_requirement == 2000.0 + 300.0


# --- cancel ---------------------------------------------------------------------------------------------------------


def test_cancel_with_preview_and_refusal_when_finished(world: World) -> None:
    acct = world.account("E1", cash="100000")
    placed = place(world, eq(acct, "B", 10, "L", limit_price=90))
    preview = world.engine.preview_cancel(placed.conf_num, acct, "B")
    (detail,) = preview.cancel_preview_detail
    assert preview.is_accepted and detail.is_accepted
    assert (detail.remaining_qty, detail.exec_qty, detail.order_confirm_msgs) == (10, 0, [])
    world.events.clear()
    result = world.engine.cancel(placed.conf_num, acct, "B")
    assert result.is_accepted and result.cancel_confirm_detail[0].remaining_qty == 10
    assert world.types() == ["ORDER_CANCELED"]
    assert status(world, placed.conf_num).status is OrderStatus.CANCELED
    with pytest.raises(Conflict, match="already canceled"):
        world.engine.cancel(placed.conf_num, acct, "B")
    filled = place(world, eq(acct, "B", 1))
    with pytest.raises(Conflict, match="already filled"):
        world.engine.preview_cancel(filled.conf_num, acct, "B")
    with pytest.raises(NotFound):
        world.engine.cancel(placed.conf_num, "OTHER", "B")


def test_cancel_of_a_partially_filled_order_warns_and_keeps_the_fill(world: World) -> None:
    acct = world.account("E2", cash="500000")
    placed = place(world, eq(acct, "B", 1200, "L", limit_price=101))
    (detail,) = world.engine.preview_cancel(placed.conf_num, acct, "B").cancel_preview_detail
    assert (detail.exec_qty, detail.remaining_qty) == (500, 700)
    assert "partially filled: 500 of 1,200" in detail.order_confirm_msgs[0]
    world.engine.cancel(placed.conf_num, acct, "B")
    after = status(world, placed.conf_num)
    assert (after.status, after.qty_exec, after.status_desc) == (
        OrderStatus.CANCELED,
        500,
        "Canceled after 500 of 1,200 filled",
    )
    assert tick(world, AAPL=100.0) == 0
    assert world.ledger.positions(acct)[0].quantity == 500


# --- replace --------------------------------------------------------------------------------------------------------


def test_cancel_replace_is_atomic(world: World) -> None:
    acct = world.account("F1", cash="100000")
    old = place(world, eq(acct, "B", 10, "L", limit_price=90))
    replace = ReplaceOrder(orig_conf_num=old.conf_num, order=eq(acct, "B", 20, "L", limit_price=91))
    preview = world.engine.preview_replace(replace)
    world.events.clear()
    new = world.engine.place_replace(replace, preview.conf_num)
    assert new.status is OrderStatus.OPEN
    assert [(e.event_type, e.desc["conf_num"], e.desc["status"]) for e in world.events] == [
        ("ORDER_UPDATED", new.conf_num, "OPEN"),
        ("ORDER_REPLACED", old.conf_num, "REPLACED"),
    ]
    old_order = world.engine.order_detail(old.conf_num, acct).orders[0]
    assert old_order.status_detail.status is OrderStatus.REPLACED
    assert old_order.id_detail.replaced_by == new.conf_num
    working = [o for o in world.engine.order_status(acct) if o.status_detail.status.is_working]
    assert [(o.id_detail.conf_num, o.order_detail.qty, o.order_detail.limit_price) for o in working] == [
        (new.conf_num, 20, 91.0)
    ]
    again = ReplaceOrder(orig_conf_num=old.conf_num, order=eq(acct, "B", 5, "L", limit_price=91))
    assert reason_of(lambda: world.engine.preview_replace(again)).reason == "ORDER_NOT_REPLACEABLE"
    other = ReplaceOrder(orig_conf_num=new.conf_num, order=eq(acct, "S", 5, "L", limit_price=91))
    assert reason_of(lambda: world.engine.preview_replace(other)).reason == "REPLACE_MISMATCH"


def test_replace_rejected_at_place_when_the_order_filled_meanwhile(world: World) -> None:
    acct = world.account("F2", cash="100000")
    old = place(world, eq(acct, "B", 10, "L", limit_price=95))
    replace = ReplaceOrder(orig_conf_num=old.conf_num, order=eq(acct, "B", 10, "L", limit_price=96))
    preview = world.engine.preview_replace(replace)
    tick(world, AAPL=94.0)
    error = reason_of(lambda: world.engine.place_replace(replace, preview.conf_num))
    assert error.reason == "ORDER_NOT_REPLACEABLE"
    assert status(world, preview.conf_num).status is OrderStatus.REJECTED
    assert world.ledger.positions(acct)[0].quantity == 10


def test_replaceable_ind_says_exactly_which_orders_a_replace_accepts(world: World) -> None:
    acct = world.account("F3", cash="100000")
    world.engine.accept_trade_agreement(acct, "MULTI_LEG_OPTIONS")
    equity = place(world, eq(acct, "B", 10, "L", limit_price=90)).conf_num
    option = place_option(world, opt(acct, CALL, "BC", 1, "L", limit_price=1.0)).conf_num
    spread_order = MultiLegOptionOrder(
        acct_num=acct,
        underlying="AAPL",
        legs=[MultiLegOptionLeg(symbol=CALL, action="BO", qty=1), MultiLegOptionLeg(symbol=C120, action="SO", qty=1)],
        net_price=0.50,
        debit_credit="DB",
        tif="G",
    )
    spread = world.engine.place_multileg(spread_order, world.engine.preview_multileg(spread_order).conf_num).conf_num
    oto = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OTO",
        legs=[leg("B", 10, "L", limit_price=90), leg("S", 10, "L", limit_price=120, tif="G")],
    )
    primary, waiting = place_conditional(world, oto).conf_nums
    filled = place(world, eq(acct, "B", 1)).conf_num
    orders = {o.id_detail.conf_num: o for o in world.engine.order_status(acct)}
    flags = {conf: (o.status_detail.cancelable_ind, o.status_detail.replaceable_ind) for conf, o in orders.items()}
    assert flags == {
        equity: (True, True),
        option: (True, False),  # a single-leg option order: cancel and place anew
        spread: (True, False),  # a multi-leg order likewise
        primary: (True, True),  # conditional equity legs can be replaced, waiting or working
        waiting: (True, True),
        filled: (False, False),
    }

    def replace_outcome(conf: str) -> str:
        detail = orders[conf].order_detail
        if detail.security_type == "EQUITY":
            limit = (detail.limit_price or 100.0) + 1
            new = eq(acct, detail.action, detail.qty, "L", symbol=detail.symbol, limit_price=limit)
        else:
            new = eq(acct, "B", 1, "L", limit_price=90)
        try:
            world.engine.preview_replace(ReplaceOrder(orig_conf_num=conf, order=new))
        except OrderRejected as exc:
            return exc.reason
        return "ACCEPTED"

    outcomes = {conf: replace_outcome(conf) for conf in orders}
    assert outcomes == {conf: "ACCEPTED" if flag[1] else "ORDER_NOT_REPLACEABLE" for conf, flag in flags.items()}


def test_an_option_symbol_in_any_spelling_trades_the_one_position(world: World) -> None:
    acct = world.account("F4", cash="100000")
    bought = place_option(world, opt(acct, "-aapl261218c110.00", "BC", 2))
    assert status(world, bought.conf_num).status is OrderStatus.FILLED
    assert world.engine.order_detail(bought.conf_num, acct).orders[0].order_detail.symbol == CALL
    assert [(p.symbol, p.quantity) for p in world.ledger.positions(acct)] == [(CALL, 2)]
    place_option(world, opt(acct, CALL, "SC", 2))  # the compact spelling closes what the other one opened
    assert world.ledger.positions(acct) == []


# --- conditional orders --------------------------------------------------------------------------------------------


def test_oto_triggers_the_second_leg_when_the_first_fills(world: World) -> None:
    acct = world.account("G1", cash="100000")
    order = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OTO",
        legs=[leg("B", 10, "L", limit_price=95), leg("S", 10, "L", limit_price=110, tif="G")],
    )
    preview = world.engine.preview_conditional(order)
    assert len(preview.conf_nums) == 2 and len(set(preview.conf_nums)) == 2
    placed = world.engine.place_conditional(order, preview.conf_nums)
    first, second = preview.conf_nums
    child = status(world, second)
    assert (child.status, child.cancelable_ind) == (OrderStatus.PENDING_TRIGGER, True)
    assert world.engine.order_detail(second, acct).orders[0].id_detail.parent_conf_num == first
    assert placed.conf_nums == preview.conf_nums
    tick(world, AAPL=94.0)
    assert status(world, first).status is OrderStatus.FILLED
    assert status(world, second).status is OrderStatus.OPEN
    assert any(e.desc.get("event") == "TRIGGERED" for e in world.events)
    tick(world, AAPL=110.5)
    assert status(world, second).status is OrderStatus.FILLED
    assert world.ledger.positions(acct) == []


def test_canceling_an_oto_primary_cancels_the_waiting_leg(world: World) -> None:
    acct = world.account("G2", cash="100000")
    order = ConditionalOrder(
        acct_num=acct, cond_order_type_code="OTO", legs=[leg("B", 10, "L", limit_price=95), leg("S", 10)]
    )
    placed = place_conditional(world, order)
    world.events.clear()
    result = world.engine.cancel(placed.conf_nums[0], acct, "B")
    assert [d.conf_num for d in result.cancel_confirm_detail] == placed.conf_nums
    assert world.types() == ["ORDER_CANCELED", "ORDER_CANCELED"]


def test_oco_partial_fill_reduces_the_other_leg_and_a_full_fill_cancels_it(world: World) -> None:
    acct = world.account("G3", cash="100000")
    place(world, eq(acct, "B", 100))
    order = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OCO",
        legs=[leg("S", 100, "L", limit_price=110, tif="G"), leg("S", 100, "S", stop_price=90, tif="G")],
    )
    placed = place_conditional(world, order)
    target, stop = placed.conf_nums
    assert status(world, stop).status is OrderStatus.OPEN
    tick(world, AAPL=(110.5, 60))
    assert (status(world, target).qty_exec, status(world, stop).qty) == (60, 40)
    world.events.clear()
    tick(world, AAPL=(110.5, 500))
    assert status(world, target).status is OrderStatus.FILLED
    assert status(world, stop).status is OrderStatus.CANCELED
    cancel = next(e for e in world.events if e.event_type == "ORDER_CANCELED")
    assert cancel.desc["conf_num"] == stop and "OCO" in cancel.desc["reason"]
    assert world.ledger.positions(acct) == []


def test_oco_sells_claim_the_shares_once(world: World) -> None:
    acct = world.account("G4", cash="100000")
    place(world, eq(acct, "B", 100))
    order = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OCO",
        legs=[leg("S", 100, "L", limit_price=110), leg("S", 100, "S", stop_price=90)],
    )
    placed = place_conditional(world, order)
    error = reason_of(lambda: world.engine.preview_equity(eq(acct, "S", 1)))
    assert error.reason == "INSUFFICIENT_POSITION" and "100 are already in open orders" in error.message
    world.engine.cancel(placed.conf_nums[1], acct, "S")  # one leg cancels the pair
    assert status(world, placed.conf_nums[0]).status is OrderStatus.CANCELED


def test_otoco_bracket_exits_by_stop(world: World) -> None:
    acct = world.account("G5", cash="100000")
    order = ConditionalOrder(
        acct_num=acct,
        cond_order_type_code="OTOCO",
        legs=[
            leg("B", 100, "L", limit_price=95, tif="G"),
            leg("S", 100, "L", limit_price=110, tif="G"),
            leg("S", 100, "S", stop_price=90, tif="G"),
        ],
    )
    confs = world.engine.preview_conditional(order).conf_nums
    # The upstream SDK sends the first n-1 conf_nums of the preview; they name the same order.
    entry, target, stop = world.engine.place_conditional(order, confs[:2]).conf_nums
    assert [entry, target, stop] == confs
    assert {status(world, c).status for c in (target, stop)} == {OrderStatus.PENDING_TRIGGER}
    tick(world, AAPL=94.0)
    assert {status(world, c).status for c in (target, stop)} == {OrderStatus.OPEN}
    world.events.clear()
    tick(world, AAPL=89.5)
    assert (status(world, stop).status, status(world, stop).avg_exec_price) == (OrderStatus.FILLED, 89.49)
    assert status(world, target).status is OrderStatus.CANCELED
    assert world.types()[:4] == ["ORDER_UPDATED", "ORDER_FILL", "ORDER_CANCELED", "POSITION_CHANGED"]
    assert world.ledger.positions(acct) == []
    assert [o.id_detail.conf_num for o in world.engine.order_detail(entry, acct).orders] == [entry, target, stop]


def test_conditional_replace_swaps_a_waiting_leg(world: World) -> None:
    acct = world.account("G6", cash="100000")
    legs = [
        leg("B", 100, "L", limit_price=95, tif="G"),
        leg("S", 100, "L", limit_price=110, tif="G"),
        leg("S", 100, "S", stop_price=90, tif="G"),
    ]
    order = ConditionalOrder(acct_num=acct, cond_order_type_code="OTOCO", legs=legs)
    entry, target, stop = place_conditional(world, order).conf_nums
    new_legs = [legs[0], leg("S", 100, "L", limit_price=112, tif="G"), legs[2]]
    replace = ConditionalReplace(
        orig_conf_nums=[target], order=ConditionalOrder(acct_num=acct, cond_order_type_code="OTOCO", legs=new_legs)
    )
    preview = world.engine.preview_conditional_replace(replace)
    placed = world.engine.place_conditional_replace(replace, preview.conf_nums)
    new_target = placed.conf_num
    assert status(world, target).status is OrderStatus.REPLACED
    assert status(world, new_target).status is OrderStatus.PENDING_TRIGGER
    tick(world, AAPL=94.0)
    assert status(world, new_target).status is OrderStatus.OPEN
    tick(world, AAPL=112.5)
    assert status(world, new_target).avg_exec_price == 112.49
    assert status(world, stop).status is OrderStatus.CANCELED
    bad = ConditionalReplace(
        orig_conf_nums=[entry], order=ConditionalOrder(acct_num=acct, cond_order_type_code="OTO", legs=new_legs[:2])
    )
    assert reason_of(lambda: world.engine.preview_conditional_replace(bad)).reason in (
        "REPLACE_MISMATCH",
        "ORDER_NOT_REPLACEABLE",
    )


# --- staged orders ------------------------------------------------------------------------------------------------


def test_staged_orders_are_saved_listed_and_deleted(world: World) -> None:
    acct = world.account("H1", cash="1000")
    assert world.engine.staged_orders().staged_orders is None
    saved = world.engine.save_staged(StagedOrderDraft(acct_num=acct, description="buy the dip", order={"qty": 5}))
    assert saved.is_success and saved.stage_id
    (staged,) = world.engine.staged_orders().staged_orders or []
    assert (staged.stage_id, staged.order, staged.description) == (saved.stage_id, {"qty": 5}, "buy the dip")
    assert world.engine.delete_staged(saved.stage_id).is_success
    gone = world.engine.delete_staged(saved.stage_id)
    assert not gone.is_success and gone.messages[0].severity == "ERROR"
    bad = world.engine.save_staged(StagedOrderDraft(acct_num="NOPE", order={"qty": 1}))
    assert not bad.is_success and "NOPE" in bad.messages[0].message


# --- rejections and preview checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "reason", "text"),
    [
        (dict(action="B", qty=500), "INSUFFICIENT_BUYING_POWER", "Insufficient buying power"),
        (dict(action="B", qty=1, symbol="ZZZZ"), "UNKNOWN_SYMBOL", "Unknown symbol ZZZZ"),
        (dict(action="B", qty=1.00005), "INVALID_QUANTITY", "in steps of 0.0001 share"),
        (dict(action="B", qty=1.5, pt="S", stop_price=101), "INVALID_QUANTITY", "market (M) and limit (L) orders only"),
        (dict(action="B", qty=0.5, tif=TimeInForce.GTC), "INVALID_QUANTITY", "day (D) orders only"),
        (dict(action="S", qty=11), "INSUFFICIENT_POSITION", "at most 10 AAPL"),
        (dict(action="B", qty=1, pt="L", limit_price=600), "PRICE_OUT_OF_BOUNDS", "too far from the market"),
        (dict(action="B", qty=1, pt="S", stop_price=99), "INVALID_STOP_PRICE", "above the last price"),
        (dict(action="B", qty=1, symbol=CALL), "WRONG_SECURITY_TYPE", "option"),
    ],
)
def test_rejections_have_stable_reasons_and_clear_messages(
    world: World, order: dict[str, Any], reason: str, text: str
) -> None:
    acct = world.account("R1", margin=False, level=2, cash="2000")
    world.fill(acct, "AAPL", 10, "100")
    error = reason_of(lambda: world.engine.preview_equity(eq(acct, **order)))
    assert error.reason == reason and error.details["reason"] == reason
    assert text in error.message


def test_a_sale_refused_for_want_of_fractional_shares_says_how_many_as_people_write_them(world: World) -> None:
    acct = world.account("R3", margin=False, level=2, cash="2000")
    world.fill(acct, "AAPL", Decimal("2.5"), "100")
    assert place(world, eq(acct, "S", 0.5, "L", limit_price=500)).status is OrderStatus.OPEN
    error = reason_of(lambda: world.engine.preview_equity(eq(acct, "S", 2.5)))
    assert error.reason == "INSUFFICIENT_POSITION" and error.details["available"] == 2.0
    assert error.message.startswith("You can sell at most 2 AAPL: you hold 2.5 long and 0.5 are already in open")


def test_place_revalidates_and_records_a_rejected_order(world: World) -> None:
    acct = world.account("R2", margin=False, level=2, cash="2000")
    first = eq(acct, "B", 15)
    preview = world.engine.preview_equity(first)
    place(world, eq(acct, "B", 10))  # uses the cash the first preview counted on
    world.events.clear()
    error = reason_of(lambda: world.engine.place_equity(first, preview.conf_num))
    assert error.reason == "INSUFFICIENT_BUYING_POWER"
    rejected_order = status(world, preview.conf_num)
    assert (rejected_order.status, rejected_order.reject_reason) == (OrderStatus.REJECTED, "INSUFFICIENT_BUYING_POWER")
    assert world.types() == ["ORDER_REJECTED"] and world.events[0].desc["reason"] == "INSUFFICIENT_BUYING_POWER"


def test_place_needs_a_matching_unused_preview(world: World) -> None:
    acct = world.account("R3", cash="100000")
    other = world.account("R4", cash="100000")
    order = eq(acct, "B", 10, "L", limit_price=90)
    assert reason_of(lambda: world.engine.place_equity(order, "NOTACONF")).reason == "PREVIEW_NOT_FOUND"
    conf = world.engine.preview_equity(order).conf_num
    changed = reason_of(lambda: world.engine.place_equity(order.model_copy(update={"qty": 11}), conf))
    assert changed.reason == "PREVIEW_MISMATCH" and changed.details["fields"] == ["qty"]
    moved = order.model_copy(update={"acct_num": other})
    assert reason_of(lambda: world.engine.place_equity(moved, conf)).reason == "PREVIEW_ACCOUNT_MISMATCH"
    as_option = opt(acct, CALL, "BC", 1)
    assert reason_of(lambda: world.engine.place_option(as_option, conf)).reason == "PREVIEW_MISMATCH"
    assert world.engine.order_status(acct) == []  # none of those created an order
    world.engine.place_equity(order, conf)
    assert reason_of(lambda: world.engine.place_equity(order, conf)).reason == "PREVIEW_ALREADY_USED"
    assert len(world.engine.order_status(acct)) == 1


def test_conf_nums_are_unique_and_reproducible_under_a_seed(tmp_path: Path) -> None:
    def confs(name: str) -> list[str]:
        clock = ManualClock()
        world = World(tmp_path / name, clock, scripted_market(clock), seed=42)
        acct = world.account("S1", cash="100000")
        return [world.engine.preview_equity(eq(acct, "B", 1)).conf_num for _ in range(20)]

    first = confs("a.db")
    assert len(set(first)) == 20
    assert confs("b.db") == first


def test_order_lookups(world: World) -> None:
    acct = world.account("U1", cash="100000")
    placed = place(world, eq(acct, "B", 10, "L", limit_price=90))
    with pytest.raises(NotFound):
        world.engine.order_detail("ZZZZZZZZ", None)
    with pytest.raises(NotFound):
        world.engine.order_detail(placed.conf_num, "OTHER")
    with pytest.raises(NotFound):
        world.engine.order_status("OTHER")
    order = world.engine.order_detail(placed.conf_num, acct).orders[0]
    assert order.order_detail.security_type == "EQUITY" and order.order_detail.action_desc == "Buy"
    assert [o.id_detail.conf_num for o in world.engine.order_status(None)] == [placed.conf_num]
    world.clock.set_wall(world.clock.now() + timedelta(days=45))
    world.engine.process_market()  # the day order expired; 45 days on it is no longer recent
    assert world.engine.order_status(None) == []
