"""Income of the paper world: dividends and daily interest.

Dividends come from a ``DividendSource``. The default, ``scheduled_dividends``, is a paper schedule
of well-known symbols close to the companies' recent practice: a fixed amount per share paid on
the 15th of the listed months with the ex-date on the 1st. Shares held at the end of the day before
the ex-date are paid (a short position pays the same amount "in lieu").

Interest accrues daily on the end-of-day ledger cash (short-sale proceeds included, a paper
simplification): core interest on a credit balance, margin interest on a debit balance, each
rounded to the cent per day and posted as one transaction on the last day of the month.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.ledger_money import CORE_RATE_PCT, MARGIN_RATE_PCT

_QUARTERS_FEB = (2, 5, 8, 11)
_QUARTERS_MAR = (3, 6, 9, 12)
_QUARTERS_JAN = (1, 4, 7, 10)
_QUARTERS_APR = (4, 7, 10, 12)

DIVIDEND_SCHEDULE: dict[str, tuple[Decimal, tuple[int, ...]]] = {
    "AAPL": (Decimal("0.26"), _QUARTERS_FEB),
    "MSFT": (Decimal("0.91"), _QUARTERS_MAR),
    "NVDA": (Decimal("0.01"), _QUARTERS_MAR),
    "KO": (Decimal("0.51"), _QUARTERS_APR),
    "JNJ": (Decimal("1.30"), _QUARTERS_MAR),
    "SPY": (Decimal("1.76"), _QUARTERS_JAN),
    "QQQ": (Decimal("0.72"), _QUARTERS_JAN),
    "VTI": (Decimal("0.95"), _QUARTERS_MAR),
}
"""Per-share dividend and pay months of the symbols the paper brokerage pays dividends on."""


@dataclass(frozen=True)
class Dividend:
    """One scheduled dividend of a symbol."""

    symbol: str
    per_share: Decimal
    ex_date: date
    pay_date: date


DividendSource = Callable[[str, date, date], Iterable[Dividend]]
"""Returns the dividends of a symbol paid from a start to an end date inclusive, oldest first."""


def scheduled_dividends(symbol: str, start: date, end: date) -> Iterator[Dividend]:
    """Yield the paper schedule's dividends of ``symbol`` paid from ``start`` to ``end`` inclusive."""
    schedule = DIVIDEND_SCHEDULE.get(symbol)
    if schedule is None:
        return
    per_share, months = schedule
    for year in range(start.year, end.year + 1):
        for month in months:
            pay = date(year, month, 15)
            if start <= pay <= end:
                yield Dividend(symbol, per_share, date(year, month, 1), pay)


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
