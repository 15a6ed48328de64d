"""The Broker contract: what every brokerage behind ftdesk must do, whatever its upstream.

Runs against each broker fixture of ``conftest.py`` (paper today; the Fidelity adapter on its fake
upstream servers later). Tests choose accounts and symbols from the broker's own data, so no test knows
which broker it is talking to.
"""

from __future__ import annotations

import asyncio
from datetime import date, timedelta

import pytest

from ftdesk.brokers.base import AccountEventFeed, Broker, QuoteFeed
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import Account, Balance, Position, SecurityType
from ftdesk.domain.market import BarWidth, Quote
from ftdesk.domain.orders import EquityAction, EquityOrder, OrderStatus, PriceType, TimeInForce
from ftdesk.domain.research import AnalyticsLeg, AnalyticsRequest, NoteDraft, NoteUpdate, ScanDefinition
from ftdesk.domain.session import Credentials
from ftdesk.domain.user_data import PriceTriggerDraft, TriggerDirection, WatchlistDraft


async def an_equity_position(broker: Broker) -> tuple[Account, Position]:
    for account in await broker.get_accounts():
        for position in await broker.get_positions(account.acct_num):
            if position.security_type in (SecurityType.EQUITY, SecurityType.ETF) and position.quantity > 0:
                return account, position
    pytest.fail("the broker's accounts hold no equity position to test with")


def test_the_broker_satisfies_the_protocols(broker: Broker) -> None:
    assert isinstance(broker, Broker)
    assert isinstance(broker.quote_feed, QuoteFeed)
    assert isinstance(broker.account_events, AccountEventFeed)
    assert broker.quote_feed.max_symbols_per_message <= 50


async def test_logged_out_calls_need_a_session_and_login_restores_them(
    broker: Broker, credentials: Credentials
) -> None:
    await broker.logout()
    with pytest.raises(e.AuthRequired):
        await broker.get_accounts()
    with pytest.raises(e.AuthRequired):
        await broker.keep_alive()
    await broker.logout()  # idempotent
    session = await broker.login(credentials)
    assert session.username == credentials.username
    assert await broker.get_accounts()
    await broker.keep_alive()


async def test_accounts_are_unique_and_individually_readable(broker: Broker) -> None:
    accounts = await broker.get_accounts()
    assert len({a.acct_num for a in accounts}) == len(accounts) >= 1
    for account in accounts:
        assert await broker.get_account(account.acct_num) == account
    with pytest.raises(e.NotFound):
        await broker.get_account("NO-SUCH-ACCOUNT")


async def test_every_account_read_answers_with_records_of_that_account(broker: Broker) -> None:
    for account in await broker.get_accounts():
        acct = account.acct_num
        balance = await broker.get_balances(acct)
        assert isinstance(balance, Balance) and balance.acct_num == acct
        for position in await broker.get_positions(acct):
            assert position.acct_num == acct
        for txn in await broker.get_transactions(acct, None, None):
            assert txn.acct_num == acct
        assert (await broker.get_options_summary(acct)).acct_num == acct
        for closed in await broker.get_closed_positions(acct, None, None):
            assert closed.acct_num == acct
        for loaned in await broker.get_loaned_securities(acct):
            assert loaned.acct_num == acct
        features = await broker.get_account_features(acct)
        assert [f.acct_num for f in features] == [acct]
        for accrual in await broker.get_accruals(acct):
            assert accrual.acct_num == acct
        for cash_accrual in await broker.get_cash_accruals(acct):
            assert cash_accrual.acct_num == acct
    with pytest.raises(e.NotFound):
        await broker.get_positions("NO-SUCH-ACCOUNT")


async def test_transactions_respect_the_date_range(broker: Broker) -> None:
    for account in await broker.get_accounts():
        everything = await broker.get_transactions(account.acct_num, None, None)
        if len(everything) < 2:
            continue
        dates = sorted(t.date for t in everything)
        start = date.fromisoformat(dates[len(dates) // 2][:10])
        recent = await broker.get_transactions(account.acct_num, start, None)
        assert recent and all(t.date[:10] >= start.isoformat() for t in recent)
        assert len(recent) < len(everything) or dates[0][:10] >= start.isoformat()
        return
    pytest.skip("no account with history")


async def test_open_lots_add_up_to_the_position(broker: Broker) -> None:
    account, position = await an_equity_position(broker)
    lots = await broker.get_open_lots(account.acct_num, position.symbol)
    assert lots and sum(lot.quantity for lot in lots) == pytest.approx(position.quantity)
    tax_lots = await broker.get_tax_lots(account.acct_num, position.symbol)
    assert sum(lot.quantity for lot in tax_lots) == pytest.approx(position.quantity)
    for lot in lots:
        assert lot.term.value in ("LONG", "SHORT")
        assert lot.cost_basis == pytest.approx(lot.cost_per_share * lot.quantity, rel=1e-3)
    assert isinstance(await broker.get_closed_lots(account.acct_num, position.symbol, None, None), list)


async def test_borrow_and_short_insight_data(broker: Broker, today: date) -> None:
    account, position = await an_equity_position(broker)
    htb = await broker.get_hard_to_borrow(account.acct_num, [position.symbol])
    assert [row.symbol for row in htb] == [position.symbol]
    insights = await broker.get_short_insights(account.acct_num, [position.symbol])
    assert [row.symbol for row in insights] == [position.symbol]
    series = await broker.get_short_insight_series(
        account.acct_num, position.symbol, "shortInterest", today - timedelta(days=180), None
    )
    assert series.symbol == position.symbol and series.points
    assert [p.date for p in series.points] == sorted(p.date for p in series.points)


async def test_a_resting_limit_order_lives_through_preview_place_status_and_cancel(broker: Broker) -> None:
    account, position = await an_equity_position(broker)
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
    preview = await broker.preview_equity_order(order)
    assert len(preview.conf_num) == 8 and preview.conf_num.isalnum()
    assert preview.est_cost == pytest.approx(far_below + preview.est_commission + preview.est_fees, abs=0.02)
    placed = await broker.place_equity_order(order, preview.conf_num)
    assert placed.conf_num == preview.conf_num and placed.status is OrderStatus.OPEN

    listed = {o.id_detail.conf_num: o for o in await broker.get_order_status(account.acct_num)}
    assert listed[placed.conf_num].status_detail.cancelable_ind is True
    detail = await broker.get_order_detail(placed.conf_num, account.acct_num)
    assert detail.order is not None and detail.order.id_detail.conf_num == placed.conf_num

    cancel_preview = await broker.preview_cancel(placed.conf_num, account.acct_num, "B")
    assert cancel_preview.is_accepted and cancel_preview.cancel_preview_detail[0].remaining_qty == 1
    cancel = await broker.cancel_order(placed.conf_num, account.acct_num, "B")
    assert cancel.is_accepted
    after = await broker.get_order_detail(placed.conf_num, account.acct_num)
    assert after.order is not None and after.order.status_detail.status is OrderStatus.CANCELED
    assert after.order.status_detail.cancelable_ind is False


async def test_place_without_a_matching_preview_is_refused(broker: Broker) -> None:
    account, position = await an_equity_position(broker)
    order = EquityOrder(
        acct_num=account.acct_num,
        symbol=position.symbol,
        action=EquityAction.BUY,
        qty=1,
        price_type=PriceType.LIMIT,
        limit_price=round(position.last_price * 0.5, 2),
    )
    with pytest.raises(e.BrokerError):
        await broker.place_equity_order(order, "ZZZZZZZZ")
    with pytest.raises(e.BrokerError):
        await broker.preview_equity_order(order.model_copy(update={"symbol": "NOSUCHSYMBOLX"}))


async def test_market_data_for_a_held_symbol(broker: Broker, today: date) -> None:
    _, position = await an_equity_position(broker)
    symbol = position.symbol
    montage = await broker.get_montage(symbol)
    assert montage.symbol == symbol and montage.quotes
    assert all(q.bid <= q.ask for q in montage.quotes)
    chart = await broker.get_chart(symbol, today - timedelta(days=60), None, BarWidth.DAY, False)
    assert chart.bars and [b.date for b in chart.bars] == sorted(b.date for b in chart.bars)
    assert all(b.low <= min(b.open, b.close) <= max(b.open, b.close) <= b.high for b in chart.bars)
    trades = await broker.get_time_and_sales(symbol, 25, None, None, None)
    assert 0 < len(trades.trades) <= 25
    assert (await broker.get_available_markets(symbol)).markets
    with pytest.raises(e.NotFound):
        await broker.get_montage("NOSUCHSYMBOLX")


async def test_option_chain_and_analytics(broker: Broker, optionable_symbol: str) -> None:
    chain = await broker.get_option_chain(optionable_symbol)
    assert chain.symbol == optionable_symbol and chain.expirations
    expiration = chain.expirations[0]
    strike = min(expiration.strikes, key=lambda s: abs(s.strike - chain.underlying_price))
    assert strike.call is not None and strike.put is not None
    assert 0 < strike.call.greeks.delta < 1 and -1 < strike.put.greeks.delta < 0
    analysis = await broker.analyze_position(
        AnalyticsRequest(symbol=optionable_symbol, legs=[AnalyticsLeg(symbol=strike.call.symbol, quantity=1)])
    )
    assert analysis.max_loss is not None and analysis.max_profit is None  # a long call: loss capped, gain open
    assert len(analysis.breakevens) == 1 and analysis.breakevens[0] > strike.strike


async def test_research_calendars_search_and_screener(broker: Broker, optionable_symbol: str, today: date) -> None:
    earnings = await broker.get_earnings([optionable_symbol])
    assert earnings and all(ev.symbol == optionable_symbol for ev in earnings)
    assert isinstance(await broker.get_dividends([optionable_symbol]), list)
    hits = await broker.search_symbols(optionable_symbol)
    assert hits.suggestions[0].symbol == optionable_symbol
    result = await broker.run_screener(ScanDefinition(limit=5))
    assert 0 < len(result.rows) <= 5
    holidays = await broker.get_holiday_calendar(today.year)
    assert holidays and all(h.date.startswith(str(today.year)) for h in holidays)


async def test_notebook_crud(broker: Broker) -> None:
    note = await broker.create_note(NoteDraft(note="Watch the 50-day", symbol="SPY", title="SPY idea"))
    assert note in await broker.get_notes()
    updated = await broker.update_note(note.note_id, NoteUpdate(note="Broke out", title="SPY", old_symbol="SPY"))
    assert updated.note == "Broke out"
    await broker.delete_note(note.note_id, "SPY")
    assert note.note_id not in {n.note_id for n in await broker.get_notes()}
    with pytest.raises(e.NotFound):
        await broker.delete_note(note.note_id, "SPY")


async def test_watchlists_preferences_and_price_triggers(broker: Broker) -> None:
    _, position = await an_equity_position(broker)
    saved = await broker.save_watchlist(WatchlistDraft(name="Contract list", symbols=[position.symbol.lower()]))
    assert saved.symbols == [position.symbol]
    assert saved.watchlist_id in {w.watchlist_id for w in await broker.get_watchlists()}

    assert (await broker.put_preferences({"contract.theme": "dark"}))["contract.theme"] == "dark"
    assert (await broker.get_preferences())["contract.theme"] == "dark"
    assert "contract.theme" not in await broker.delete_preferences(["contract.theme"])

    trigger = await broker.create_price_trigger(
        PriceTriggerDraft(
            symbol=position.symbol, direction=TriggerDirection.ABOVE, price=round(position.last_price * 2, 2)
        )
    )
    assert trigger.trigger_id in {t.trigger_id for t in await broker.get_price_triggers()}
    assert (await broker.subscribe_alerts()).active
    await broker.delete_price_trigger(trigger.trigger_id)
    with pytest.raises(e.NotFound):
        await broker.delete_price_trigger(trigger.trigger_id)


async def test_quote_feed_delivers_subscribed_symbols(broker: Broker) -> None:
    _, position = await an_equity_position(broker)
    connection = await broker.quote_feed.connect()
    try:
        await connection.subscribe([position.symbol])
        messages = connection.messages()
        quote = await asyncio.wait_for(anext(messages), 5)
        assert isinstance(quote, Quote) and quote.symbol == position.symbol and quote.bid <= quote.ask
    finally:
        await connection.close()
    snapshot = await broker.quote_feed.snapshot([position.symbol])
    assert [q.symbol for q in snapshot] == [position.symbol]
