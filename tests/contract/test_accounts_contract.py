"""The accounts group's contract (``broker.accounts``): accounts, balances, positions, history, lots, borrow."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from ftdesk.brokers.capabilities import AccountsApi
from ftdesk.domain import errors as e
from ftdesk.domain.accounts import Account, Balance, Position


async def test_accounts_are_unique_and_individually_readable(accounts: AccountsApi) -> None:
    listed = await accounts.get_accounts()
    assert len({a.acct_num for a in listed}) == len(listed) >= 1
    for account in listed:
        assert await accounts.get_account(account.acct_num) == account
    with pytest.raises(e.NotFound):
        await accounts.get_account("NO-SUCH-ACCOUNT")


async def test_every_account_read_answers_with_records_of_that_account(accounts: AccountsApi) -> None:
    for account in await accounts.get_accounts():
        acct = account.acct_num
        balance = await accounts.get_balances(acct)
        assert isinstance(balance, Balance) and balance.acct_num == acct
        for position in await accounts.get_positions(acct):
            assert position.acct_num == acct
        for txn in await accounts.get_transactions(acct, None, None):
            assert txn.acct_num == acct
        assert (await accounts.get_options_summary(acct)).acct_num == acct
        for closed in await accounts.get_closed_positions(acct, None, None):
            assert closed.acct_num == acct
        for loaned in await accounts.get_loaned_securities(acct):
            assert loaned.acct_num == acct
        features = await accounts.get_account_features(acct)
        assert [f.acct_num for f in features] == [acct]
        for accrual in await accounts.get_accruals(acct):
            assert accrual.acct_num == acct
        for cash_accrual in await accounts.get_cash_accruals(acct):
            assert cash_accrual.acct_num == acct
    with pytest.raises(e.NotFound):
        await accounts.get_positions("NO-SUCH-ACCOUNT")


async def test_transactions_respect_the_date_range(accounts: AccountsApi) -> None:
    for account in await accounts.get_accounts():
        everything = await accounts.get_transactions(account.acct_num, None, None)
        if len(everything) < 2:
            continue
        dates = sorted(t.date for t in everything)
        start = date.fromisoformat(dates[len(dates) // 2][:10])
        recent = await accounts.get_transactions(account.acct_num, start, None)
        assert recent and all(t.date[:10] >= start.isoformat() for t in recent)
        assert len(recent) < len(everything) or dates[0][:10] >= start.isoformat()
        return
    pytest.skip("no account with history")


async def test_open_lots_add_up_to_the_position(
    accounts: AccountsApi, equity_position: tuple[Account, Position]
) -> None:
    account, position = equity_position
    lots = await accounts.get_open_lots(account.acct_num, position.symbol)
    assert lots and sum(lot.quantity for lot in lots) == pytest.approx(position.quantity)
    tax_lots = await accounts.get_tax_lots(account.acct_num, position.symbol)
    assert sum(lot.quantity for lot in tax_lots) == pytest.approx(position.quantity)
    for lot in lots:
        assert lot.term.value in ("LONG", "SHORT")
        assert lot.cost_basis == pytest.approx(lot.cost_per_share * lot.quantity, rel=1e-3)
    assert isinstance(await accounts.get_closed_lots(account.acct_num, position.symbol, None, None), list)


async def test_borrow_and_short_insight_data(
    accounts: AccountsApi, equity_position: tuple[Account, Position], today: date
) -> None:
    account, position = equity_position
    htb = await accounts.get_hard_to_borrow(account.acct_num, [position.symbol])
    assert [row.symbol for row in htb] == [position.symbol]
    insights = await accounts.get_short_insights(account.acct_num, [position.symbol])
    assert [row.symbol for row in insights] == [position.symbol]
    series = await accounts.get_short_insight_series(
        account.acct_num, position.symbol, "shortInterest", today - timedelta(days=180), None
    )
    assert series.symbol == position.symbol and series.points
    assert [p.date for p in series.points] == sorted(p.date for p in series.points)
