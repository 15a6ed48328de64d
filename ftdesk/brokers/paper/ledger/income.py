"""Income of the paper world: dividends, daily interest and lending income, posted and accrued.

Dividends come from a ``DividendSource`` the ledger is built with: the universe's schedule
(``dividends.DividendSchedule``, the one research reports) in the paper brokerage, or a test's own.
Shares held at the end of the day before the ex-date are paid on the pay date (a short position pays
the same amount "in lieu").

Interest accrues daily on the end-of-day ledger cash (short-sale proceeds included, a paper
simplification): core interest on a credit balance, margin interest on a debit balance, each
rounded to the cent per day and posted as one transaction on the last day of the month.

Fully-paid lending: loaned shares stay in the position; income accrues daily at the loan's rate
on their current market value and is posted monthly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.ledger.book import Book
from ftdesk.brokers.paper.ledger.money import CORE_RATE_PCT, MARGIN_RATE_PCT, cents, dollars, trade_date
from ftdesk.brokers.paper.options import is_option_symbol
from ftdesk.brokers.paper.quantities import text as quantity_text
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import AccrualDetail, CashAccrualDetail
from ftdesk.domain.clock import Clock

INCOME_THROUGH = "ledger.income_through"
"""The meta key of the last day whose income has been posted."""


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


class Income:
    """Posts the income the paper world pays (dividends, core and margin interest, lending) and reports its accruals."""

    def __init__(self, store: PaperStore, book: Book, clock: Clock, dividends: DividendSource) -> None:
        self._store = store
        self._book = book
        self._clock = clock
        self._dividends = dividends

    def post_due_income(self) -> int:
        """Post dividends paid and month-end interest and lending income up to yesterday; return the count."""
        through = trade_date(self._clock.now()) - timedelta(days=1)
        raw = self._store.get_meta(INCOME_THROUGH)
        if raw is None or raw >= through.isoformat():
            return 0
        posted = 0
        with self._book.outbox.atomic() as conn:
            start = date.fromisoformat(raw) + timedelta(days=1)
            accounts = [r["acct_num"] for r in conn.execute("SELECT acct_num FROM paper_accounts ORDER BY sort")]
            while start <= through:
                end = min(month_end(start), through)
                for acct in accounts:
                    posted += self._post_dividends(conn, acct, start, end)
                    if end == month_end(start):
                        posted += self._post_month_interest(conn, acct, end)
                start = end + timedelta(days=1)
            self._store.set_meta(INCOME_THROUGH, through.isoformat())
        return posted

    def _post_dividends(self, conn: sqlite3.Connection, acct: str, start: date, end: date) -> int:
        symbols = [
            r["symbol"]
            for r in conn.execute(
                "SELECT symbol FROM paper_lots WHERE acct_num = ? UNION SELECT symbol"
                " FROM paper_closed_lots WHERE acct_num = ? ORDER BY symbol",
                (acct, acct),
            )
            if not is_option_symbol(r["symbol"])
        ]
        count = 0
        for symbol in symbols:
            for div in self._dividends(symbol, start, end):
                qty = self._book.quantity_on(conn, acct, symbol, div.ex_date)
                if qty == 0:
                    continue
                amount = cents(div.per_share * qty)
                what = "DIVIDEND RECEIVED" if qty > 0 else "PAYMENT IN LIEU OF DIVIDEND (SHORT)"
                self._book.insert_txn(
                    conn,
                    acct,
                    div.pay_date,
                    div.pay_date,
                    "DIVIDEND",
                    f"{what} {symbol} {div.per_share}/SHARE",
                    symbol,
                    qty,
                    div.per_share,
                    amount,
                    0,
                    0,
                    None,
                )
                self._book.publish_balance(acct, {"txn_type": "DIVIDEND", "symbol": symbol, "amount": dollars(amount)})
                count += 1
        return count

    def _post_month_interest(self, conn: sqlite3.Connection, acct: str, last_day: date) -> int:
        first = last_day.replace(day=1)
        core = margin = 0
        for _, balance in self._book.end_of_day_cash(conn, acct, first, last_day):
            interest = daily_interest_cents(balance)
            if interest >= 0:
                core += interest
            else:
                margin += interest
        lending = self._book.lending_cents(conn, acct, first, last_day)
        count = 0
        for txn_type, amount, text in (
            ("INTEREST", core, f"CORE INTEREST {CORE_RATE_PCT}% APR"),
            ("MARGIN_INTEREST", margin, f"MARGIN INTEREST {MARGIN_RATE_PCT}% APR"),
            ("LENDING_INCOME", lending, "FULLY PAID LENDING INCOME"),
        ):
            if amount:
                self._book.insert_txn(
                    conn, acct, last_day, last_day, txn_type, text, None, None, None, amount, 0, 0, None
                )
                self._book.publish_balance(acct, {"txn_type": txn_type, "amount": dollars(amount)})
                count += 1
        return count

    def accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return month-to-date margin interest and the declared dividends on shares held."""
        conn = self._store.conn
        self._book.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        result = []
        debit_days = [b for _, b in self._book.end_of_day_cash(conn, acct_num, today.replace(day=1), today) if b < 0]
        if debit_days:
            interest = -sum(daily_interest_cents(b) for b in debit_days)
            average = -sum(debit_days) // len(debit_days)
            result.append(
                AccrualDetail(
                    acct_num=acct_num,
                    accrual_type="MARGIN_INTEREST",
                    accrual_amount=dollars(interest),
                    accrual_date=today.isoformat(),
                    description=f"Margin interest month to date on an average debit of ${dollars(average):,.2f}"
                    f" at {MARGIN_RATE_PCT}% (actual/360), charged at month end",
                    rate=float(MARGIN_RATE_PCT),
                )
            )
        for p in self._book.positions(conn, acct_num):
            div = next_dividend(self._dividends, p.symbol, today) if p.instrument.option is None else None
            if div is None or (div.ex_date - today).days > 31:
                continue
            qty = self._book.quantity_on(conn, acct_num, p.symbol, div.ex_date) if div.ex_date <= today else p.quantity
            if qty == 0:
                continue
            result.append(
                AccrualDetail(
                    acct_num=acct_num,
                    accrual_type="DIVIDEND",
                    accrual_amount=dollars(cents(div.per_share * qty)),
                    accrual_date=div.pay_date.isoformat(),
                    description=f"{p.symbol} dividend ${div.per_share}/share on {quantity_text(qty)} shares,"
                    f" ex-date {div.ex_date.isoformat()}, payable {div.pay_date.isoformat()}",
                    symbol=p.symbol,
                    rate=float(div.per_share),
                )
            )
        return result

    def cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return this month's daily core-interest accruals on a credit balance, oldest first."""
        conn = self._store.conn
        self._book.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        return [
            CashAccrualDetail(
                acct_num=acct_num,
                cash_accrual_amount=dollars(daily_interest_cents(balance)),
                accrual_date=day.isoformat(),
                description=f"Core interest at {CORE_RATE_PCT}% (actual/365) on ${dollars(balance):,.2f}",
            )
            for day, balance in self._book.end_of_day_cash(conn, acct_num, today.replace(day=1), today)
            if balance > 0
        ]
