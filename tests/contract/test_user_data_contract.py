"""The user-data group's contract (``broker.user_data``): watchlists, preferences, price triggers and alerts."""

from __future__ import annotations

import pytest

from ftdesk.brokers.capabilities import UserDataApi
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerBasis, TriggerDirection, WatchlistDraft


async def test_watchlists_preferences_and_price_triggers(
    user_data: UserDataApi, equity_position: tuple[Account, Position]
) -> None:
    _, position = equity_position
    saved = await user_data.save_watchlist(WatchlistDraft(name="Contract list", symbols=[position.symbol.lower()]))
    assert saved.symbols == [position.symbol]
    assert saved.watchlist_id in {w.watchlist_id for w in await user_data.get_watchlists()}

    assert (await user_data.put_preferences({"contract.theme": "dark"}))["contract.theme"] == "dark"
    assert (await user_data.get_preferences())["contract.theme"] == "dark"
    assert "contract.theme" not in await user_data.delete_preferences(["contract.theme"])

    trigger = await user_data.create_price_trigger(
        PriceTriggerDraft(
            symbol=position.symbol, direction=TriggerDirection.ABOVE, price=round(position.last_price * 2, 2)
        )
    )
    assert trigger.trigger_id in {t.trigger_id for t in await user_data.get_price_triggers()}
    assert (await user_data.subscribe_alerts()).active
    await user_data.delete_price_trigger(trigger.trigger_id)
    with pytest.raises(e.NotFound):
        await user_data.delete_price_trigger(trigger.trigger_id)


async def test_a_percent_alert_is_listed_as_a_percent_and_deleted(
    user_data: UserDataApi, equity_position: tuple[Account, Position]
) -> None:
    _, position = equity_position
    draft = PriceTriggerDraft(
        symbol=position.symbol, direction=TriggerDirection.BELOW, price=50, basis=TriggerBasis.PERCENT
    )
    made = await user_data.create_price_trigger(draft)
    assert (made.basis, made.price, made.direction) == (TriggerBasis.PERCENT, 50.0, TriggerDirection.BELOW)
    listed = {t.trigger_id: t for t in await user_data.get_price_triggers()}
    assert listed[made.trigger_id].basis is TriggerBasis.PERCENT and listed[made.trigger_id].price == 50.0
    await user_data.delete_price_trigger(made.trigger_id)
    with pytest.raises(e.NotFound):
        await user_data.delete_price_trigger(made.trigger_id)
