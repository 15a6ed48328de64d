"""What the paper ledger shows the trader: positions, transactions, option strategies, lots, loans, features."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from datetime import date
from decimal import Decimal

from ftdesk.brokers.paper.ledger.book import Book, Pos, txn_id
from ftdesk.brokers.paper.ledger.money import cents, dollars, is_long_term, pct, price_float, trade_date
from ftdesk.brokers.paper.quantities import ZERO, number, shares
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import (
    Account,
    AccountFeature,
    AccountType,
    ClosedLotDetail,
    ClosedPosition,
    LoanedSecurity,
    LotDetail,
    OptionLegSummary,
    OptionsSummary,
    OptionType,
    OptionUnderlyingSummary,
    Position,
    Term,
    Transaction,
    option_level_text,
)
from ftdesk.domain.base import SharedList
from ftdesk.domain.clock import Clock


class Reports:
    """What the trader reads of an account: positions, history, option strategies, lots, loans and features."""

    def __init__(self, store: PaperStore, book: Book, clock: Clock) -> None:
        self._store = store
        self._book = book
        self._clock = clock
        # Each account's positions as last shown, and the priced positions they were made from.
        self._shown: dict[str, tuple[list[Pos], SharedList[Position]]] = {}

    def accounts(self) -> list[Account]:
        """Return all accounts, default first."""
        return [_account(r) for r in self._store.query("SELECT * FROM paper_accounts ORDER BY sort")]

    def account(self, acct_num: str) -> Account:
        """Return one account."""
        return _account(self._book.account_row(self._store.conn, acct_num))

    def positions(self, acct_num: str) -> list[Position]:
        """Return the account's positions with market values and gains.

        Made again only when ``Book.positions`` priced them afresh; until then the same ``SharedList`` (so the
        web edge serialises it once): callers read it and never change it.
        """
        conn = self._store.conn
        positions = self._book.positions(conn, acct_num)
        shown = self._shown.get(acct_num)
        if shown is not None and shown[0] is positions:
            return shown[1]
        self._book.rules(conn, acct_num)
        records = SharedList(self._position_records(acct_num, positions))
        self._shown[acct_num] = (positions, records)
        return records

    def _position_records(self, acct_num: str, positions: list[Pos]) -> list[Position]:
        total = sum(abs(p.market_value_cents) for p in positions)
        records = []
        for p in positions:
            mv = p.market_value_cents
            today_gain = 0 if p.unpriced else p.day_gain_cents
            gain = 0 if p.unpriced else mv - p.basis_cents
            chg = p.last - p.prev_close if p.prev_close else Decimal(0)
            records.append(
                Position(
                    acct_num=acct_num,
                    symbol=p.symbol,
                    security_type=p.instrument.security_type,
                    description=p.instrument.description,
                    cusip=p.instrument.cusip or None,
                    quantity=number(p.quantity),
                    last_price=price_float(p.last),
                    last_price_chg=price_float(chg),
                    last_price_chg_pct=pct(chg, p.prev_close) if p.prev_close else 0.0,
                    prev_close_price=price_float(p.prev_close),
                    market_value=dollars(mv),
                    cost_basis=dollars(p.basis_cents),
                    avg_cost_per_share=price_float(Decimal(p.basis_cents) / 100 / (p.quantity * p.multiplier)),
                    total_gain_loss=dollars(gain),
                    total_gain_loss_pct=pct(gain, p.basis_cents),
                    todays_gain_loss=dollars(today_gain),
                    todays_gain_loss_pct=pct(today_gain, p.day_start_cents),
                    holding_pct=pct(abs(mv), total),
                    option=p.instrument.option,
                    unpriced_reason=p.unpriced,
                )
            )
        return records

    def transactions(self, acct_num: str, start: date | None, end: date | None) -> list[Transaction]:
        """Return the account's history between two trade dates (inclusive), newest first."""
        self._book.rules(self._store.conn, acct_num)
        rows = self._store.query(
            "SELECT * FROM paper_transactions WHERE acct_num = ? AND trade_date >= ? AND trade_date <= ?"
            " ORDER BY trade_date DESC, id DESC",
            (acct_num, (start or date.min).isoformat(), (end or date.max).isoformat()),
        )
        return [
            Transaction(
                txn_id=txn_id(int(r["id"])),
                acct_num=acct_num,
                date=r["trade_date"],
                settle_date=r["settle_date"],
                txn_type=r["txn_type"],
                description=r["description"],
                symbol=r["symbol"],
                quantity=None if r["quantity"] is None else number(shares(r["quantity"])),
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
        self._book.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        positions = self._book.positions(conn, acct_num)
        held = {p.symbol: p.quantity for p in positions if p.instrument.option is None}
        groups: dict[str, list[Pos]] = defaultdict(list)
        for p in positions:
            if p.instrument.option is not None:
                groups[p.instrument.option.underlying].append(p)
        underlyings = []
        total_mv = total_basis = 0
        for underlying in sorted(groups):
            legs = groups[underlying]
            price = self._book.prices(underlying)[0]
            leg_records = [_option_leg(p, price, today) for p in legs]
            mv = sum(p.market_value_cents for p in legs)
            basis = sum(p.basis_cents for p in legs)
            total_mv += mv
            total_basis += basis
            underlyings.append(
                OptionUnderlyingSummary(
                    underlying=underlying,
                    underlying_price=price_float(price),
                    strategy=_strategy(legs, held.get(underlying, ZERO)),
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
        rows = self._book.closed_rows(acct_num, None, start, end)
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
                    description=self._book.instrument(symbol).description,
                    quantity=number(sum((shares(r["quantity"]) for r in lots), ZERO)),
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
                quantity=number(shares(r["quantity"])),
                acquired_date=r["acquired_date"],
                sold_date=r["closed_date"],
                cost_basis=dollars(int(r["cost_cents"])),
                proceeds=dollars(int(r["proceeds_cents"])),
                gain_loss=dollars(int(r["proceeds_cents"]) - int(r["cost_cents"])),
                gain_loss_pct=pct(int(r["proceeds_cents"]) - int(r["cost_cents"]), int(r["cost_cents"])),
                term=Term(r["term"]),
                wash_sale_ind=shares(r["wash_qty"]) > 0,
            )
            for r in reversed(self._book.closed_rows(acct_num, symbol, start, end))
        ]

    def open_lots(self, acct_num: str, symbol: str) -> list[LotDetail]:
        """Return the open lots of a position, oldest first (the order sales draw from them)."""
        conn = self._store.conn
        self._book.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        last = self._book.prices(symbol)[0]
        lots = []
        for r in self._book.open_lot_rows(conn, acct_num, symbol):
            qty = shares(r["quantity"])
            basis = int(r["basis_cents"])
            mv = cents(last * qty * int(r["multiplier"]))
            acquired = date.fromisoformat(r["acquired_date"])
            lots.append(
                LotDetail(
                    lot_id=_lot_id(int(r["id"])),
                    acquired_date=r["acquired_date"],
                    quantity=number(qty),
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

    def loaned_securities(self, acct_num: str) -> list[LoanedSecurity]:
        """Return the shares on loan with their month-to-date lending income."""
        conn = self._store.conn
        self._book.rules(conn, acct_num)
        today = trade_date(self._clock.now())
        result = []
        for loan in conn.execute("SELECT * FROM paper_loans WHERE acct_num = ? ORDER BY symbol", (acct_num,)):
            qty = min(shares(loan["quantity"]), max(ZERO, self._book.position_quantity(acct_num, loan["symbol"])))
            if qty == 0:
                continue
            last = self._book.prices(loan["symbol"])[0]
            result.append(
                LoanedSecurity(
                    acct_num=acct_num,
                    symbol=loan["symbol"],
                    quantity=number(qty),
                    rate=float(loan["rate_pct"]),
                    market_value=dollars(cents(last * qty)),
                    loan_date=loan["loan_date"],
                    income_mtd=dollars(self._book.lending_cents(conn, acct_num, today.replace(day=1), today)),
                )
            )
        return result

    def account_features(self, acct_num: str) -> list[AccountFeature]:
        """Return the account's trading capabilities."""
        rules = self._book.rules(self._store.conn, acct_num)
        return [
            AccountFeature(
                acct_num=acct_num,
                acct_type=rules.acct_type.value,
                option_level=option_level_text(rules.option_level),
                margin_ind=rules.margin,
                short_sell_ind=rules.short_allowed,
                options_ind=rules.option_level > 0,
                crypto_ind=False,
                directed_trading_ind=not rules.retirement,
                penny_stock_ind=False,
            )
        ]


def _lot_id(row_id: int) -> str:
    return f"LOT{row_id:07d}"


def _account(row: sqlite3.Row) -> Account:
    return Account(
        acct_num=row["acct_num"],
        acct_type=AccountType(row["acct_type"]),
        name=row["name"],
        description=row["description"],
        margin_ind=bool(row["margin"]),
        option_level=option_level_text(int(row["option_level"])),
        retirement_ind=bool(row["retirement"]),
        is_default=bool(row["is_default"]),
    )


def _option_leg(p: Pos, underlying: Decimal, today: date) -> OptionLegSummary:
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
        quantity=number(p.quantity),
        last_price=price_float(p.last),
        market_value=dollars(mv),
        cost_basis=dollars(p.basis_cents),
        gain_loss=dollars(mv - p.basis_cents),
        gain_loss_pct=pct(mv - p.basis_cents, p.basis_cents),
        in_the_money=itm,
    )


def _strategy(legs: list[Pos], shares: Decimal) -> str:
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
