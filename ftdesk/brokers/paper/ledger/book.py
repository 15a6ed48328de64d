"""The paper ledger's rows and what they are worth: accounts, transactions, lots, positions, exposure, balances.

Cash is the sum of the transactions; a position is the sum of its open lots; balances and buying
power follow from those and the market (rules in ``ledger.risk``), less what working orders hold
back (the order engine's ``CommitmentSource``).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal

from ftdesk.brokers.paper.ledger.money import cents, dollars, pct, price_of, quoted_day, trade_date
from ftdesk.brokers.paper.ledger.outbox import Outbox
from ftdesk.brokers.paper.ledger.risk import Exposure, Holding, exposure
from ftdesk.brokers.paper.ledger.types import AccountRules, Commitment, CommitmentSource
from ftdesk.brokers.paper.market.simulator import MarketSimulator
from ftdesk.brokers.paper.options import parse_option_symbol
from ftdesk.brokers.paper.ports import EventSink, Instrument, MarketView
from ftdesk.brokers.paper.quantities import ZERO, shares, stored
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import iso_time
from ftdesk.domain.accounts import AccountType, Balance, OptionContract, SecurityType
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.events import AccountEvent, EventType, account_event


@dataclass(frozen=True)
class Pos:
    """A position priced at the market: its lots summed, with the last and previous close prices."""

    symbol: str
    quantity: Decimal
    basis_cents: int
    multiplier: int
    instrument: Instrument
    last: Decimal
    prev_close: Decimal
    today_quantity: Decimal = ZERO  # the part bought (or sold short) in the quoted session
    today_cost_cents: int = 0  # what that part cost at its fill prices, commission included
    unpriced: str | None = None  # why the market gives no price: then last and prev_close are the booked price

    @property
    def day_gain_cents(self) -> int:
        """Return the day's gain of the shares held: from the fill price if bought today, else from the previous close.

        Sales made today are not here: their realised day gain is ``Book.realized_day_cents``.
        """
        overnight = self.quantity - self.today_quantity
        since_close = cents((self.last - self.prev_close) * overnight * self.multiplier) if self.prev_close else 0
        since_fill = cents(self.last * self.today_quantity * self.multiplier) - self.today_cost_cents
        return since_close + since_fill

    @property
    def day_start_cents(self) -> int:
        """Return what the shares held were worth at the start of the day (previous close, or cost if bought today)."""
        overnight = self.quantity - self.today_quantity
        return cents(self.prev_close * overnight * self.multiplier) + self.today_cost_cents

    @property
    def market_value_cents(self) -> int:
        """Return the market value in cents."""
        return cents(self.last * self.quantity * self.multiplier)

    @property
    def holding(self) -> Holding:
        """Return the position as the risk rules see it."""
        return Holding(self.symbol, self.quantity, self.last, self.instrument)


class Book:
    """The ledger's rows and what they are worth: accounts, transactions, lots, positions, exposure, balances."""

    def __init__(self, store: PaperStore, market: MarketView, clock: Clock, events: EventSink, outbox: Outbox) -> None:
        self._store = store
        self._market = market
        self._clock = clock
        self._events = events
        self.outbox = outbox
        self.commitments: CommitmentSource = lambda _acct: Commitment()
        # Each account's positions as last priced, with what they were priced on (see ``positions``).
        self._priced: dict[str, tuple[tuple[object, ...], list[Pos]]] = {}
        self._session_of_second: tuple[int, date] | None = None  # (clock second, its quoted session)

    def account_row(self, conn: sqlite3.Connection, acct_num: str) -> sqlite3.Row:
        """Return an account's row; NotFound for an unknown account."""
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM paper_accounts WHERE acct_num = ?", (acct_num,)
        ).fetchone()
        if row is None:
            raise NotFound(f"Account {acct_num} does not exist")
        return row

    def rules(self, conn: sqlite3.Connection, acct_num: str) -> AccountRules:
        """Return what an account may do; NotFound for an unknown account."""
        row = self.account_row(conn, acct_num)
        return AccountRules(
            acct_num=acct_num,
            acct_type=AccountType(row["acct_type"]),
            margin=bool(row["margin"]),
            option_level=int(row["option_level"]),
            retirement=bool(row["retirement"]),
        )

    def instrument(self, symbol: str) -> Instrument:
        """Return a symbol's reference data, falling back to its option terms when the market no longer lists it."""
        try:
            return self._market.instrument(symbol)
        except NotFound:
            try:
                option: OptionContract | None = parse_option_symbol(symbol)
            except ValueError:
                option = None
            kind = SecurityType.OPTION if option else SecurityType.EQUITY
            return Instrument(symbol, symbol, kind, "", "", option)

    def prices(self, symbol: str) -> tuple[Decimal, Decimal]:
        """Return a symbol's last price and previous close (zeros when the market does not quote it)."""
        return self.quoted(symbol) or (Decimal(0), Decimal(0))

    def quoted(self, symbol: str) -> tuple[Decimal, Decimal] | None:
        """Return a symbol's last price and previous close, or None when the market does not quote it."""
        try:
            quote = self._market.quote(symbol)
        except NotFound:
            return None
        last = price_of(quote.last)
        return last, price_of(quote.prev_close) if quote.prev_close is not None else last

    @staticmethod
    def open_lot_rows(conn: sqlite3.Connection, acct_num: str, symbol: str) -> list[sqlite3.Row]:
        """Return the open lots of a position, oldest first (the order sales draw from them)."""
        return conn.execute(
            "SELECT * FROM paper_lots WHERE acct_num = ? AND symbol = ? ORDER BY acquired_date, id",
            (acct_num, symbol),
        ).fetchall()

    def positions(self, conn: sqlite3.Connection, acct_num: str) -> list[Pos]:
        """Return the account's positions priced at the market, with the part opened in the quoted session.

        The answer is kept and handed out again (the same list, of frozen ``Pos``) while nothing it was made
        of has changed: the ledger's rows (``PaperStore.version``), the quoted session, the market's second
        (the simulated market is a function of symbol and second; reference data of options too) and, on
        any other market, each symbol's last price and previous close, asked of it again on every call, so
        a market that moves between its ticks is never answered from an old price.
        Reading the lots, pricing every position and reading its reference data was most of what a
        portfolio read cost.
        """
        version = self._store.version()
        key = (version, self._quoted_session(), int(self._market.now().timestamp()))
        kept = self._priced.get(acct_num)
        if version is not None and kept is not None and kept[0] == key and self._at_market(kept[1]):
            return kept[1]
        result = self._price_positions(conn, acct_num)
        if version is not None:
            self._priced[acct_num] = (key, result)
        return result

    def _quoted_session(self) -> date:
        """Return ``quoted_day`` of the clock's now, worked out once per clock second.

        A New York date changes at midnight there, a whole second, so every moment of one second has the same
        session; converting to New York time on every read was a tenth of a positions read.
        """
        now = self._clock.now()
        second = math.floor(now.timestamp())
        kept = self._session_of_second
        if kept is not None and kept[0] == second:
            return kept[1]
        day = quoted_day(now)
        self._session_of_second = (second, day)
        return day

    def _at_market(self, positions: list[Pos]) -> bool:
        if isinstance(self._market, MarketSimulator):  # its quotes change only with the second, in the key
            return True
        return all(
            self.quoted(p.symbol) is None if p.unpriced else self.quoted(p.symbol) == (p.last, p.prev_close)
            for p in positions
        )

    def _price_positions(self, conn: sqlite3.Connection, acct_num: str) -> list[Pos]:
        # A wash sale's disallowed loss raises a lot's basis for tax, not what its shares cost at the fill.
        rows = conn.execute(
            "SELECT symbol, is_option, MAX(multiplier) AS mult, SUM(quantity) AS qty, SUM(basis_cents) AS basis,"
            " SUM(CASE WHEN acquired_date >= :day THEN quantity ELSE 0 END) AS today_qty,"
            " SUM(CASE WHEN acquired_date >= :day THEN basis_cents - wash_adj_cents ELSE 0 END) AS today_cost"
            " FROM paper_lots WHERE acct_num = :acct GROUP BY symbol ORDER BY is_option, symbol",
            {"day": quoted_day(self._clock.now()).isoformat(), "acct": acct_num},
        ).fetchall()
        result = []
        for r in rows:
            quoted = self.quoted(r["symbol"])
            unpriced = None
            if quoted is None:
                # Not a zero (a -100% loss that never happened) nor a guess: the price it was booked at, flagged.
                booked = Decimal(int(r["basis"])) / 100 / (shares(r["qty"]) * int(r["mult"]) or 1)
                quoted = (booked, booked)
                unpriced = f"The market gives no quote for {r['symbol']}: valued at the price it was booked at"
            last, prev = quoted
            result.append(
                Pos(
                    r["symbol"],
                    shares(r["qty"]),
                    int(r["basis"]),
                    int(r["mult"]),
                    self.instrument(r["symbol"]),
                    last,
                    prev,
                    shares(r["today_qty"]),
                    int(r["today_cost"]),
                    unpriced,
                )
            )
        return result

    def realized_day_cents(self, conn: sqlite3.Connection, acct_num: str) -> int:
        """Return the realised day gain of today's sales: from the previous close, or the fill if bought today."""
        day = quoted_day(self._clock.now()).isoformat()
        total = 0
        for r in conn.execute(
            "SELECT symbol, side, quantity, acquired_date, cost_cents, proceeds_cents FROM paper_closed_lots"
            " WHERE acct_num = ? AND closed_date >= ?",
            (acct_num, day),
        ):
            cost, proceeds = int(r["cost_cents"]), int(r["proceeds_cents"])
            if r["acquired_date"] < day:  # held overnight: the day starts from the previous close, not the cost
                prev_close = self.prices(r["symbol"])[1]
                start = cents(prev_close * shares(r["quantity"]) * self.instrument(r["symbol"]).multiplier)
                cost, proceeds = (start, proceeds) if r["side"] == "LONG" else (cost, start)
            total += proceeds - cost
        return total

    @staticmethod
    def cash(conn: sqlite3.Connection, acct_num: str) -> int:
        """Return the account's ledger cash: the sum of its transactions."""
        row = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM paper_transactions WHERE acct_num = ?", (acct_num,)
        ).fetchone()
        return int(row[0])

    @staticmethod
    def unsettled_credits(conn: sqlite3.Connection, acct_num: str, today: date) -> int:
        """Return the credits that settle after ``today``."""
        row = conn.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM paper_transactions"
            " WHERE acct_num = ? AND amount_cents > 0 AND settle_date > ?",
            (acct_num, today.isoformat()),
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _short_proceeds(conn: sqlite3.Connection, acct_num: str) -> int:
        row = conn.execute(
            "SELECT COALESCE(-SUM(basis_cents), 0) FROM paper_lots"
            " WHERE acct_num = ? AND quantity < 0 AND is_option = 0",
            (acct_num,),
        ).fetchone()
        return int(row[0])

    def _exposure_of(
        self, rules: AccountRules, holdings: list[Holding], cash: int, unsettled: int, short_proceeds: int
    ) -> Exposure:
        underlyings = {h.option.underlying for h in holdings if h.option is not None and h.quantity < 0}
        return exposure(
            holdings,
            margin=rules.margin,
            naked_allowed=rules.naked_allowed,
            cash_cents=cash,
            unsettled_credit_cents=unsettled if not rules.margin else 0,
            short_proceeds_cents=int(short_proceeds),
            underlying_prices={u: self.prices(u)[0] for u in underlyings},
        )

    @staticmethod
    def quantity_on(conn: sqlite3.Connection, acct: str, symbol: str, ex_date: date) -> Decimal:
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
        return shares(open_qty) + shares(closed_qty)

    @staticmethod
    def end_of_day_cash(conn: sqlite3.Connection, acct: str, first: date, last: date) -> list[tuple[date, int]]:
        """Return the ledger cash at the end of each day from ``first`` to ``last`` (from the opening day on)."""
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

    def lending_cents(self, conn: sqlite3.Connection, acct: str, first: date, last: date) -> int:
        """Return the lending income accrued from ``first`` to ``last`` on the shares on loan."""
        total = Decimal(0)
        for loan in conn.execute("SELECT * FROM paper_loans WHERE acct_num = ?", (acct,)):
            start = max(first, date.fromisoformat(loan["loan_date"]))
            days = (last - start).days + 1
            if days <= 0:
                continue
            qty = min(shares(loan["quantity"]), max(ZERO, self.position_quantity(acct, loan["symbol"])))
            value = self.prices(loan["symbol"])[0] * qty
            total += value * Decimal(loan["rate_pct"]) / 100 / 365 * days
        return cents(total)

    def closed_rows(self, acct_num: str, symbol: str | None, start: date | None, end: date | None) -> list[sqlite3.Row]:
        """Return the lots closed between two dates, oldest first; NotFound for an unknown account."""
        self.rules(self._store.conn, acct_num)
        return self._store.query(
            "SELECT * FROM paper_closed_lots WHERE acct_num = ? AND (? IS NULL OR symbol = ?)"
            " AND closed_date >= ? AND closed_date <= ? ORDER BY closed_date, id",
            (acct_num, symbol, symbol, (start or date.min).isoformat(), (end or date.max).isoformat()),
        )

    def insert_txn(
        self,
        conn: sqlite3.Connection,
        acct_num: str,
        day: date,
        settle: date,
        txn_type: str,
        description: str,
        symbol: str | None,
        quantity: Decimal | int | None,
        price: Decimal | None,
        amount_cents: int,
        commission_cents: int,
        fees_cents: int,
        conf_num: str | None,
    ) -> str:
        """Record one transaction and return its id."""
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
                None if quantity is None else stored(quantity),
                None if price is None else str(price),
                amount_cents,
                commission_cents,
                fees_cents,
                conf_num,
                iso_time(self._clock.now()),
            ),
        )
        return txn_id(int(cur.lastrowid or 0))

    def position_quantity(self, acct_num: str, symbol: str) -> Decimal:
        """Return the signed quantity held of a symbol (0 when none)."""
        row = self._store.query_one(
            "SELECT COALESCE(SUM(quantity), 0) AS q FROM paper_lots WHERE acct_num = ? AND symbol = ?",
            (acct_num, symbol),
        )
        return shares(row["q"]) if row else ZERO

    def exposure(self, acct_num: str, changes: Iterable[tuple[str, Decimal, Decimal]] = ()) -> Exposure:
        """Return the account's exposure, optionally after hypothetical fills (symbol, signed qty, price)."""
        return self.what_if(acct_num)(changes)

    def what_if(self, acct_num: str) -> Callable[[Iterable[tuple[str, Decimal, Decimal]]], Exposure]:
        """Return the account's exposure after hypothetical fills, as a function: the account is read once.

        The order engine asks it once per working order when it sums what they hold back (each balance
        event does): reading and pricing the positions, cash and short proceeds again for every order made
        a fill with 200 working orders cost most of a second.
        """
        conn = self._store.conn
        rules = self.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        base = {p.symbol: p.holding for p in self.positions(conn, acct_num)}
        base_cash = self.cash(conn, acct_num)
        base_unsettled = self.unsettled_credits(conn, acct_num, today)
        short_proceeds = self._short_proceeds(conn, acct_num)

        base_exposure = self._exposure_of(rules, list(base.values()), base_cash, base_unsettled, short_proceeds)
        # Symbols whose shares can cover a short option: a change of one of them may change the option cover.
        covering = {h.option.underlying for h in base.values() if h.option is not None and h.quantity < 0}

        def after(changes: Iterable[tuple[str, Decimal, Decimal]]) -> Exposure:
            holdings, cash, unsettled = dict(base), base_cash, base_unsettled
            changed: list[str] = []
            for symbol, qty, price in changes:
                current = holdings.get(symbol)
                instrument = current.instrument if current and current.instrument else self.instrument(symbol)
                principal = cents(price * abs(qty) * instrument.multiplier)
                cash += principal if qty < 0 else -principal
                if qty < 0:
                    unsettled += principal
                last = current.last if current else price
                holdings[symbol] = Holding(symbol, (current.quantity if current else 0) + qty, last, instrument)
                changed.append(symbol)
            if not changed:
                return base_exposure
            if all(_plain_stock(holdings[s]) and s not in covering for s in changed):
                # Stock no short option leans on: the option cover stands; only the stock sums move.
                return _with_stock(base_exposure, base, holdings, changed, cash, unsettled if not rules.margin else 0)
            return self._exposure_of(rules, list(holdings.values()), cash, unsettled, short_proceeds)

        return after

    def balances(self, acct_num: str) -> Balance:
        """Return the account's balances and buying power."""
        conn = self._store.conn
        rules = self.rules(conn, acct_num)
        exp = self.exposure(acct_num)
        committed = self.commitments(acct_num)
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

    def publish(self, event_type: EventType, desc: Mapping[str, object]) -> None:
        """Announce an account event (named and categorised by the domain's one table), after the unit of work."""
        event = account_event(event_type.value, desc, time=iso_time(self._clock.now()))
        self.outbox.publish(self._events, event)

    def publish_balance(self, acct_num: str, extra: dict[str, object]) -> None:
        """Announce the account's balances, read once the current unit of work has committed.

        Built after the commit (``Outbox.publish_built``): the fill and position events before it are heard
        without waiting for the balances, whose buying power prices every working order of the account.
        """
        if self.outbox.quiet:
            return

        def build() -> AccountEvent:
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
            return account_event(EventType.BALANCE_UPDATE.value, desc, time=iso_time(self._clock.now()))

        self.outbox.publish_built(self._events, build)


def txn_id(row_id: int) -> str:
    """Return the transaction id the trader sees for a transaction row."""
    return f"TX{row_id:08d}"


def _plain_stock(holding: Holding) -> bool:
    """Return True for a holding that is not an option."""
    return holding.instrument is None or holding.instrument.security_type is not SecurityType.OPTION


def _with_stock(
    base: Exposure,
    before: Mapping[str, Holding],
    after: Mapping[str, Holding],
    changed: Iterable[str],
    cash: int,
    unsettled: int,
) -> Exposure:
    """Return ``base`` with the stock of ``changed`` revalued as ``after`` holds it, and the new cash."""
    long_stock, short_stock = base.long_stock_cents, base.short_stock_cents
    for symbol in dict.fromkeys(changed):
        for holding, sign in ((before.get(symbol), -1), (after[symbol], 1)):
            if holding is None:
                continue
            value = holding.market_value_cents
            long_stock += sign * max(value, 0)
            short_stock += sign * max(-value, 0)
    return replace(base, cash_cents=cash, unsettled_credit_cents=unsettled, long_stock_cents=long_stock,
                   short_stock_cents=short_stock)  # fmt: skip
