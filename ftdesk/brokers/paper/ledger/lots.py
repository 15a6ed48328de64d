"""Booking of paper executions: cash, FIFO lots, closed lots, wash sales, and option expirations.

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

A fill is one SQLite transaction; its account events (SPPOS, SPBSM, CBUPD) are published after
the commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal

from ftdesk.brokers.paper.ledger.book import Book
from ftdesk.brokers.paper.ledger.money import (
    cents,
    dollars,
    is_long_term,
    option_expired,
    price_float,
    settlement_date,
    split_cents,
    trade_date,
)
from ftdesk.brokers.paper.ledger.types import AccountRules, Fill
from ftdesk.brokers.paper.ports import Instrument
from ftdesk.brokers.paper.quantities import ZERO, number, shares, stored
from ftdesk.brokers.paper.quantities import text as quantity_text
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.domain.accounts import SecurityType, Term
from ftdesk.domain.clock import Clock
from ftdesk.domain.events import EventType

_WASH_WINDOW = timedelta(days=30)


class Lots:
    """Books executions: their transactions, the lots they open and close, and the wash sales they make."""

    def __init__(self, store: PaperStore, book: Book, clock: Clock) -> None:
        self._store = store
        self._book = book
        self._clock = clock

    def apply_fills(self, fills: Sequence[Fill], *, when: datetime | None = None) -> None:
        """Book executions atomically: cash, lots, closed lots, wash sales; then publish the events."""
        moment = when or self._clock.now()
        with self._book.outbox.atomic() as conn:
            for fill in fills:
                self._apply_fill(conn, fill, trade_date(moment))

    def _apply_fill(self, conn: sqlite3.Connection, fill: Fill, day: date) -> None:
        rules = self._book.rules(conn, fill.acct_num)
        if fill.quantity == 0:
            raise ValueError("a fill needs a non-zero quantity")
        instrument = self._book.instrument(fill.symbol)
        is_option = instrument.security_type is SecurityType.OPTION
        lots = self._book.open_lot_rows(conn, fill.acct_num, fill.symbol)
        held = sum((shares(r["quantity"]) for r in lots), ZERO)
        buying = fill.quantity > 0
        size = abs(Decimal(fill.quantity))
        closing = min(size, abs(held)) if held and (held > 0) != buying else ZERO
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
            self._book.insert_txn(
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
        quantity: Decimal,
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
                stored(quantity),
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
        qty: Decimal,
        amount: int,
        day: date,
    ) -> tuple[int, bool]:
        takes: list[tuple[sqlite3.Row, Decimal]] = []
        left = qty
        for lot in lots:
            if left == 0:
                break
            take = min(left, abs(shares(lot["quantity"])))
            takes.append((lot, take))
            left -= take
        moneys = split_cents(abs(amount), [t for _, t in takes])
        realized = 0
        closed_ids: list[int] = []
        for (lot, take), money in zip(takes, moneys, strict=True):
            lot_qty = shares(lot["quantity"])
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
                    stored(take),
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
                left_in_lot = lot_qty - take if long_lot else lot_qty + take
                absorbed = min(shares(lot["wash_absorbed_qty"]), abs(left_in_lot))
                conn.execute(
                    "UPDATE paper_lots SET quantity = ?, basis_cents = basis_cents - ?, wash_absorbed_qty = ?"
                    " WHERE id = ?",
                    (stored(left_in_lot), part, stored(absorbed), lot["id"]),
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
            wanted = shares(loss["quantity"])
            for lot in candidates:
                if wanted == 0:
                    break
                if int(lot["id"]) in sold_lots:
                    continue
                free = shares(lot["quantity"]) - shares(lot["wash_absorbed_qty"])
                matched = self._wash(conn, loss, int(lot["id"]), free)
                wanted -= matched
                washed = washed or matched > 0
                loss = conn.execute("SELECT * FROM paper_closed_lots WHERE id = ?", (closed_id,)).fetchone()
        return washed

    @staticmethod
    def _wash(conn: sqlite3.Connection, loss: sqlite3.Row, lot_id: int, available: Decimal) -> Decimal:
        """Disallow the loss of ``loss`` for up to ``available`` replacement shares of lot ``lot_id``."""
        qty = shares(loss["quantity"])
        matched = min(available, qty - shares(loss["wash_qty"]))
        if matched <= 0:
            return ZERO
        total_loss = int(loss["cost_cents"]) - int(loss["proceeds_cents"])
        done = shares(loss["wash_qty"]) + matched
        disallowed_to_date = total_loss if done == qty else cents(Decimal(total_loss) * done / qty / 100)
        amount = disallowed_to_date - int(loss["disallowed_cents"])
        conn.execute(
            "UPDATE paper_closed_lots SET wash_qty = ?, disallowed_cents = ? WHERE id = ?",
            (stored(done), disallowed_to_date, loss["id"]),
        )
        absorbed = conn.execute("SELECT wash_absorbed_qty FROM paper_lots WHERE id = ?", (lot_id,)).fetchone()[0]
        conn.execute(
            "UPDATE paper_lots SET basis_cents = basis_cents + ?, wash_adj_cents = wash_adj_cents + ?,"
            " wash_absorbed_qty = ? WHERE id = ?",
            (amount, amount, stored(shares(absorbed) + matched), lot_id),
        )
        return matched

    def settle_expired_options(self) -> int:
        """Close option positions that stopped trading at the market's settlement price; return how many."""
        now = self._clock.now()
        rows = self._store.query(
            "SELECT acct_num, symbol, SUM(quantity) AS qty FROM paper_lots WHERE is_option = 1"
            " GROUP BY acct_num, symbol HAVING SUM(quantity) <> 0"
        )
        fills: list[Fill] = []
        for row in rows:
            option = self._book.instrument(row["symbol"]).option
            if option is None or not option_expired(option, now):
                continue
            # The market quotes an expired option at its settlement value. Settling at the price positions are
            # valued at (zero for a series the market no longer quotes) keeps net worth from jumping.
            settlement = self._book.prices(row["symbol"])[0]
            qty = shares(row["qty"])
            label = "OPTION_EXPIRED" if settlement == 0 else "OPTION_CASH_SETTLED"
            fills.append(Fill(row["acct_num"], row["symbol"], -qty, settlement, txn_type=label))
        for fill in fills:
            self.apply_fills([fill])
        return len(fills)

    def _publish_fill_events(
        self, conn: sqlite3.Connection, fill: Fill, held_before: Decimal, realized: int, wash: bool, lot_changes: int
    ) -> None:
        if self._book.outbox.quiet:
            return
        base = {"acct_num": fill.acct_num, "symbol": fill.symbol, "conf_num": fill.conf_num}
        row = conn.execute(
            "SELECT COALESCE(SUM(quantity), 0), COALESCE(SUM(basis_cents), 0) FROM paper_lots"
            " WHERE acct_num = ? AND symbol = ?",
            (fill.acct_num, fill.symbol),
        ).fetchone()
        position = {
            **base,
            "quantity": number(shares(row[0])),
            "previous_quantity": number(held_before),
            "change": number(fill.quantity),
            "price": price_float(fill.price),
        }
        self._book.publish(EventType.POSITION_CHANGE, position)
        self._book.publish_balance(fill.acct_num, {"conf_num": fill.conf_num, "symbol": fill.symbol})
        basis = {
            **base,
            "cost_basis": dollars(int(row[1])),
            "quantity": number(shares(row[0])),
            "lot_changes": lot_changes,
            "realized_gain_loss": dollars(realized),
            "wash_sale": wash,
        }
        self._book.publish(EventType.COST_BASIS_UPDATE, basis)


def _txn_type(is_option: bool, buying: bool, closing: bool) -> str:
    if is_option:
        return "OPTION_BUY" if buying else "OPTION_SELL"
    if buying:
        return "BUY_TO_COVER" if closing else "BUY"
    return "SELL" if closing else "SELL_SHORT"


def _fill_description(txn_type: str, instrument: Instrument, qty: Decimal, price: Decimal, closing: bool) -> str:
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
    return f"{verb} {quantity_text(qty)} {instrument.description} ({instrument.symbol}) @ {price.normalize():f}"
