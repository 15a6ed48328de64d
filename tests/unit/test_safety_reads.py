"""The daily loss limit counts the day by the cockpit's rule, its realised part included, at the boundary.

Tuesday 17 November 2026, 10:00 in New York, on an injected clock. AAPL bought on Friday at 90.00 (the cost),
previous close 100.00. A share held overnight and sold today counts against the previous close (not the cost),
a share bought and sold today against its fill. A loss equal to the limit passes; one cent more halts.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ftdesk.config import load_settings
from ftdesk.domain.accounts import Position
from ftdesk.domain.market import Quote
from ftdesk.domain.orders import Order
from ftdesk.domain.safety import AccountPnl
from ftdesk.service.orders.journal import JOURNAL_FILE_NAME, OrderJournal
from ftdesk.service.safety.guard import LossCrossing, SafetyGuard
from ftdesk.service.safety.reads import BrokerReads
from ftdesk.service.safety.store import SafetyStore
from ftdesk.service.switches import SettingsHolder
from tests.fakes.clock import ManualClock
from tests.unit.day_pnl_records import filled_order, held_position

ACCT = "X1"
TUESDAY_MORNING = datetime(2026, 11, 17, 15, 0, tzinfo=UTC)  # 10:00 in New York
TODAY = "2026-11-17T09:45:00-05:00"
FRIDAY = "2026-11-13T10:00:00-05:00"
_conf_nums = itertools.count(1)


def held(qty: float, last: float, prev: float, cost: float, symbol: str = "AAPL") -> Position:
    return held_position(qty, last, prev, acct=ACCT, symbol=symbol, cost=cost)


def filled(action: str, qty: float, price: float | None, *, entered: str = TODAY, symbol: str = "AAPL") -> Order:
    return filled_order(action, qty, price, acct=ACCT, symbol=symbol, conf_num=f"C{next(_conf_nums)}", entered=entered)


@dataclass
class Account:
    """One account as its broker answers: positions held now, every order, quotes with the previous close."""

    positions: list[Position] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    prev_closes: dict[str, float] = field(default_factory=dict)

    async def get_positions(self, acct_num: str) -> list[Position]:
        return [p for p in self.positions if p.acct_num == acct_num]

    async def get_order_status(self, acct_num: str | None) -> list[Order]:
        return [o for o in self.orders if acct_num in (None, o.acct_num)]

    async def snapshot(self, symbols: list[str]) -> list[Quote]:
        return [
            Quote(symbol=s, last=1.0, bid=1.0, ask=1.0, prev_close=self.prev_closes[s], time=TODAY)
            for s in symbols
            if s in self.prev_closes
        ]


class Session:
    def __init__(self, account: Any) -> None:
        self.broker = type("Broker", (), {"accounts": account, "orders": account, "quote_feed": account})()

    async def run(self, operation: Callable[[Any], Awaitable[Any]]) -> Any:
        return await operation(self.broker)


def reads(account: Any, clock: ManualClock) -> BrokerReads:
    return BrokerReads(Session(account), quotes=None, clock=clock)  # type: ignore[arg-type]


async def check(tmp_path: Path, account: Any, limit: float, clock: ManualClock | None = None) -> LossCrossing | None:
    """Return the crossing a fresh guard with this daily loss limit finds on the account (None: it passes)."""
    clock = clock or ManualClock(TUESDAY_MORNING)
    data_dir = tmp_path / f"limit-{limit}"
    data_dir.mkdir()
    settings = load_settings({"FTSERVICE_DATA_DIR": str(data_dir), "FTSERVICE_DAILY_LOSS_LIMIT": f"{limit:.2f}"})
    journal = OrderJournal(data_dir / JOURNAL_FILE_NAME, clock)
    journal.open()
    guard = await SafetyGuard.open(
        SafetyStore(data_dir), journal, clock, settings=SettingsHolder(settings), reads=reads(account, clock)
    )
    try:
        return await guard.check_account_loss(ACCT)
    finally:
        await guard.close()
        journal.close()


async def assert_boundary(tmp_path: Path, account: Any, loss: float, clock: ManualClock | None = None) -> None:
    assert await check(tmp_path, account, loss, clock) is None  # equal: not crossed
    crossed = await check(tmp_path, account, round(loss - 0.01, 2), clock)
    assert crossed is not None and crossed.loss == loss and crossed.acct_num == ACCT


async def pnl(account: Account, clock: ManualClock | None = None) -> AccountPnl:
    return await reads(account, clock or ManualClock(TUESDAY_MORNING)).pnl(ACCT)


async def test_held_overnight_and_sold_today_below_the_close_is_a_loss_though_above_the_cost(tmp_path: Path) -> None:
    # 10 bought Friday at 90, sold today at 97: +70 against the cost, -30 against the 100.00 close.
    account = Account(orders=[filled("B", 10, 90.0, entered=FRIDAY), filled("S", 10, 97.0)], prev_closes={"AAPL": 100})
    day = await pnl(account)
    assert (day.realized, day.unrealized, day.total, day.uncounted) == (-30.0, 0.0, -30.0, [])
    await assert_boundary(tmp_path, account, 30.0)


async def test_bought_and_sold_today_counts_from_the_fill_not_the_close(tmp_path: Path) -> None:
    # The 50.00 close would make it a 470.00 gain; from the 99.00 fill it is a 20.00 loss.
    account = Account(orders=[filled("B", 10, 99.0), filled("S", 10, 97.0)], prev_closes={"AAPL": 50})
    assert (await pnl(account)).total == -20.0
    await assert_boundary(tmp_path, account, 20.0)


async def test_a_partial_sale_counts_the_sold_shares_from_the_close_and_the_rest_held(tmp_path: Path) -> None:
    # 10 held overnight (close 100.00), 4 sold today at 97.00, 6 left at 96.00: 4 x -3 + 6 x -4.
    account = Account(positions=[held(6, 96.0, 100.0, 90.0)], orders=[filled("S", 4, 97.0)])
    day = await pnl(account)
    assert (day.realized, day.unrealized, day.total) == (0.0, -36.0, -36.0)
    await assert_boundary(tmp_path, account, 36.0)


async def test_a_sale_without_a_previous_close_is_named_as_not_counted(tmp_path: Path) -> None:
    account = Account(positions=[held(5, 98.0, 100.0, 90.0, symbol="KO")], orders=[filled("S", 10, 97.0)])
    day = await pnl(account)
    assert day.uncounted == ["AAPL"] and day.total == -10.0  # KO's 5 x -2 only: nothing guessed for AAPL


async def test_at_nine_in_the_new_york_evening_the_days_realised_loss_still_counts() -> None:
    clock = ManualClock(datetime(2026, 11, 18, 2, 0, tzinfo=UTC))  # 21:00 on Tuesday 17 November in New York
    account = Account(orders=[filled("B", 10, 99.0), filled("S", 10, 97.0)])
    assert (await pnl(account, clock)).total == -20.0


async def test_yesterdays_trades_are_not_todays() -> None:
    clock = ManualClock(datetime(2026, 11, 18, 15, 0, tzinfo=UTC))  # Wednesday: Tuesday's round trip is done
    account = Account(orders=[filled("B", 10, 99.0), filled("S", 10, 97.0)])
    assert (await pnl(account, clock)).total == 0.0
