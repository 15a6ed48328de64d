"""Today's P&L of the daily loss limit: the market's day, so a New York evening still counts the day's trades."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime
from typing import Any

from ftdesk.domain.accounts import ClosedPosition, Position
from ftdesk.service.safety.reads import BrokerReads
from tests.fakes.clock import ManualClock

ACCT = "X1"
TRADED_ON = date(2026, 11, 24)


class _Accounts:
    """An account that closed one losing position on 24 November and holds nothing now."""

    async def get_positions(self, acct_num: str) -> list[Position]:
        return []

    async def get_closed_positions(self, acct_num: str, start: date, end: date) -> list[ClosedPosition]:
        closed = ClosedPosition(
            acct_num=acct_num,
            symbol="AAPL",
            description="APPLE INC",
            quantity=10,
            proceeds=1500.0,
            cost_basis=2000.0,
            gain_loss=-500.0,
            gain_loss_pct=-25.0,
            short_term_gain_loss=-500.0,
            long_term_gain_loss=0.0,
            last_closed_date=TRADED_ON.isoformat(),
        )
        return [closed] if start <= TRADED_ON <= end else []


class _Broker:
    accounts = _Accounts()


class _Session:
    async def run(self, operation: Callable[[Any], Awaitable[Any]]) -> Any:
        return await operation(_Broker())


async def test_at_nine_in_the_new_york_evening_the_days_realised_loss_still_counts() -> None:
    clock = ManualClock(datetime(2026, 11, 25, 2, 0, tzinfo=UTC))  # 21:00 on 24 November in New York
    reads = BrokerReads(_Session(), quotes=None, clock=clock)  # type: ignore[arg-type]
    pnl = await reads.pnl(ACCT)
    assert pnl.realized == -500.0 and pnl.total == -500.0
