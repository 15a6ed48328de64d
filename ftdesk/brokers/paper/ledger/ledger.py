"""The paper ledger: accounts, cash, positions and tax lots, all in SQLite and all exact.

Everything an account shows is derived from three kinds of rows: transactions (every cash
movement, in integer cents), open lots (signed quantity and signed cost basis) and closed lots.
The ``Ledger`` is the one door to them; its parts do the work: ``ledger.book`` (the rows, positions,
exposure and balances), ``ledger.lots`` (fills, FIFO lots, wash sales, option expirations),
``ledger.income`` (dividends, interest, lending income) and ``ledger.reports`` (what the trader
reads). A fill, a dividend or an interest posting is one SQLite transaction, and its account events
(SPPOS, SPBSM, CBUPD) are published after the commit.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal

from ftdesk.brokers.paper.accounts_seed import seed_accounts
from ftdesk.brokers.paper.ledger.book import Book
from ftdesk.brokers.paper.ledger.income import INCOME_THROUGH, DividendSource, Income
from ftdesk.brokers.paper.ledger.lots import Lots
from ftdesk.brokers.paper.ledger.money import dollars, trade_date
from ftdesk.brokers.paper.ledger.outbox import Outbox
from ftdesk.brokers.paper.ledger.reports import Reports
from ftdesk.brokers.paper.ledger.risk import Exposure
from ftdesk.brokers.paper.ledger.types import AccountRules, CommitmentSource, Fill
from ftdesk.brokers.paper.ports import EventSink, Instrument, MarketView
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccountType,
    AccrualDetail,
    Balance,
    CashAccrualDetail,
    ClosedLotDetail,
    ClosedPosition,
    LoanedSecurity,
    LotDetail,
    OptionsSummary,
    Position,
    Transaction,
)
from ftdesk.domain.clock import Clock

__all__ = ("LEDGER_SCHEMA", "Ledger")

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS paper_accounts (
    acct_num     TEXT PRIMARY KEY,
    acct_type    TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    margin       INTEGER NOT NULL,
    option_level INTEGER NOT NULL,
    retirement   INTEGER NOT NULL,
    is_default   INTEGER NOT NULL DEFAULT 0,
    opened       TEXT NOT NULL,
    sort         INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS paper_transactions (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    acct_num         TEXT NOT NULL REFERENCES paper_accounts(acct_num),
    trade_date       TEXT NOT NULL,
    settle_date      TEXT NOT NULL,
    txn_type         TEXT NOT NULL,
    description      TEXT NOT NULL,
    symbol           TEXT,
    quantity         INTEGER,
    price            TEXT,
    amount_cents     INTEGER NOT NULL,  -- cash effect: + credit, - debit
    commission_cents INTEGER NOT NULL DEFAULT 0,
    fees_cents       INTEGER NOT NULL DEFAULT 0,
    conf_num         TEXT,
    posted_at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS paper_transactions_acct ON paper_transactions(acct_num, trade_date);
CREATE TABLE IF NOT EXISTS paper_lots (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    acct_num          TEXT NOT NULL REFERENCES paper_accounts(acct_num),
    symbol            TEXT NOT NULL,
    is_option         INTEGER NOT NULL,
    multiplier        INTEGER NOT NULL,
    acquired_date     TEXT NOT NULL,
    quantity          INTEGER NOT NULL CHECK (quantity <> 0),  -- signed: negative for a short lot
    basis_cents       INTEGER NOT NULL,                        -- signed: minus the proceeds for a short lot
    wash_adj_cents    INTEGER NOT NULL DEFAULT 0,              -- disallowed losses added to the basis
    wash_absorbed_qty INTEGER NOT NULL DEFAULT 0               -- shares already used as wash replacements
);
CREATE INDEX IF NOT EXISTS paper_lots_acct ON paper_lots(acct_num, symbol);
CREATE TABLE IF NOT EXISTS paper_closed_lots (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    lot_id           INTEGER NOT NULL,
    acct_num         TEXT NOT NULL REFERENCES paper_accounts(acct_num),
    symbol           TEXT NOT NULL,
    side             TEXT NOT NULL CHECK (side IN ('LONG', 'SHORT')),
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    acquired_date    TEXT NOT NULL,
    closed_date      TEXT NOT NULL,
    cost_cents       INTEGER NOT NULL,
    proceeds_cents   INTEGER NOT NULL,
    term             TEXT NOT NULL,
    wash_qty         INTEGER NOT NULL DEFAULT 0,
    disallowed_cents INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS paper_closed_lots_acct ON paper_closed_lots(acct_num, symbol, closed_date);
CREATE TABLE IF NOT EXISTS paper_loans (
    acct_num  TEXT NOT NULL REFERENCES paper_accounts(acct_num),
    symbol    TEXT NOT NULL,
    quantity  INTEGER NOT NULL CHECK (quantity > 0),
    rate_pct  TEXT NOT NULL,
    loan_date TEXT NOT NULL,
    PRIMARY KEY (acct_num, symbol)
);
"""


class Ledger:
    """Accounts, cash, positions and lots of the paper brokerage."""

    def __init__(
        self,
        store: PaperStore,
        market: MarketView,
        clock: Clock,
        events: EventSink,
        *,
        dividends: DividendSource,
    ) -> None:
        self._store = store
        self._market = market
        self._clock = clock
        self.outbox = Outbox(store)
        self._book = Book(store, market, clock, events, self.outbox)
        self._lots = Lots(store, self._book, clock)
        self._income = Income(store, self._book, clock, dividends)
        self._reports = Reports(store, self._book, clock)

    def set_commitments(self, source: CommitmentSource) -> None:
        """Let the order engine report what working orders hold back (called once at wiring)."""
        self._book.commitments = source

    # --- world ----------------------------------------------------------------------------------

    def seed_world(self, rng: random.Random, market: MarketView | None = None) -> None:
        """Create the starting accounts, holdings and history on a fresh world; do nothing otherwise.

        ``market`` prices the seeded history (the simulated one, whatever market the world trades on).
        """
        if self._store.query_one("SELECT 1 FROM paper_accounts LIMIT 1") is not None:
            return
        with self.outbox.atomic(quiet=True):
            seed_accounts(self, market or self._market, self._clock, rng)
            self.post_due_income()

    def open_account(
        self,
        acct_num: str,
        acct_type: AccountType,
        name: str,
        description: str,
        *,
        margin: bool,
        option_level: int,
        retirement: bool,
        is_default: bool,
        opened: date,
    ) -> None:
        """Create an account."""
        with self.outbox.atomic() as conn:
            sort = conn.execute("SELECT COUNT(*) FROM paper_accounts").fetchone()[0]
            conn.execute(
                "INSERT INTO paper_accounts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    acct_num,
                    acct_type.value,
                    name,
                    description,
                    margin,
                    option_level,
                    retirement,
                    is_default,
                    opened.isoformat(),
                    sort,
                ),
            )
            if conn.execute("SELECT 1 FROM meta WHERE key = ?", (INCOME_THROUGH,)).fetchone() is None:
                self._store.set_meta(INCOME_THROUGH, (opened - timedelta(days=1)).isoformat())

    def add_loan(self, acct_num: str, symbol: str, quantity: int, rate_pct: Decimal, loan_date: date) -> None:
        """Lend shares of a holding through fully-paid lending."""
        with self.outbox.atomic() as conn:
            conn.execute(
                "INSERT INTO paper_loans VALUES (?, ?, ?, ?, ?)",
                (acct_num, symbol, quantity, str(rate_pct), loan_date.isoformat()),
            )

    # --- write side -----------------------------------------------------------------------------

    # --- write side -----------------------------------------------------------------------------

    def post_cash(
        self,
        acct_num: str,
        txn_type: str,
        amount_cents: int,
        description: str,
        *,
        on: date | None = None,
        symbol: str | None = None,
        quantity: int | None = None,
        price: Decimal | None = None,
    ) -> str:
        """Record a cash movement (deposit, dividend, interest, fee) and return its transaction id."""
        day = on or trade_date(self._clock.now())
        with self.outbox.atomic() as conn:
            self._book.rules(conn, acct_num)
            txn_id = self._book.insert_txn(
                conn, acct_num, day, day, txn_type, description, symbol, quantity, price, amount_cents, 0, 0, None
            )
            self._book.publish_balance(acct_num, {"txn_type": txn_type, "amount": dollars(amount_cents)})
        return txn_id

    def apply_fills(self, fills: Sequence[Fill], *, when: datetime | None = None) -> None:
        """Book executions atomically: cash, lots, closed lots, wash sales; then publish the events."""
        self._lots.apply_fills(fills, when=when)

    def post_due_income(self) -> int:
        """Post dividends paid and month-end interest and lending income up to yesterday; return the count."""
        return self._income.post_due_income()

    def settle_expired_options(self) -> int:
        """Close option positions that stopped trading at the market's settlement price; return how many."""
        return self._lots.settle_expired_options()

    # --- queries used by the engine ----------------------------------------------------------------

    def rules(self, acct_num: str) -> AccountRules:
        """Return what an account may do; NotFound for an unknown account."""
        return self._book.rules(self._store.conn, acct_num)

    def position_quantity(self, acct_num: str, symbol: str) -> Decimal:
        """Return the signed quantity held of a symbol (0 when none)."""
        return self._book.position_quantity(acct_num, symbol)

    def exposure(self, acct_num: str, changes: Iterable[tuple[str, Decimal, Decimal]] = ()) -> Exposure:
        """Return the account's exposure, optionally after hypothetical fills (symbol, signed qty, price)."""
        return self._book.exposure(acct_num, changes)

    def what_if(self, acct_num: str) -> Callable[[Iterable[tuple[str, Decimal, Decimal]]], Exposure]:
        """Return the account's exposure after hypothetical fills as a function (the account read once)."""
        return self._book.what_if(acct_num)

    def instrument(self, symbol: str) -> Instrument:
        """Return a symbol's reference data, falling back to its option terms when the market no longer lists it."""
        return self._book.instrument(symbol)

    # --- read side ----------------------------------------------------------------------------

    def accounts(self) -> list[Account]:
        """Return all accounts, default first."""
        return self._reports.accounts()

    def account(self, acct_num: str) -> Account:
        """Return one account."""
        return self._reports.account(acct_num)

    def positions(self, acct_num: str) -> list[Position]:
        """Return the account's positions with market values and gains."""
        return self._reports.positions(acct_num)

    def realized_day_gain(self, acct_num: str) -> float:
        """Return the day's realised gain of today's sales (the held shares' day gain is on each position)."""
        return dollars(self._book.realized_day_cents(self._store.conn, acct_num))

    def balances(self, acct_num: str) -> Balance:
        """Return the account's balances and buying power."""
        return self._book.balances(acct_num)

    def transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return the account's history between two trade dates (inclusive), newest first."""
        return self._reports.transactions(acct_num, start, end)

    def options_summary(self, acct_num: str) -> OptionsSummary:
        """Return the option positions grouped by underlying, with the strategy they form."""
        return self._reports.options_summary(acct_num)

    def closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol for lots closed between two dates."""
        return self._reports.closed_positions(acct_num, start, end)

    def closed_lots(self, acct_num: str, symbol: str, start: date | None, end: date | None) -> list[ClosedLotDetail]:
        """Return the closed lots of a symbol with realised gain and loss, newest first."""
        return self._reports.closed_lots(acct_num, symbol, start, end)

    def open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position, oldest first (the order sales draw from them)."""
        return self._reports.open_lots(acct_num, symbol)

    def tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale of this symbol could draw from (the open lots)."""
        return self._reports.open_lots(acct_num, symbol)

    def loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return the shares on loan with their month-to-date lending income."""
        return self._reports.loaned_securities(acct_num)

    def account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""
        return self._reports.account_features(acct_num)

    def accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return month-to-date margin interest and the declared dividends on shares held."""
        return self._income.accruals(acct_num)

    def cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return this month's daily core-interest accruals on a credit balance, oldest first."""
        return self._income.cash_accruals(acct_num)
