"""The paper ledger: accounts, cash, positions and tax lots, all in SQLite and all exact.

Everything an account shows is derived from three kinds of rows: transactions (every cash
movement, in integer cents), open lots (signed quantity and signed cost basis) and closed lots.
Cash is the sum of the transactions; a position is the sum of its open lots; balances and buying
power follow from those and the market (rules in ``ledger_risk``). A fill, a dividend or an
interest posting is one SQLite transaction, and its account events (SPPOS, SPBSM, CBUPD) are
published after the commit.

Lots and taxes:

* sales close lots FIFO; a lot held more than one year is LONG term, otherwise SHORT (short-sale
  lots are always SHORT); proceeds are net of commission and fees, cost includes commission;
* a short sale opens a lot with negative quantity whose basis is minus the proceeds; a buy to
  cover closes it (proceeds = the short-sale proceeds, cost = the cover);
* a signed cost basis: ``gain = market value - cost basis`` holds for long and short alike;
* wash sales (taxable accounts only): when a long lot is closed at a loss and shares of the same
  symbol are bought within 30 days before (still held, not from the lot sold) or after the sale,
  the closed lot gets ``wash_sale_ind`` and the disallowed loss, share for share, is added to the
  replacement lot's cost basis. The replacement keeps its own acquisition date (a simplification).
  Closed lots report the economic gain (proceeds - cost); the disallowed amount is reported
  beside it (``ClosedPosition.wash_sale_disallowed``).
* an option that stopped trading (16:00 New York time on its expiration date) is settled in cash at
  the next market tick at the price the market quotes for it: its settlement value, the intrinsic
  value at the underlying's 16:00 New York price on the expiration date (a paper simplification of
  exercise and assignment).

Dividends come from the ``DividendSource`` the ledger is built with (``dividends.DividendSchedule``
in the paper brokerage, the schedule research reports).

Fully-paid lending: loaned shares stay in the position; income accrues daily at the loan's rate
on their current market value and is posted monthly.
"""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from ftdesk.brokers.paper.accounts_seed import seed_accounts
from ftdesk.brokers.paper.ledger_income import (
    DividendSource,
    daily_interest_cents,
    month_end,
    next_dividend,
)
from ftdesk.brokers.paper.ledger_money import (
    CORE_RATE_PCT,
    MARGIN_RATE_PCT,
    cents,
    dollars,
    is_long_term,
    option_expired,
    pct,
    price_float,
    price_of,
    settlement_date,
    split_cents,
    trade_date,
)
from ftdesk.brokers.paper.ledger_outbox import Outbox
from ftdesk.brokers.paper.ledger_risk import Exposure, Holding, exposure
from ftdesk.brokers.paper.ledger_types import AccountRules, Commitment, CommitmentSource, Fill
from ftdesk.brokers.paper.options import is_option_symbol, parse_option_symbol
from ftdesk.brokers.paper.ports import EventSink, Instrument, MarketView
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import iso_time
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
    OptionContract,
    OptionLegSummary,
    OptionsSummary,
    OptionType,
    OptionUnderlyingSummary,
    Position,
    SecurityType,
    Term,
    Transaction,
)
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.events import AccountEvent, EventCategory, EventType

__all__ = ["LEDGER_SCHEMA", "AccountRules", "Commitment", "CommitmentSource", "Fill", "Ledger"]

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

_INCOME_THROUGH = "ledger.income_through"
_WASH_WINDOW = timedelta(days=30)


@dataclass(frozen=True)
class _Pos:
    symbol: str
    quantity: int
    basis_cents: int
    multiplier: int
    instrument: Instrument
    last: Decimal
    prev_close: Decimal

    @property
    def market_value_cents(self) -> int:
        return cents(self.last * self.quantity * self.multiplier)

    @property
    def holding(self) -> Holding:
        return Holding(self.symbol, self.quantity, self.last, self.instrument)


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
        self._dividends = dividends
        self._market = market
        self._clock = clock
        self._events = events
        self.outbox = Outbox(store)
        self._commitments: CommitmentSource = lambda _acct: Commitment()

    def set_commitments(self, source: CommitmentSource) -> None:
        """Let the order engine report what working orders hold back (called once at wiring)."""
        self._commitments = source

    # --- world ----------------------------------------------------------------------------------

    def seed_world(self, rng: random.Random) -> None:
        """Create the starting accounts, holdings and history on a fresh world; do nothing otherwise."""
        if self._store.query_one("SELECT 1 FROM paper_accounts LIMIT 1") is not None:
            return
        with self.outbox.atomic(quiet=True):
            seed_accounts(self, self._market, self._clock, rng)
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
            if conn.execute("SELECT 1 FROM meta WHERE key = ?", (_INCOME_THROUGH,)).fetchone() is None:
                self._store.set_meta(_INCOME_THROUGH, (opened - timedelta(days=1)).isoformat())

    def add_loan(self, acct_num: str, symbol: str, quantity: int, rate_pct: Decimal, loan_date: date) -> None:
        """Lend shares of a holding through fully-paid lending."""
        with self.outbox.atomic() as conn:
            conn.execute(
                "INSERT INTO paper_loans VALUES (?, ?, ?, ?, ?)",
                (acct_num, symbol, quantity, str(rate_pct), loan_date.isoformat()),
            )

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
            self._rules(conn, acct_num)
            txn_id = self._insert_txn(
                conn, acct_num, day, day, txn_type, description, symbol, quantity, price, amount_cents, 0, 0, None
            )
            self._publish_balance(acct_num, {"txn_type": txn_type, "amount": dollars(amount_cents)})
        return txn_id

    def apply_fills(self, fills: Sequence[Fill], *, when: datetime | None = None) -> None:
        """Book executions atomically: cash, lots, closed lots, wash sales; then publish the events."""
        moment = when or self._clock.now()
        with self.outbox.atomic() as conn:
            for fill in fills:
                self._apply_fill(conn, fill, trade_date(moment))

    def _apply_fill(self, conn: sqlite3.Connection, fill: Fill, day: date) -> None:
        rules = self._rules(conn, fill.acct_num)
        if fill.quantity == 0:
            raise ValueError("a fill needs a non-zero quantity")
        instrument = self._instrument(fill.symbol)
        is_option = instrument.security_type is SecurityType.OPTION
        lots = self._open_lot_rows(conn, fill.acct_num, fill.symbol)
        held = sum(int(r["quantity"]) for r in lots)
        buying = fill.quantity > 0
        size = abs(fill.quantity)
        closing = min(size, abs(held)) if held and (held > 0) != buying else 0
        parts = [(q, c) for q, c in ((closing, True), (size - closing, False)) if q]
        commissions = split_cents(fill.commission_cents, [q for q, _ in parts])
        fees = split_cents(fill.fees_cents, [q for q, _ in parts])
        realized = 0
        wash = False
        for (qty, is_closing), commission, fee in zip(parts, commissions, fees, strict=True):
            principal = cents(fill.price * qty * instrument.multiplier)
            amount = -(principal + commission + fee) if buying else principal - commission - fee
            txn_type = fill.txn_type or _txn_type(is_option, buying, is_closing)
            description = _fill_description(txn_type, instrument, qty, fill.price, is_closing)
            self._insert_txn(
                conn,
                fill.acct_num,
                day,
                settlement_date(day),
                txn_type,
                description,
                fill.symbol,
                qty if buying else -qty,
                fill.price,
                amount,
                commission,
                fee,
                fill.conf_num,
            )
            if is_closing:
                gain, washed = self._close_lots(conn, rules, lots, qty, amount, day)
                realized += gain
                wash = wash or washed
            else:
                wash = (
                    self._open_lot(conn, rules, fill.symbol, instrument, qty if buying else -qty, -amount, day) or wash
                )
        self._publish_fill_events(conn, fill, held, realized, wash, len(parts))

    def _open_lot(
        self,
        conn: sqlite3.Connection,
        rules: AccountRules,
        symbol: str,
        instrument: Instrument,
        quantity: int,
        basis_cents: int,
        day: date,
    ) -> bool:
        cur = conn.execute(
            "INSERT INTO paper_lots (acct_num, symbol, is_option, multiplier, acquired_date, quantity, basis_cents)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                rules.acct_num,
                symbol,
                instrument.security_type is SecurityType.OPTION,
                instrument.multiplier,
                day.isoformat(),
                quantity,
                basis_cents,
            ),
        )
        if quantity < 0 or rules.retirement:
            return False
        # A purchase within 30 days after a loss sale replaces the shares sold: the "after" wash case.
        losses = conn.execute(
            "SELECT * FROM paper_closed_lots WHERE acct_num = ? AND symbol = ? AND side = 'LONG'"
            " AND proceeds_cents < cost_cents AND wash_qty < quantity AND closed_date >= ? ORDER BY closed_date, id",
            (rules.acct_num, symbol, (day - _WASH_WINDOW).isoformat()),
        ).fetchall()
        free = quantity
        for loss in losses:
            if free == 0:
                break
            free -= self._wash(conn, loss, int(cur.lastrowid or 0), free)
        return free < quantity

    def _close_lots(
        self,
        conn: sqlite3.Connection,
        rules: AccountRules,
        lots: list[sqlite3.Row],
        qty: int,
        amount: int,
        day: date,
    ) -> tuple[int, bool]:
        takes: list[tuple[sqlite3.Row, int]] = []
        left = qty
        for lot in lots:
            if left == 0:
                break
            take = min(left, abs(int(lot["quantity"])))
            takes.append((lot, take))
            left -= take
        shares = split_cents(abs(amount), [t for _, t in takes])
        realized = 0
        closed_ids: list[int] = []
        for (lot, take), money in zip(takes, shares, strict=True):
            lot_qty = int(lot["quantity"])
            basis = int(lot["basis_cents"])
            part = basis if take == abs(lot_qty) else cents(Decimal(basis) * take / abs(lot_qty) / 100)
            long_lot = lot_qty > 0
            cost, proceeds = (part, money) if long_lot else (money, -part)
            acquired = date.fromisoformat(lot["acquired_date"])
            term = Term.LONG if long_lot and is_long_term(acquired, day) else Term.SHORT
            cur = conn.execute(
                "INSERT INTO paper_closed_lots (lot_id, acct_num, symbol, side, quantity, acquired_date, closed_date,"
                " cost_cents, proceeds_cents, term) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    lot["id"],
                    rules.acct_num,
                    lot["symbol"],
                    "LONG" if long_lot else "SHORT",
                    take,
                    lot["acquired_date"],
                    day.isoformat(),
                    cost,
                    proceeds,
                    term.value,
                ),
            )
            realized += proceeds - cost
            if long_lot and proceeds < cost:
                closed_ids.append(int(cur.lastrowid or 0))
            if take == abs(lot_qty):
                conn.execute("DELETE FROM paper_lots WHERE id = ?", (lot["id"],))
            else:
                sign = 1 if long_lot else -1
                conn.execute(
                    "UPDATE paper_lots SET quantity = quantity - ?, basis_cents = basis_cents - ?,"
                    " wash_absorbed_qty = MIN(wash_absorbed_qty, ABS(quantity - ?)) WHERE id = ?",
                    (sign * take, part, sign * take, lot["id"]),
                )
        washed = False
        if closed_ids and not rules.retirement:
            washed = self._wash_before(conn, rules, closed_ids, {int(lot["id"]) for lot, _ in takes}, day)
        return realized, washed

    def _wash_before(
        self,
        conn: sqlite3.Connection,
        rules: AccountRules,
        closed_ids: list[int],
        sold_lots: set[int],
        day: date,
    ) -> bool:
        # Shares bought within 30 days before a loss sale and still held replace the shares sold.
        washed = False
        for closed_id in closed_ids:
            loss = conn.execute("SELECT * FROM paper_closed_lots WHERE id = ?", (closed_id,)).fetchone()
            candidates = conn.execute(
                "SELECT * FROM paper_lots WHERE acct_num = ? AND symbol = ? AND quantity > wash_absorbed_qty"
                " AND acquired_date >= ? ORDER BY acquired_date, id",
                (rules.acct_num, loss["symbol"], (day - _WASH_WINDOW).isoformat()),
            ).fetchall()
            wanted = int(loss["quantity"])
            for lot in candidates:
                if wanted == 0:
                    break
                if int(lot["id"]) in sold_lots:
                    continue
                matched = self._wash(conn, loss, int(lot["id"]), int(lot["quantity"]) - int(lot["wash_absorbed_qty"]))
                wanted -= matched
                washed = washed or matched > 0
                loss = conn.execute("SELECT * FROM paper_closed_lots WHERE id = ?", (closed_id,)).fetchone()
        return washed

    @staticmethod
    def _wash(conn: sqlite3.Connection, loss: sqlite3.Row, lot_id: int, available: int) -> int:
        """Disallow the loss of ``loss`` for up to ``available`` replacement shares of lot ``lot_id``."""
        qty = int(loss["quantity"])
        matched = min(available, qty - int(loss["wash_qty"]))
        if matched <= 0:
            return 0
        total_loss = int(loss["cost_cents"]) - int(loss["proceeds_cents"])
        done = int(loss["wash_qty"]) + matched
        disallowed_to_date = total_loss if done == qty else cents(Decimal(total_loss) * done / qty / 100)
        amount = disallowed_to_date - int(loss["disallowed_cents"])
        conn.execute(
            "UPDATE paper_closed_lots SET wash_qty = ?, disallowed_cents = ? WHERE id = ?",
            (done, disallowed_to_date, loss["id"]),
        )
        conn.execute(
            "UPDATE paper_lots SET basis_cents = basis_cents + ?, wash_adj_cents = wash_adj_cents + ?,"
            " wash_absorbed_qty = wash_absorbed_qty + ? WHERE id = ?",
            (amount, amount, matched, lot_id),
        )
        return matched

    def _insert_txn(
        self,
        conn: sqlite3.Connection,
        acct_num: str,
        day: date,
        settle: date,
        txn_type: str,
        description: str,
        symbol: str | None,
        quantity: int | None,
        price: Decimal | None,
        amount_cents: int,
        commission_cents: int,
        fees_cents: int,
        conf_num: str | None,
    ) -> str:
        cur = conn.execute(
            "INSERT INTO paper_transactions (acct_num, trade_date, settle_date, txn_type, description, symbol,"
            " quantity, price, amount_cents, commission_cents, fees_cents, conf_num, posted_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                acct_num,
                day.isoformat(),
                settle.isoformat(),
                txn_type,
                description,
                symbol,
                quantity,
                None if price is None else str(price),
                amount_cents,
                commission_cents,
                fees_cents,
                conf_num,
                iso_time(self._clock.now()),
            ),
        )
        return _txn_id(int(cur.lastrowid or 0))

    # --- income and expirations -----------------------------------------------------------------

    def post_due_income(self) -> int:
        """Post dividends paid and month-end interest and lending income up to yesterday; return the count."""
        through = trade_date(self._clock.now()) - timedelta(days=1)
        raw = self._store.get_meta(_INCOME_THROUGH)
        if raw is None or raw >= through.isoformat():
            return 0
        posted = 0
        with self.outbox.atomic() as conn:
            start = date.fromisoformat(raw) + timedelta(days=1)
            accounts = [r["acct_num"] for r in conn.execute("SELECT acct_num FROM paper_accounts ORDER BY sort")]
            while start <= through:
                end = min(month_end(start), through)
                for acct in accounts:
                    posted += self._post_dividends(conn, acct, start, end)
                    if end == month_end(start):
                        posted += self._post_month_interest(conn, acct, end)
                start = end + timedelta(days=1)
            self._store.set_meta(_INCOME_THROUGH, through.isoformat())
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
                qty = self._quantity_on(conn, acct, symbol, div.ex_date)
                if qty == 0:
                    continue
                amount = cents(div.per_share * qty)
                what = "DIVIDEND RECEIVED" if qty > 0 else "PAYMENT IN LIEU OF DIVIDEND (SHORT)"
                self._insert_txn(
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
                self._publish_balance(acct, {"txn_type": "DIVIDEND", "symbol": symbol, "amount": dollars(amount)})
                count += 1
        return count

    def _post_month_interest(self, conn: sqlite3.Connection, acct: str, last_day: date) -> int:
        first = last_day.replace(day=1)
        core = margin = 0
        for _, balance in self._end_of_day_cash(conn, acct, first, last_day):
            interest = daily_interest_cents(balance)
            if interest >= 0:
                core += interest
            else:
                margin += interest
        lending = self._lending_cents(conn, acct, first, last_day)
        count = 0
        for txn_type, amount, text in (
            ("INTEREST", core, f"CORE INTEREST {CORE_RATE_PCT}% APR"),
            ("MARGIN_INTEREST", margin, f"MARGIN INTEREST {MARGIN_RATE_PCT}% APR"),
            ("LENDING_INCOME", lending, "FULLY PAID LENDING INCOME"),
        ):
            if amount:
                self._insert_txn(conn, acct, last_day, last_day, txn_type, text, None, None, None, amount, 0, 0, None)
                self._publish_balance(acct, {"txn_type": txn_type, "amount": dollars(amount)})
                count += 1
        return count

    def settle_expired_options(self) -> int:
        """Close option positions that stopped trading at the market's settlement price; return how many."""
        now = self._clock.now()
        rows = self._store.query(
            "SELECT acct_num, symbol, SUM(quantity) AS qty FROM paper_lots WHERE is_option = 1"
            " GROUP BY acct_num, symbol HAVING SUM(quantity) <> 0"
        )
        fills: list[Fill] = []
        for row in rows:
            option = self._instrument(row["symbol"]).option
            if option is None or not option_expired(option, now):
                continue
            # The market quotes an expired option at its settlement value. Settling at the price positions are
            # valued at (zero for a series the market no longer quotes) keeps net worth from jumping.
            settlement = self._prices(row["symbol"])[0]
            qty = int(row["qty"])
            label = "OPTION_EXPIRED" if settlement == 0 else "OPTION_CASH_SETTLED"
            fills.append(Fill(row["acct_num"], row["symbol"], -qty, settlement, txn_type=label))
        for fill in fills:
            self.apply_fills([fill])
        return len(fills)

    # --- queries used by the engine ----------------------------------------------------------------

    def rules(self, acct_num: str) -> AccountRules:
        """Return what an account may do; NotFound for an unknown account."""
        return self._rules(self._store.conn, acct_num)

    def position_quantity(self, acct_num: str, symbol: str) -> int:
        """Return the signed quantity held of a symbol (0 when none)."""
        row = self._store.query_one(
            "SELECT COALESCE(SUM(quantity), 0) AS q FROM paper_lots WHERE acct_num = ? AND symbol = ?",
            (acct_num, symbol),
        )
        return int(row["q"]) if row else 0

    def exposure(self, acct_num: str, changes: Iterable[tuple[str, int, Decimal]] = ()) -> Exposure:
        """Return the account's exposure, optionally after hypothetical fills (symbol, signed qty, price)."""
        conn = self._store.conn
        rules = self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        holdings = {p.symbol: p.holding for p in self._positions(conn, acct_num)}
        cash = self._cash(conn, acct_num)
        unsettled = self._unsettled_credits(conn, acct_num, today)
        for symbol, qty, price in changes:
            current = holdings.get(symbol)
            instrument = current.instrument if current and current.instrument else self._instrument(symbol)
            principal = cents(price * abs(qty) * instrument.multiplier)
            cash += principal if qty < 0 else -principal
            if qty < 0:
                unsettled += principal
            last = current.last if current else price
            holdings[symbol] = Holding(symbol, (current.quantity if current else 0) + qty, last, instrument)
        return self._exposure(conn, rules, list(holdings.values()), cash, unsettled)

    def instrument(self, symbol: str) -> Instrument:
        """Return a symbol's reference data, falling back to its option terms when the market no longer lists it."""
        return self._instrument(symbol)

    # --- read side ----------------------------------------------------------------------------

    def accounts(self) -> list[Account]:
        """Return all accounts, default first."""
        return [_account(r) for r in self._store.query("SELECT * FROM paper_accounts ORDER BY sort")]

    def account(self, acct_num: str) -> Account:
        """Return one account."""
        return _account(self._account_row(self._store.conn, acct_num))

    def positions(self, acct_num: str) -> list[Position]:
        """Return the account's positions with market values and gains."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        positions = self._positions(conn, acct_num)
        total = sum(abs(p.market_value_cents) for p in positions)
        records = []
        for p in positions:
            mv = p.market_value_cents
            prev_mv = cents(p.prev_close * p.quantity * p.multiplier)
            today_gain = mv - prev_mv if p.prev_close else 0
            chg = p.last - p.prev_close if p.prev_close else Decimal(0)
            records.append(
                Position(
                    acct_num=acct_num,
                    symbol=p.symbol,
                    security_type=p.instrument.security_type,
                    description=p.instrument.description,
                    cusip=p.instrument.cusip or None,
                    quantity=float(p.quantity),
                    last_price=price_float(p.last),
                    last_price_chg=price_float(chg),
                    last_price_chg_pct=pct(chg, p.prev_close) if p.prev_close else 0.0,
                    prev_close_price=price_float(p.prev_close),
                    market_value=dollars(mv),
                    cost_basis=dollars(p.basis_cents),
                    avg_cost_per_share=price_float(Decimal(p.basis_cents) / 100 / (p.quantity * p.multiplier)),
                    total_gain_loss=dollars(mv - p.basis_cents),
                    total_gain_loss_pct=pct(mv - p.basis_cents, p.basis_cents),
                    todays_gain_loss=dollars(today_gain),
                    todays_gain_loss_pct=pct(today_gain, prev_mv),
                    holding_pct=pct(abs(mv), total),
                    option=p.instrument.option,
                )
            )
        return records

    def balances(self, acct_num: str) -> Balance:
        """Return the account's balances and buying power."""
        conn = self._store.conn
        rules = self._rules(conn, acct_num)
        exp = self.exposure(acct_num)
        committed = self._commitments(acct_num)
        available = exp.capacity_cents - committed.usage_cents
        non_margin = max(0, available)
        withdraw = non_margin if rules.margin else max(0, min(non_margin, exp.free_cash_cents))
        if rules.margin:
            gross = exp.long_stock_cents + exp.short_stock_cents + exp.long_option_cents + exp.short_option_cents
            cash_bp = max(0, min(exp.free_cash_cents - committed.value_cents, non_margin))
            margin_bp: float | None = dollars(max(0, 2 * available))
            margin_equity: float | None = dollars(exp.equity_cents)
            equity_pct = pct(exp.equity_cents, gross) if gross else None
        else:
            cash_bp = non_margin
            margin_bp = margin_equity = equity_pct = None
        return Balance(
            acct_num=acct_num,
            as_of=iso_time(self._clock.now()),
            net_worth=dollars(exp.equity_cents),
            cash=dollars(exp.free_cash_cents),
            settled_cash=dollars(exp.settled_cash_cents),
            long_market_value=dollars(exp.long_stock_cents + exp.long_option_cents),
            short_market_value=dollars(exp.short_stock_cents + exp.short_option_cents),
            option_market_value=dollars(exp.long_option_cents - exp.short_option_cents),
            margin_debt=dollars(max(0, -exp.free_cash_cents)) if rules.margin else 0.0,
            margin_equity=margin_equity,
            margin_equity_pct=equity_pct,
            maintenance_requirement=dollars(exp.maintenance_cents),
            cash_buying_power=dollars(cash_bp),
            margin_buying_power=margin_bp,
            non_margin_buying_power=dollars(non_margin),
            available_to_withdraw=dollars(withdraw),
            cash_committed_to_open_orders=dollars(committed.value_cents),
            short_proceeds_held=dollars(exp.short_proceeds_cents),
        )

    def transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return the account's history between two trade dates (inclusive), newest first."""
        self._rules(self._store.conn, acct_num)
        rows = self._store.query(
            "SELECT * FROM paper_transactions WHERE acct_num = ? AND trade_date >= ? AND trade_date <= ?"
            " ORDER BY trade_date DESC, id DESC",
            (acct_num, (start or date.min).isoformat(), (end or date.max).isoformat()),
        )
        return [
            Transaction(
                txn_id=_txn_id(int(r["id"])),
                acct_num=acct_num,
                date=r["trade_date"],
                settle_date=r["settle_date"],
                txn_type=r["txn_type"],
                description=r["description"],
                symbol=r["symbol"],
                quantity=None if r["quantity"] is None else float(r["quantity"]),
                price=None if r["price"] is None else price_float(Decimal(r["price"])),
                amount=dollars(int(r["amount_cents"])),
                commission=dollars(int(r["commission_cents"])),
                fees=dollars(int(r["fees_cents"])),
            )
            for r in rows
        ]

    def options_summary(self, acct_num: str) -> OptionsSummary:
        """Return the option positions grouped by underlying, with the strategy they form."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        positions = self._positions(conn, acct_num)
        shares = {p.symbol: p.quantity for p in positions if p.instrument.option is None}
        groups: dict[str, list[_Pos]] = defaultdict(list)
        for p in positions:
            if p.instrument.option is not None:
                groups[p.instrument.option.underlying].append(p)
        underlyings = []
        total_mv = total_basis = 0
        for underlying in sorted(groups):
            legs = groups[underlying]
            price = self._prices(underlying)[0]
            leg_records = [_option_leg(p, price, today) for p in legs]
            mv = sum(p.market_value_cents for p in legs)
            basis = sum(p.basis_cents for p in legs)
            total_mv += mv
            total_basis += basis
            underlyings.append(
                OptionUnderlyingSummary(
                    underlying=underlying,
                    underlying_price=price_float(price),
                    strategy=_strategy(legs, shares.get(underlying, 0)),
                    legs=leg_records,
                    total_market_value=dollars(mv),
                    total_cost_basis=dollars(basis),
                    total_gain_loss=dollars(mv - basis),
                )
            )
        return OptionsSummary(
            acct_num=acct_num,
            underlyings=underlyings,
            total_market_value=dollars(total_mv),
            total_cost_basis=dollars(total_basis),
            total_gain_loss=dollars(total_mv - total_basis),
        )

    def closed_positions(self, acct_num: str, start: date | None, end: date | None) -> list[ClosedPosition]:
        """Return realised gain and loss per symbol for lots closed between two dates."""
        rows = self._closed_rows(acct_num, None, start, end)
        by_symbol: dict[str, list[sqlite3.Row]] = defaultdict(list)
        for r in rows:
            by_symbol[r["symbol"]].append(r)
        result = []
        for symbol in sorted(by_symbol):
            lots = by_symbol[symbol]
            proceeds = sum(int(r["proceeds_cents"]) for r in lots)
            cost = sum(int(r["cost_cents"]) for r in lots)
            long_term = sum(int(r["proceeds_cents"]) - int(r["cost_cents"]) for r in lots if r["term"] == "LONG")
            result.append(
                ClosedPosition(
                    acct_num=acct_num,
                    symbol=symbol,
                    description=self._instrument(symbol).description,
                    quantity=float(sum(int(r["quantity"]) for r in lots)),
                    proceeds=dollars(proceeds),
                    cost_basis=dollars(cost),
                    gain_loss=dollars(proceeds - cost),
                    gain_loss_pct=pct(proceeds - cost, cost),
                    short_term_gain_loss=dollars(proceeds - cost - long_term),
                    long_term_gain_loss=dollars(long_term),
                    wash_sale_disallowed=dollars(sum(int(r["disallowed_cents"]) for r in lots)),
                    last_closed_date=max(r["closed_date"] for r in lots),
                )
            )
        return result

    def closed_lots(self, acct_num: str, symbol: str, start: date | None, end: date | None) -> list[ClosedLotDetail]:
        """Return the closed lots of a symbol with realised gain and loss, newest first."""
        return [
            ClosedLotDetail(
                lot_id=_lot_id(int(r["lot_id"])),
                symbol=r["symbol"],
                quantity=float(r["quantity"]),
                acquired_date=r["acquired_date"],
                sold_date=r["closed_date"],
                cost_basis=dollars(int(r["cost_cents"])),
                proceeds=dollars(int(r["proceeds_cents"])),
                gain_loss=dollars(int(r["proceeds_cents"]) - int(r["cost_cents"])),
                gain_loss_pct=pct(int(r["proceeds_cents"]) - int(r["cost_cents"]), int(r["cost_cents"])),
                term=Term(r["term"]),
                wash_sale_ind=int(r["wash_qty"]) > 0,
            )
            for r in reversed(self._closed_rows(acct_num, symbol, start, end))
        ]

    def open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position, oldest first (the order sales draw from them)."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        last = self._prices(symbol)[0]
        lots = []
        for r in self._open_lot_rows(conn, acct_num, symbol):
            qty = int(r["quantity"])
            basis = int(r["basis_cents"])
            mv = cents(last * qty * int(r["multiplier"]))
            acquired = date.fromisoformat(r["acquired_date"])
            lots.append(
                LotDetail(
                    lot_id=_lot_id(int(r["id"])),
                    acquired_date=r["acquired_date"],
                    quantity=float(qty),
                    cost_basis=dollars(basis),
                    cost_per_share=price_float(Decimal(basis) / 100 / (qty * int(r["multiplier"]))),
                    market_value=dollars(mv),
                    gain_loss=dollars(mv - basis),
                    gain_loss_pct=pct(mv - basis, basis),
                    term=Term.LONG if qty > 0 and is_long_term(acquired, today) else Term.SHORT,
                    symbol=symbol,
                )
            )
        return lots

    def tax_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the lots a sale of this symbol could draw from (the open lots)."""
        return self.open_lots(acct_num, symbol)

    def loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return the shares on loan with their month-to-date lending income."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        result = []
        for loan in conn.execute("SELECT * FROM paper_loans WHERE acct_num = ? ORDER BY symbol", (acct_num,)):
            qty = min(int(loan["quantity"]), max(0, self.position_quantity(acct_num, loan["symbol"])))
            if qty == 0:
                continue
            last = self._prices(loan["symbol"])[0]
            result.append(
                LoanedSecurity(
                    acct_num=acct_num,
                    symbol=loan["symbol"],
                    quantity=float(qty),
                    rate=float(loan["rate_pct"]),
                    market_value=dollars(cents(last * qty)),
                    loan_date=loan["loan_date"],
                    income_mtd=dollars(self._lending_cents(conn, acct_num, today.replace(day=1), today)),
                )
            )
        return result

    def account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""
        rules = self.rules(acct_num)
        return [
            AccountFeature(
                acct_num=acct_num,
                acct_type=rules.acct_type.value,
                option_level=str(rules.option_level),
                margin_ind=rules.margin,
                short_sell_ind=rules.short_allowed,
                options_ind=rules.option_level > 0,
                crypto_ind=False,
                directed_trading_ind=not rules.retirement,
                penny_stock_ind=False,
            )
        ]

    def accruals(self, acct_num: str) -> list[AccrualDetail]:
        """Return month-to-date margin interest and the declared dividends on shares held."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        result = []
        debit_days = [b for _, b in self._end_of_day_cash(conn, acct_num, today.replace(day=1), today) if b < 0]
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
        for p in self._positions(conn, acct_num):
            div = next_dividend(self._dividends, p.symbol, today) if p.instrument.option is None else None
            if div is None or (div.ex_date - today).days > 31:
                continue
            qty = self._quantity_on(conn, acct_num, p.symbol, div.ex_date) if div.ex_date <= today else p.quantity
            if qty == 0:
                continue
            result.append(
                AccrualDetail(
                    acct_num=acct_num,
                    accrual_type="DIVIDEND",
                    accrual_amount=dollars(cents(div.per_share * qty)),
                    accrual_date=div.pay_date.isoformat(),
                    description=f"{p.symbol} dividend ${div.per_share}/share on {qty} shares,"
                    f" ex-date {div.ex_date.isoformat()}, payable {div.pay_date.isoformat()}",
                    symbol=p.symbol,
                    rate=float(div.per_share),
                )
            )
        return result

    def cash_accruals(self, acct_num: str) -> list[CashAccrualDetail]:
        """Return this month's daily core-interest accruals on a credit balance, oldest first."""
        conn = self._store.conn
        self._rules(conn, acct_num)
        today = trade_date(self._clock.now())
        return [
            CashAccrualDetail(
                acct_num=acct_num,
                cash_accrual_amount=dollars(daily_interest_cents(balance)),
                accrual_date=day.isoformat(),
                description=f"Core interest at {CORE_RATE_PCT}% (actual/365) on ${dollars(balance):,.2f}",
            )
            for day, balance in self._end_of_day_cash(conn, acct_num, today.replace(day=1), today)
            if balance > 0
        ]

    # --- internals --------------------------------------------------------------------------------

    def _account_row(self, conn: sqlite3.Connection, acct_num: str) -> sqlite3.Row:
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM paper_accounts WHERE acct_num = ?", (acct_num,)
        ).fetchone()
        if row is None:
            raise NotFound(f"Account {acct_num} does not exist")
        return row

    def _rules(self, conn: sqlite3.Connection, acct_num: str) -> AccountRules:
        row = self._account_row(conn, acct_num)
        return AccountRules(
            acct_num=acct_num,
            acct_type=AccountType(row["acct_type"]),
            margin=bool(row["margin"]),
            option_level=int(row["option_level"]),
            retirement=bool(row["retirement"]),
        )

    def _instrument(self, symbol: str) -> Instrument:
        try:
            return self._market.instrument(symbol)
        except NotFound:
            try:
                option: OptionContract | None = parse_option_symbol(symbol)
            except ValueError:
                option = None
            kind = SecurityType.OPTION if option else SecurityType.EQUITY
            return Instrument(symbol, symbol, kind, "", "", option)

    def _prices(self, symbol: str) -> tuple[Decimal, Decimal]:
        try:
            quote = self._market.quote(symbol)
        except NotFound:
            return Decimal(0), Decimal(0)
        last = price_of(quote.last)
        return last, price_of(quote.prev_close) if quote.prev_close is not None else last

    @staticmethod
    def _open_lot_rows(conn: sqlite3.Connection, acct_num: str, symbol: str) -> list[sqlite3.Row]:
        return conn.execute(
            "SELECT * FROM paper_lots WHERE acct_num = ? AND symbol = ? ORDER BY acquired_date, id",
            (acct_num, symbol),
        ).fetchall()

    def _positions(self, conn: sqlite3.Connection, acct_num: str) -> list[_Pos]:
        rows = conn.execute(
            "SELECT symbol, is_option, MAX(multiplier) AS mult, SUM(quantity) AS qty, SUM(basis_cents) AS basis"
            " FROM paper_lots WHERE acct_num = ? GROUP BY symbol ORDER BY is_option, symbol",
            (acct_num,),
        ).fetchall()
        result = []
        for r in rows:
            last, prev = self._prices(r["symbol"])
            result.append(
                _Pos(
                    r["symbol"],
                    int(r["qty"]),
                    int(r["basis"]),
                    int(r["mult"]),
                    self._instrument(r["symbol"]),
                    last,
                    prev,
                )
            )
        return result

    @staticmethod
    def _cash(conn: sqlite3.Connection, acct_num: str) -> int:
        row = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM paper_transactions WHERE acct_num = ?", (acct_num,)
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _unsettled_credits(conn: sqlite3.Connection, acct_num: str, today: date) -> int:
        row = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM paper_transactions"
            " WHERE acct_num = ? AND amount_cents > 0 AND settle_date > ?",
            (acct_num, today.isoformat()),
        ).fetchone()
        return int(row[0])

    def _exposure(
        self, conn: sqlite3.Connection, rules: AccountRules, holdings: list[Holding], cash: int, unsettled: int
    ) -> Exposure:
        short_proceeds = conn.execute(
            "SELECT COALESCE(-SUM(basis_cents), 0) FROM paper_lots"
            " WHERE acct_num = ? AND quantity < 0 AND is_option = 0",
            (rules.acct_num,),
        ).fetchone()[0]
        underlyings = {h.option.underlying for h in holdings if h.option is not None and h.quantity < 0}
        return exposure(
            holdings,
            margin=rules.margin,
            naked_allowed=rules.naked_allowed,
            cash_cents=cash,
            unsettled_credit_cents=unsettled if not rules.margin else 0,
            short_proceeds_cents=int(short_proceeds),
            underlying_prices={u: self._prices(u)[0] for u in underlyings},
        )

    @staticmethod
    def _quantity_on(conn: sqlite3.Connection, acct: str, symbol: str, ex_date: date) -> int:
        """Return the signed quantity held at the end of the day before ``ex_date``."""
        ex = ex_date.isoformat()
        open_qty = conn.execute(
            "SELECT COALESCE(SUM(quantity), 0) FROM paper_lots WHERE acct_num = ? AND symbol = ? AND acquired_date < ?",
            (acct, symbol, ex),
        ).fetchone()[0]
        closed_qty = conn.execute(
            "SELECT COALESCE(SUM(CASE side WHEN 'LONG' THEN quantity ELSE -quantity END), 0) FROM paper_closed_lots"
            " WHERE acct_num = ? AND symbol = ? AND acquired_date < ? AND closed_date >= ?",
            (acct, symbol, ex, ex),
        ).fetchone()[0]
        return int(open_qty) + int(closed_qty)

    @staticmethod
    def _end_of_day_cash(conn: sqlite3.Connection, acct: str, first: date, last: date) -> list[tuple[date, int]]:
        balance = int(
            conn.execute(
                "SELECT COALESCE(SUM(amount_cents), 0) FROM paper_transactions WHERE acct_num = ? AND trade_date < ?",
                (acct, first.isoformat()),
            ).fetchone()[0]
        )
        moves = dict(
            conn.execute(
                "SELECT trade_date, SUM(amount_cents) FROM paper_transactions WHERE acct_num = ?"
                " AND trade_date >= ? AND trade_date <= ? GROUP BY trade_date",
                (acct, first.isoformat(), last.isoformat()),
            ).fetchall()
        )
        opened = conn.execute("SELECT opened FROM paper_accounts WHERE acct_num = ?", (acct,)).fetchone()[0]
        days = []
        day = max(first, date.fromisoformat(opened))
        while day <= last:
            balance += int(moves.get(day.isoformat(), 0))
            days.append((day, balance))
            day += timedelta(days=1)
        return days

    def _lending_cents(self, conn: sqlite3.Connection, acct: str, first: date, last: date) -> int:
        total = Decimal(0)
        for loan in conn.execute("SELECT * FROM paper_loans WHERE acct_num = ?", (acct,)):
            start = max(first, date.fromisoformat(loan["loan_date"]))
            days = (last - start).days + 1
            if days <= 0:
                continue
            qty = min(int(loan["quantity"]), max(0, self.position_quantity(acct, loan["symbol"])))
            value = self._prices(loan["symbol"])[0] * qty
            total += value * Decimal(loan["rate_pct"]) / 100 / 365 * days
        return cents(total)

    def _closed_rows(
        self, acct_num: str, symbol: str | None, start: date | None, end: date | None
    ) -> list[sqlite3.Row]:
        self._rules(self._store.conn, acct_num)
        return self._store.query(
            "SELECT * FROM paper_closed_lots WHERE acct_num = ? AND (? IS NULL OR symbol = ?)"
            " AND closed_date >= ? AND closed_date <= ? ORDER BY closed_date, id",
            (acct_num, symbol, symbol, (start or date.min).isoformat(), (end or date.max).isoformat()),
        )

    # --- events ---------------------------------------------------------------------------------

    def _event(self, event_type: EventType, category: EventCategory, desc: Mapping[str, object]) -> AccountEvent:
        return AccountEvent(
            event_type=event_type.value, category=category, desc=dict(desc), time=iso_time(self._clock.now())
        )

    def _publish_balance(self, acct_num: str, extra: dict[str, object]) -> None:
        if self.outbox.quiet:
            return
        bal = self.balances(acct_num)
        desc: dict[str, object] = {
            "acct_num": acct_num,
            "cash": bal.cash,
            "net_worth": bal.net_worth,
            "cash_buying_power": bal.cash_buying_power,
            "margin_buying_power": bal.margin_buying_power,
            "margin_debt": bal.margin_debt,
            **extra,
        }
        self.outbox.publish(self._events, self._event(EventType.BALANCE_UPDATE, EventCategory.BALANCE, desc))

    def _publish_fill_events(
        self, conn: sqlite3.Connection, fill: Fill, held_before: int, realized: int, wash: bool, lot_changes: int
    ) -> None:
        if self.outbox.quiet:
            return
        base = {"acct_num": fill.acct_num, "symbol": fill.symbol, "conf_num": fill.conf_num}
        row = conn.execute(
            "SELECT COALESCE(SUM(quantity), 0), COALESCE(SUM(basis_cents), 0) FROM paper_lots"
            " WHERE acct_num = ? AND symbol = ?",
            (fill.acct_num, fill.symbol),
        ).fetchone()
        position = {
            **base,
            "quantity": int(row[0]),
            "previous_quantity": held_before,
            "change": fill.quantity,
            "price": price_float(fill.price),
        }
        self.outbox.publish(self._events, self._event(EventType.POSITION_CHANGE, EventCategory.POSITION, position))
        self._publish_balance(fill.acct_num, {"conf_num": fill.conf_num, "symbol": fill.symbol})
        basis = {
            **base,
            "cost_basis": dollars(int(row[1])),
            "quantity": int(row[0]),
            "lot_changes": lot_changes,
            "realized_gain_loss": dollars(realized),
            "wash_sale": wash,
        }
        self.outbox.publish(self._events, self._event(EventType.COST_BASIS_UPDATE, EventCategory.POSITION, basis))


def _txn_id(row_id: int) -> str:
    return f"TX{row_id:08d}"


def _lot_id(row_id: int) -> str:
    return f"LOT{row_id:07d}"


def _txn_type(is_option: bool, buying: bool, closing: bool) -> str:
    if is_option:
        return "OPTION_BUY" if buying else "OPTION_SELL"
    if buying:
        return "BUY_TO_COVER" if closing else "BUY"
    return "SELL" if closing else "SELL_SHORT"


def _fill_description(txn_type: str, instrument: Instrument, qty: int, price: Decimal, closing: bool) -> str:
    if txn_type in ("OPTION_EXPIRED", "OPTION_CASH_SETTLED"):
        what = "EXPIRED WORTHLESS" if txn_type == "OPTION_EXPIRED" else f"CASH SETTLED AT ${price}"
        return f"{instrument.description} {what}"
    verb = {
        "BUY": "YOU BOUGHT",
        "BUY_TO_COVER": "YOU BOUGHT TO COVER",
        "SELL": "YOU SOLD",
        "SELL_SHORT": "YOU SOLD SHORT",
        "OPTION_BUY": "YOU BOUGHT",
        "OPTION_SELL": "YOU SOLD",
    }[txn_type]
    if instrument.option is not None:
        verb += " CLOSING TRANSACTION" if closing else " OPENING TRANSACTION"
    return f"{verb} {qty} {instrument.description} ({instrument.symbol}) @ {price.normalize():f}"


def _account(row: sqlite3.Row) -> Account:
    return Account(
        acct_num=row["acct_num"],
        acct_type=AccountType(row["acct_type"]),
        name=row["name"],
        description=row["description"],
        margin_ind=bool(row["margin"]),
        option_level=int(row["option_level"]),
        retirement_ind=bool(row["retirement"]),
        is_default=bool(row["is_default"]),
    )


def _option_leg(p: _Pos, underlying: Decimal, today: date) -> OptionLegSummary:
    option = p.instrument.option
    assert option is not None
    mv = p.market_value_cents
    strike = Decimal(str(option.strike))
    itm = underlying > strike if option.option_type is OptionType.CALL else underlying < strike
    return OptionLegSummary(
        symbol=p.symbol,
        description=p.instrument.description,
        option_type=option.option_type,
        strike=option.strike,
        expiration=option.expiration.isoformat(),
        days_to_expiration=max(0, (option.expiration - today).days),
        quantity=float(p.quantity),
        last_price=price_float(p.last),
        market_value=dollars(mv),
        cost_basis=dollars(p.basis_cents),
        gain_loss=dollars(mv - p.basis_cents),
        gain_loss_pct=pct(mv - p.basis_cents, p.basis_cents),
        in_the_money=itm,
    )


def _strategy(legs: list[_Pos], shares: int) -> str:
    """Name the strategy the option legs on one underlying form."""
    options = [(p.instrument.option, p.quantity) for p in legs if p.instrument.option is not None]
    if len(options) == 1:
        option, qty = options[0]
        if option.option_type is OptionType.CALL and qty < 0 and shares >= -qty * option.multiplier:
            return "COVERED_CALL"
        return "SINGLE"
    if len(options) != 2:
        return "CUSTOM"
    (a, qa), (b, qb) = options
    same_sign = (qa > 0) == (qb > 0)
    if a.option_type == b.option_type:
        if a.expiration == b.expiration and a.strike != b.strike and not same_sign and abs(qa) == abs(qb):
            return "VERTICAL"
        if a.expiration != b.expiration and a.strike == b.strike and not same_sign:
            return "CALENDAR"
        return "CUSTOM"
    if a.expiration == b.expiration and same_sign and abs(qa) == abs(qb):
        return "STRADDLE" if a.strike == b.strike else "STRANGLE"
    return "CUSTOM"
