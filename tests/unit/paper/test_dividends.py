"""The universe's dividend schedule: what research reports is what the ledger pays."""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from ftdesk.brokers.paper.calendar import is_trading_day, new_york_datetime
from ftdesk.brokers.paper.dividends import DividendSchedule
from ftdesk.brokers.paper.ledger.ledger import LEDGER_SCHEMA, Ledger
from ftdesk.brokers.paper.ledger.types import Fill
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.research import PaperResearch
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.universe import Universe
from ftdesk.domain.accounts import AccountType
from ftdesk.domain.events import AccountEvent
from tests.fakes.clock import ManualClock

SEED = 11


def security(symbol: str, price: float, dividend: dict[str, float] | None) -> dict[str, object]:
    return {
        "symbol": symbol,
        "description": f"{symbol} Corp.",
        "exchange": "NYSE",
        "cusip": f"{symbol:X<6}101",
        "security_type": "EQUITY",
        "sector": "Test",
        "price": price,
        "volatility": 0.2,
        "shares_outstanding": 1_000_000,
        "float_shares": 1_000_000,
        "avg_volume": 1_000_000,
        "dividend": dividend,
        "earnings": None,
        "optionable": False,
        "borrow": {"hard_to_borrow": False, "rate": 0.3, "locate_required": False, "available": 1000},
        "short_pct_float": 1.0,
    }


@pytest.fixture(scope="module")
def small() -> Universe:
    return Universe.from_json(
        json.dumps(
            {
                "securities": [
                    security("QTR", 60.0, {"yield": 0.034, "frequency": 4, "first_month": 3, "ex_day": 1}),
                    security("MON", 20.0, {"yield": 0.06, "frequency": 12, "first_month": 1, "ex_day": 28}),
                    security("NONE", 50.0, None),
                ]
            }
        )
    )


def test_the_schedule_follows_the_policy(small: Universe) -> None:
    schedule = DividendSchedule(small, SEED)
    year = list(schedule.ex_between("QTR", date(2026, 1, 1), date(2026, 12, 31)))
    assert [d.ex_date for d in year] == [date(2026, 3, 2), date(2026, 6, 1), date(2026, 9, 1), date(2026, 12, 1)]
    # 60 x 3.4% / 4 a quarter; 1 March 2026 is a Sunday, so that ex-date moves to Monday.
    assert {d.per_share for d in year} == {Decimal("0.51")}
    for d in year:
        assert 14 <= (d.pay_date - d.ex_date).days <= 31 and is_trading_day(d.pay_date)
    monthly = list(schedule.ex_between("MON", date(2026, 1, 1), date(2026, 12, 31)))
    assert len(monthly) == 12 and {d.per_share for d in monthly} == {Decimal("0.1")}
    assert list(schedule.ex_between("NONE", date(2020, 1, 1), date(2030, 1, 1))) == []
    assert list(schedule("ZZZZ", date(2020, 1, 1), date(2030, 1, 1))) == []


def test_paid_between_selects_by_pay_date_inclusive_and_depends_only_on_the_seed(small: Universe) -> None:
    schedule = DividendSchedule(small, SEED)
    june = next(schedule.ex_between("QTR", date(2026, 6, 1), date(2026, 6, 1)))
    assert list(schedule("QTR", june.pay_date, june.pay_date)) == [june]
    assert list(schedule("QTR", june.ex_date, june.pay_date - timedelta(days=1))) == []
    # Paid in the window even though its ex-date is before it.
    assert list(schedule("QTR", june.pay_date - timedelta(days=1), date(2026, 8, 31))) == [june]
    again = DividendSchedule(small, SEED)
    window = (date(2025, 1, 1), date(2027, 12, 31))
    assert list(again("MON", *window)) == list(schedule("MON", *window))
    other = DividendSchedule(small, SEED + 1)
    assert [d.pay_date for d in other("MON", *window)] != [d.pay_date for d in schedule("MON", *window)]


def test_the_ledger_pays_the_dividends_research_reports(tmp_path: Path) -> None:
    universe = Universe.load()
    schedule = DividendSchedule(universe, SEED)
    # Stand between the ex-date and the pay date of KO's October 2026 dividend: declared, not yet paid.
    (october,) = schedule.ex_between("KO", date(2026, 10, 1), date(2026, 10, 31))
    today = october.ex_date + timedelta(days=1)
    clock = ManualClock(new_york_datetime(today, 10))
    market = MarketSimulator(universe, SEED, clock)
    reported = PaperResearch(market, universe).dividends(["KO"])
    past = [e for e in reported if date.fromisoformat(e.ex_date) <= today]
    assert len(past) == 4 and past[-1].ex_date == october.ex_date.isoformat()

    store = PaperStore(tmp_path / "paper.db", schemas=[LEDGER_SCHEMA])
    store.open()
    events: list[AccountEvent] = []
    ledger = Ledger(store, market, clock, events.append, dividends=schedule)
    opened = date.fromisoformat(past[0].ex_date) - timedelta(days=30)
    ledger.open_account(
        "D1",
        AccountType.INDIVIDUAL,
        "D1",
        "dividends",
        margin=False,
        option_level=0,
        retirement=False,
        is_default=True,
        opened=opened,
    )
    ledger.post_cash("D1", "DEPOSIT", 2_000_000, "DEPOSIT", on=opened)
    ledger.apply_fills([Fill("D1", "KO", 100, Decimal("60"))], when=new_york_datetime(opened, 12))
    # Bought on the second ex-date: too late for that dividend, in time for the next.
    second_ex = date.fromisoformat(past[1].ex_date)
    ledger.apply_fills([Fill("D1", "KO", 50, Decimal("60"))], when=new_york_datetime(second_ex, 12))
    ledger.post_due_income()

    paid = [
        (t.date, t.price, t.quantity)
        for t in reversed(ledger.transactions("D1", None, None))
        if t.txn_type == "DIVIDEND"
    ]
    assert paid == [
        (e.pay_date, e.amount, 100.0 if date.fromisoformat(e.ex_date) <= second_ex else 150.0) for e in past[:-1]
    ]
    # The declared October dividend shows as an accrual with research's ex-date, pay date and amount.
    (accrual,) = (a for a in ledger.accruals("D1") if a.accrual_type == "DIVIDEND")
    assert (accrual.symbol, accrual.accrual_date, accrual.rate) == ("KO", past[-1].pay_date, past[-1].amount)
    assert f"ex-date {past[-1].ex_date}" in accrual.description
    assert accrual.accrual_amount == pytest.approx(150 * past[-1].amount, abs=0.005)
    store.close()
