"""The assembled paper broker: ticks work orders and alerts, events flow, the world survives restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import SecretStr

from ftdesk.brokers.paper.broker import PaperBroker, paper_db_path, reset_world
from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain import errors as e
from ftdesk.domain.orders import EquityAction, EquityOrder, OrderStatus, PriceType, TimeInForce
from ftdesk.domain.session import Credentials
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerDirection
from tests.fakes.clock import ManualClock

CREDS = Credentials(username="trader", password=SecretStr("pw"))


async def started(db: Path, clock: ManualClock, seed: int | None = 11, **config: object) -> PaperBroker:
    broker = PaperBroker(PaperConfig(db_path=db, seed=seed, **config), clock)  # type: ignore[arg-type]
    await broker.start()
    await broker.session.login(CREDS)
    return broker


async def first_margin_account(broker: PaperBroker) -> str:
    accounts = await broker.accounts.get_accounts()
    return next(a.acct_num for a in accounts if a.margin_ind and int(a.option_level) >= 3)


async def test_fresh_world_has_three_kinds_of_accounts_with_data(tmp_path: Path) -> None:
    broker = await started(tmp_path / "w.sqlite3", ManualClock())
    try:
        accounts = await broker.accounts.get_accounts()
        kinds = {a.acct_type.value for a in accounts}
        assert len(accounts) >= 3 and {"INDIVIDUAL", "IRA", "JOINT"} <= kinds
        for account in accounts:
            assert await broker.accounts.get_transactions(account.acct_num, None, None)
            assert (await broker.accounts.get_balances(account.acct_num)).net_worth > 0
    finally:
        await broker.close()


async def test_a_marketable_order_placed_now_fills_and_emits_events_in_order(tmp_path: Path) -> None:
    clock = ManualClock()
    broker = await started(tmp_path / "w.sqlite3", clock)
    events = await broker.account_events.connect()
    try:
        acct = await first_margin_account(broker)
        cash_before = (await broker.accounts.get_balances(acct)).cash
        order = EquityOrder(acct_num=acct, symbol="KO", action=EquityAction.BUY, qty=10, price_type=PriceType.MARKET)
        preview = await broker.orders.preview_equity_order(order)
        placed = await broker.orders.place_equity_order(order, preview.conf_num)
        detail = (await broker.orders.get_order_detail(placed.conf_num, acct)).order
        assert detail is not None and detail.status_detail.status is OrderStatus.FILLED
        fill_price = detail.status_detail.avg_exec_price
        assert fill_price is not None
        cash_after = (await broker.accounts.get_balances(acct)).cash
        assert cash_after == pytest.approx(cash_before - 10 * fill_price, abs=0.01)
        stream = events.events()
        seen = [await asyncio.wait_for(anext(stream), 2) for _ in range(3)]
        types = [ev.event_type for ev in seen]
        assert "ORDER_FILL" in types and all(ev.desc.get("acct_num") == acct for ev in seen)
    finally:
        await events.close()
        await broker.close()


async def test_the_tick_loop_fills_a_resting_order_when_the_market_reaches_it(tmp_path: Path) -> None:
    clock = ManualClock()
    broker = await started(tmp_path / "w.sqlite3", clock, tick_interval=1.0)
    try:
        acct = await first_margin_account(broker)
        last = broker.market.quote("SPY").last
        order = EquityOrder(
            acct_num=acct,
            symbol="SPY",
            action=EquityAction.BUY,
            qty=1,
            price_type=PriceType.LIMIT,
            limit_price=round(last * 0.9995, 2),
            tif=TimeInForce.GTC,
        )
        placed = await broker.orders.place_equity_order(
            order, (await broker.orders.preview_equity_order(order)).conf_num
        )
        for _ in range(24 * 60):  # up to a simulated day, one minute per step
            await clock.advance(60)
            status = (await broker.orders.get_order_detail(placed.conf_num, acct)).order
            assert status is not None
            if status.status_detail.status is OrderStatus.FILLED:
                break
        else:
            pytest.fail("SPY never traded 0.05% lower in a simulated day")
        assert status.status_detail.avg_exec_price is not None
        assert status.status_detail.avg_exec_price <= order.limit_price
    finally:
        await broker.close()


async def test_price_alerts_fire_from_the_tick_loop(tmp_path: Path) -> None:
    clock = ManualClock()
    broker = await started(tmp_path / "w.sqlite3", clock, tick_interval=1.0)
    events = await broker.account_events.connect()
    try:
        last = broker.market.quote("TSLA").last
        trigger = await broker.user_data.create_price_trigger(
            PriceTriggerDraft(symbol="TSLA", direction=TriggerDirection.ABOVE, price=round(last * 1.001, 2))
        )
        stream = events.events()
        for _ in range(24 * 60):
            await clock.advance(60)
            if (await broker.user_data.get_price_triggers())[0].status.value == "TRIGGERED":
                break
        else:
            pytest.fail("TSLA never rose 0.1% in a simulated day")
        event = await asyncio.wait_for(anext(stream), 2)
        assert (event.event_type, event.upstream_code) == ("PRICE_ALERT_ABOVE", "TRPA")
        assert event.desc["trigger_id"] == trigger.trigger_id
    finally:
        await events.close()
        await broker.close()


async def test_the_world_and_its_prices_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    db = tmp_path / "w.sqlite3"
    broker = await started(db, clock, seed=None)
    acct = await first_margin_account(broker)
    order = EquityOrder(
        acct_num=acct,
        symbol="MSFT",
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=200.00,
        tif=TimeInForce.GTC,
    )
    placed = await broker.orders.place_equity_order(order, (await broker.orders.preview_equity_order(order)).conf_num)
    positions = await broker.accounts.get_positions(acct)
    quote = broker.market.quote("MSFT")
    await broker.close()

    again = await started(db, clock, seed=None)
    try:
        assert await again.accounts.get_positions(acct) == positions
        assert again.market.quote("MSFT") == quote, "the world's seed is kept, so prices continue"
        detail = (await again.orders.get_order_detail(placed.conf_num, acct)).order
        assert detail is not None and detail.status_detail.status is OrderStatus.OPEN
        second = await again.orders.preview_equity_order(order)
        assert second.conf_num != placed.conf_num
    finally:
        await again.close()


async def test_logout_ends_quote_connections_and_calls_need_a_new_login(tmp_path: Path) -> None:
    broker = await started(tmp_path / "w.sqlite3", ManualClock())
    try:
        connection = await broker.quote_feed.connect()
        await connection.subscribe(["AAPL"])
        await broker.session.logout()
        messages = [m async for m in connection.messages()]
        assert len(messages) <= 1
        with pytest.raises(e.AuthRequired):
            await broker.quote_feed.connect()
    finally:
        await broker.close()


async def test_reset_world_starts_a_fresh_world(tmp_path: Path) -> None:
    db = paper_db_path(tmp_path)
    broker = await started(db, ManualClock())
    acct = await first_margin_account(broker)
    await broker.user_data.put_preferences({"theme": "dark"})
    await broker.close()
    assert {p.name for p in reset_world(db)} >= {"paper.sqlite3"}
    assert not db.exists()
    fresh = await started(db, ManualClock())
    try:
        assert "theme" not in await fresh.user_data.get_preferences()
        assert acct in {a.acct_num for a in await fresh.accounts.get_accounts()}  # same seed, same account numbers
    finally:
        await fresh.close()
