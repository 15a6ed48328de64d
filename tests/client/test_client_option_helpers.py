"""preview_and_place_option and preview_and_place_multileg through a running paper service, async and sync."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ftdesk.client import AsyncClient, Client, MultiLegPreview, OptionPreview, TradingDisabledError, describe_preview
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.orders import LegAction, MultiLegOptionLeg, OrderPlacement, OrderPreview
from tests.api.test_orders_api import option_symbols
from tests.client.test_client_api import individual
from tests.fakes.clock import ManualClock


async def journal(api: AsyncClient, action: str) -> list[dict[str, Any]]:
    """The order journal's entries of one action (preview, place, ...), newest first."""
    entries: list[dict[str, Any]] = await api.request("GET", "/orders/journal")
    return [entry for entry in entries if entry["action"] == action]


async def spread_legs(service: Any, api: AsyncClient, acct: str) -> list[MultiLegOptionLeg]:
    """A MSFT call debit spread (the account holds no MSFT options), after accepting the multi-leg agreement."""
    await api.request("POST", "/orders/trade-agreement", json={"acct_num": acct, "agreement_id": "MULTI_LEG_OPTIONS"})
    low, high, _, _ = await option_symbols(service, "MSFT")
    return [
        MultiLegOptionLeg(symbol=low, action=LegAction.BUY_TO_OPEN, qty=1),
        MultiLegOptionLeg(symbol=high, action=LegAction.SELL_TO_OPEN, qty=1),
    ]


async def test_declined_option_previews_place_nothing_and_dry_run_refuses_the_place(start_service) -> None:
    service = await start_service(clock=ManualClock())
    shown: list[OrderPreview] = []
    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        call, _, bid, _ = await option_symbols(service)
        declined = await api.preview_and_place_option(
            acct, call, "BC", 2, "L", limit_price=round(bid / 2, 2), confirm=lambda p: False, show=shown.append
        )
        legs = await spread_legs(service, api, acct)
        declined_spread = await api.preview_and_place_multileg(
            acct, "MSFT", legs, net_price=0.5, debit_credit="DB", confirm=lambda p: False, show=shown.append
        )
        assert declined is None and declined_spread is None
        assert isinstance(shown[0], OptionPreview) and shown[0].symbol == call and shown[0].qty == 2
        assert isinstance(shown[1], MultiLegPreview) and [leg.symbol for leg in shown[1].legs] == [
            leg.symbol for leg in legs
        ]
        assert [leg.broker_action_desc for leg in shown[1].legs] == ["Buy to Open", "Sell to Open"]
        assert len(await journal(api, "preview")) == 2 and await journal(api, "place") == []
        assert await api.get_order_status(acct) == []

        with pytest.raises(TradingDisabledError) as dry_option:
            await api.preview_and_place_option(acct, call, "BC", 1, confirm=lambda p: True, show=shown.append)
        with pytest.raises(TradingDisabledError) as dry_spread:
            await api.preview_and_place_multileg(
                acct, "MSFT", legs, net_price=0.5, debit_credit="DB", confirm=lambda p: True, show=shown.append
            )
        assert dry_option.value.code == dry_spread.value.code == "LIVE_TRADING_DISABLED"
        refused = await journal(api, "place")
        assert [entry["outcome"] for entry in refused] == ["refused", "refused"]
        assert await api.get_order_status(acct) == [], "nothing was placed"


async def test_an_accepted_option_preview_is_placed_with_its_conf_num(start_service, capsys) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    asked: list[str] = []

    async def confirm(preview: OrderPreview) -> bool:
        asked.append(preview.conf_num)
        return True

    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        call, _, bid, _ = await option_symbols(service)
        limit = round(bid / 2, 2)  # rests: a buy under the market
        placed = await api.preview_and_place_option(
            acct, call, "BC", 2, "L", limit_price=limit, tif="G", confirm=confirm, idempotency_key="opt-1"
        )
        assert isinstance(placed, OrderPlacement)
        printed = capsys.readouterr().out
        assert f"Preview {asked[0]}" in printed and f"Buy Call 2 contracts {call} limit {limit} per share" in printed
        assert "option quote: last" in printed and "est. cost" in printed and "commission" in printed
        (place,) = await journal(api, "place")
        assert place["conf_nums"][0] == asked[0] and place["idempotency_key"] == "opt-1"
        assert place["outcome"] == "accepted"
        (order,) = await api.get_order_status(acct)
        assert order.id_detail.conf_num == placed.conf_num and order.order_detail.symbol == call
        assert order.order_detail.qty == 2


async def test_an_accepted_spread_preview_shows_each_leg_and_is_placed_with_its_conf_num(start_service, capsys) -> None:
    service = await start_service(clock=ManualClock(), live_trading="true")
    asked: list[str] = []

    def confirm(preview: OrderPreview) -> bool:
        asked.append(preview.conf_num)
        return True

    async with AsyncClient(service.base_url, service.api_key) as api:
        await api.login("trader", "paper-pass")
        acct = await individual(api)
        legs = await spread_legs(service, api, acct)
        placed = await api.preview_and_place_multileg(
            acct, "MSFT", legs, net_price=0.05, debit_credit="DB", confirm=confirm
        )
        assert isinstance(placed, OrderPlacement)
        printed = capsys.readouterr().out
        assert f"Preview {asked[0]}" in printed and "MSFT 2-leg option order, Net Debit limit 0.05 net" in printed
        # Each leg with the broker's own code and words for it (paper's, here), from the service's answer.
        assert f"leg 1: buy to open 1 {legs[0].symbol} (broker understood: BO Buy to Open)" in printed
        assert f"leg 2: sell to open 1 {legs[1].symbol} (broker understood: SO Sell to Open)" in printed
        assert "underlying MSFT quote: last" in printed and "est. cost" in printed
        (place,) = await journal(api, "place")
        assert place["conf_nums"][0] == asked[0] and place["outcome"] == "accepted"
        (order,) = await api.get_order_status(acct)
        assert order.id_detail.conf_num == placed.conf_num
        assert [leg.symbol for leg in order.order_detail.legs] == [leg.symbol for leg in legs]


async def test_the_sync_client_declines_places_and_refuses_option_orders_alike(start_service) -> None:
    live = await start_service(clock=ManualClock(), live_trading="true")
    dry = await start_service(clock=ManualClock())
    async with AsyncClient(live.base_url, live.api_key) as api:
        await api.login("trader", "paper-pass")
        call, _, bid, _ = await option_symbols(live)
        legs = await spread_legs(live, api, await individual(api))
    limit = round(bid / 2, 2)

    def script() -> tuple[OrderPlacement | None, OrderPlacement | None, OrderPlacement | None, list[str], str]:
        with Client(live.base_url, live.api_key) as api:
            acct = next(a.acct_num for a in api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
            declined = api.preview_and_place_option(
                acct, call, "BC", 1, "L", limit_price=limit, confirm=lambda p: False, show=lambda p: None
            )
            option = api.preview_and_place_option(
                acct, call, "BC", 1, "L", limit_price=limit, confirm=lambda p: True, show=lambda p: None
            )
            spread = api.preview_and_place_multileg(
                acct, "MSFT", legs, net_price=0.05, debit_credit="DB", confirm=lambda p: True, show=lambda p: None
            )
            placed = [order.id_detail.conf_num for order in api.get_order_status(acct)]
        with Client(dry.base_url, dry.api_key) as api:
            api.login("trader", "paper-pass")
            acct = next(a.acct_num for a in api.list_accounts() if a.acct_type is AccountType.INDIVIDUAL)
            try:
                api.preview_and_place_option(acct, call, "BC", 1, confirm=lambda p: True, show=lambda p: None)
                code = "placed"
            except TradingDisabledError as exc:
                code = exc.code
        return declined, option, spread, placed, code

    # The services run on this test's loop: the blocking client runs in a worker thread.
    declined, option, spread, placed, code = await asyncio.to_thread(script)
    assert declined is None and option is not None and spread is not None
    assert sorted(placed) == sorted([option.conf_num, spread.conf_num])
    assert code == "LIVE_TRADING_DISABLED"


def test_a_spread_preview_from_a_service_that_lists_no_legs_shows_the_legs_sent_without_broker_words() -> None:
    answer = {
        "conf_num": "C1",
        "acct_num": "X1",
        "symbol": "MSFT",
        "action": "DB",
        "action_desc": "Net Debit",
        "qty": 1,
        "price_type": "L",
        "limit_price": 0.5,
        "tif": "D",
        "est_commission": 1.3,
        "est_cost": 51.3,
        "est_proceeds": 0,
    }
    sent = [
        {"symbol": "MSFT261218C400", "action": "BO", "qty": 1},
        {"symbol": "MSFT261218C410", "action": "SO", "qty": 1},
    ]
    preview = MultiLegPreview.model_validate({"legs": sent, **answer})
    described = describe_preview(preview)
    assert "leg 1: buy to open 1 MSFT261218C400\n" in described
    assert "leg 2: sell to open 1 MSFT261218C410\n" in described and "broker understood" not in described
