"""Income of the paper world: dividends and daily interest.

Dividends come from a ``DividendSource`` the ledger is built with: the universe's schedule
(``dividends.DividendSchedule``, the one research reports) in the paper brokerage, or a test's own.
Shares held at the end of the day before the ex-date are paid on the pay date (a short position pays
the same amount "in lieu").

Interest accrues daily on the end-of-day ledger cash (short-sale proceeds included, a paper
simplification): core interest on a credit balance, margin interest on a debit balance, each
rounded to the cent per day and posted as one transaction on the last day of the month.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.ledger_money import CORE_RATE_PCT, MARGIN_RATE_PCT


@dataclass(frozen=True)
class Dividend:
    """One scheduled dividend of a symbol."""

    symbol: str
    per_share: Decimal
    ex_date: date
    pay_date: date


DividendSource = Callable[[str, date, date], Iterable[Dividend]]
"""Returns the dividends of a symbol paid from a start to an end date inclusive, oldest first."""


def next_dividend(source: DividendSource, symbol: str, on_or_after: date) -> Dividend | None:
    """Return the first dividend of ``symbol`` paid on or after a date, if it pays any."""
    return next(iter(source(symbol, on_or_after, on_or_after + timedelta(days=370))), None)


def month_end(day: date) -> date:
    """Return the last day of the month of ``day``."""
    first_next = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return first_next - timedelta(days=1)


def daily_interest_cents(balance_cents: int) -> int:
    """Return one day's interest on an end-of-day balance: + core credit, - margin charge."""
    if balance_cents >= 0:
        raw = Decimal(balance_cents) * CORE_RATE_PCT / 100 / 365
    else:
        raw = Decimal(balance_cents) * MARGIN_RATE_PCT / 100 / 360
    return int(raw.quantize(Decimal(1), rounding=ROUND_HALF_UP))
