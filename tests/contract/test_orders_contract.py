"""The orders group's contract (``broker.orders``): preview, place, status, detail and cancel on every broker."""

from __future__ import annotations

import pytest

from ftdesk.brokers.capabilities import OrdersApi
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.orders import EquityAction, EquityOrder, OrderStatus, PriceType, TimeInForce


async def test_a_resting_limit_order_lives_through_preview_place_status_and_cancel(
    orders: OrdersApi, equity_position: tuple[Account, Position]
) -> None:
    account, position = equity_position
    far_below = round(max(position.last_price * 0.5, 0.01), 2)
    order = EquityOrder(
        acct_num=account.acct_num,
        symbol=position.symbol,
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=far_below,
        tif=TimeInForce.GTC,
    )
    preview = await orders.preview_equity_order(order)
    assert len(preview.conf_num) == 8 and preview.conf_num.isalnum()
    assert preview.est_cost == pytest.approx(far_below + preview.est_commission + preview.est_fees, abs=0.02)
    placed = await orders.place_equity_order(order, preview.conf_num)
    assert placed.conf_num == preview.conf_num and placed.status is OrderStatus.OPEN

    listed = {o.id_detail.conf_num: o for o in await orders.get_order_status(account.acct_num)}
    assert listed[placed.conf_num].status_detail.cancelable_ind is True
    detail = await orders.get_order_detail(placed.conf_num, account.acct_num)
    assert detail.order is not None and detail.order.id_detail.conf_num == placed.conf_num

    cancel_preview = await orders.preview_cancel(placed.conf_num, account.acct_num, "B")
    assert cancel_preview.is_accepted and cancel_preview.cancel_preview_detail[0].remaining_qty == 1
    cancel = await orders.cancel_order(placed.conf_num, account.acct_num, "B")
    assert cancel.is_accepted
    after = await orders.get_order_detail(placed.conf_num, account.acct_num)
    assert after.order is not None and after.order.status_detail.status is OrderStatus.CANCELED
    assert after.order.status_detail.cancelable_ind is False


async def test_place_without_a_matching_preview_is_refused(
    orders: OrdersApi, equity_position: tuple[Account, Position]
) -> None:
    account, position = equity_position
    order = EquityOrder(
        acct_num=account.acct_num,
        symbol=position.symbol,
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=round(position.last_price * 0.5, 2),
    )
    with pytest.raises(e.BrokerError):
        await orders.place_equity_order(order, "ZZZZZZZZ")
    with pytest.raises(e.BrokerError):
        await orders.preview_equity_order(order.model_copy(update={"symbol": "NOSUCHSYMBOLX"}))


async def test_a_preview_shows_what_the_broker_understood(
    orders: OrdersApi, equity_position: tuple[Account, Position]
) -> None:
    account, position = equity_position
    order = EquityOrder(
        acct_num=account.acct_num,
        symbol=position.symbol,
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=round(max(position.last_price * 0.5, 0.01), 2),
    )
    preview = await orders.preview_equity_order(order)
    assert preview.action == "B" and preview.position_intent is None
    assert preview.broker_action_code == "B" and preview.broker_action_desc == "Buy"
