"""The public fields issue 15 added mean the same on every broker: the broker's words on a preview, percent alerts."""

from __future__ import annotations

import pytest

from ftdesk.brokers.base import Broker
from ftdesk.domain import errors as e
from ftdesk.domain.orders import EquityAction, EquityOrder, PriceType
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerBasis, TriggerDirection
from tests.contract.test_broker_contract import an_equity_position


async def test_a_preview_shows_what_the_broker_understood(broker: Broker) -> None:
    account, position = await an_equity_position(broker)
    order = EquityOrder(
        acct_num=account.acct_num,
        symbol=position.symbol,
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=round(max(position.last_price * 0.5, 0.01), 2),
    )
    preview = await broker.preview_equity_order(order)
    assert preview.action == "B" and preview.position_intent is None
    assert preview.broker_action_code == "B" and preview.broker_action_desc == "Buy"


async def test_a_percent_alert_is_listed_as_a_percent_and_deleted(broker: Broker) -> None:
    _, position = await an_equity_position(broker)
    draft = PriceTriggerDraft(
        symbol=position.symbol, direction=TriggerDirection.BELOW, price=50, basis=TriggerBasis.PERCENT
    )
    made = await broker.create_price_trigger(draft)
    assert (made.basis, made.price, made.direction) == (TriggerBasis.PERCENT, 50.0, TriggerDirection.BELOW)
    listed = {t.trigger_id: t for t in await broker.get_price_triggers()}
    assert listed[made.trigger_id].basis is TriggerBasis.PERCENT and listed[made.trigger_id].price == 50.0
    await broker.delete_price_trigger(made.trigger_id)
    with pytest.raises(e.NotFound):
        await broker.delete_price_trigger(made.trigger_id)
