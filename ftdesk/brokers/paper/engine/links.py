"""Conditional orders (OTO, OCO, OTOCO) of the paper engine: how a fill, cancel or expiry of one leg moves the others.

OTO: leg 1 waits in PENDING_TRIGGER until leg 0 is completely filled. OCO: both legs work; a fill
of one reduces the other by the same quantity and a complete fill cancels it. OTOCO: leg 0, then
legs 1 and 2 as an OCO pair. Canceling one leg of an OCO pair cancels the pair; canceling (or the
expiry of) the primary of an OTO/OTOCO cancels the legs waiting for it. A replace keeps the links: the
replacement stays in the group (so an OCO pair stays a pair) and a replaced primary hands the legs waiting for
it to its replacement, in the replace's transaction.
"""

from __future__ import annotations

import sqlite3
from decimal import Decimal

from ftdesk.brokers.paper.engine.model import WORKING, Row, Spec, equity_spec, reject, words
from ftdesk.brokers.paper.engine.rows import OrderRows
from ftdesk.brokers.paper.quantities import ZERO, number, stored
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import iso_time
from ftdesk.domain.clock import Clock
from ftdesk.domain.events import EventType
from ftdesk.domain.orders import ConditionalReplace, OrderStatus


class OrderLinks:
    """The links between the legs of conditional orders, and the cancels that follow them."""

    def __init__(self, store: PaperStore, rows: OrderRows, clock: Clock) -> None:
        self._store = store
        self._rows = rows
        self._clock = clock

    def cancel(self, conn: sqlite3.Connection, row: Row, note: str | None, *, cascade: bool = True) -> list[Row]:
        """Cancel an order (and, with ``cascade``, the conditional legs that depend on it)."""
        self._rows.set_status(conn, row, OrderStatus.CANCELED, note)
        canceled = [self._rows.load(conn, row.conf_num)]
        self._rows.publish(
            EventType.ORDER_CANCELED,
            canceled[0],
            canceled_qty=number(row.remaining),
            exec_qty=number(row.filled_qty),
            reason=note or "canceled by the trader",
        )
        if cascade:
            for dependent in self.dependents(conn, row):
                canceled += self.cancel(conn, dependent, f"linked order {row.conf_num} was canceled", cascade=False)
        return canceled

    def expire(self, conn: sqlite3.Connection, row: Row) -> None:
        """Expire an order at its close and cancel the legs waiting for it."""
        self._rows.set_status(conn, row, OrderStatus.EXPIRED, None)
        self._rows.publish_order(EventType.ORDER_UPDATE, self._rows.load(conn, row.conf_num))
        for child in self.dependents(conn, row, siblings=False):
            self.cancel(conn, child, f"primary order {row.conf_num} expired", cascade=False)

    def dependents(self, conn: sqlite3.Connection, row: Row, *, siblings: bool = True) -> list[Row]:
        """Return the working orders a cancel of ``row`` takes along: its OCO partner and waiting children."""
        if row.group_id is None:
            return []
        result = []
        for other in self._rows.group(conn, row.group_id):
            if other.conf_num == row.conf_num or not other.working:
                continue
            partner = siblings and other.oco_key == row.oco_key != row.conf_num
            child = other.status is OrderStatus.PENDING_TRIGGER and other.parent_conf_num == row.conf_num
            if partner or child:
                result.append(other)
        return result

    def after_fill(self, conn: sqlite3.Connection, row: Row, qty: Decimal) -> None:
        """Apply a fill's consequences to the other legs of its conditional order."""
        if row.group_id is None:
            return
        for sibling in self._rows.group(conn, row.group_id):
            if sibling.conf_num == row.conf_num or not sibling.working:
                continue
            if sibling.oco_key == row.oco_key != row.conf_num and sibling.status is not OrderStatus.PENDING_TRIGGER:
                left = sibling.spec.qty - qty
                if row.status is OrderStatus.FILLED or left <= sibling.filled_qty:
                    self.cancel(conn, sibling, f"the other OCO leg {row.conf_num} filled", cascade=False)
                else:
                    conn.execute("UPDATE paper_orders SET qty = ? WHERE conf_num = ?", (stored(left), sibling.conf_num))
                    reduced = self._rows.load(conn, sibling.conf_num)
                    self._rows.publish_order(EventType.ORDER_UPDATE, reduced, event="REDUCED_BY_OCO", by=row.conf_num)
            elif (
                row.status is OrderStatus.FILLED
                and row.leg_index == 0
                and sibling.status is OrderStatus.PENDING_TRIGGER
                and sibling.parent_conf_num == row.conf_num
            ):
                conn.execute(
                    "UPDATE paper_orders SET status = 'OPEN', expires_at = ?, updated_time = ? WHERE conf_num = ?",
                    (self._rows.day_close(sibling.spec), iso_time(self._clock.now()), sibling.conf_num),
                )
                triggered = self._rows.load(conn, sibling.conf_num)
                self._rows.publish_order(EventType.ORDER_UPDATE, triggered, event="TRIGGERED", by=row.conf_num)

    def hand_over(self, conn: sqlite3.Connection, old: Row, new_conf: str) -> None:
        """Make the working legs waiting for a replaced order wait for its replacement instead.

        Runs in the replace's own transaction. An OCO partner needs nothing: the pair is keyed by the
        conditional group, which the replacement keeps.
        """
        working = ",".join("?" * len(WORKING))
        waiting = conn.execute(
            f"SELECT conf_num FROM paper_orders WHERE parent_conf_num = ? AND status IN ({working})",
            (old.conf_num, *WORKING),
        ).fetchall()
        for (conf_num,) in waiting:
            conn.execute("UPDATE paper_orders SET parent_conf_num = ? WHERE conf_num = ?", (new_conf, conf_num))
            moved = self._rows.load(conn, conf_num)
            self._rows.publish_order(EventType.ORDER_UPDATE, moved, event="PRIMARY_REPLACED", by=new_conf)

    def extra_position(self, row: Row) -> Decimal:
        """Shares a waiting conditional leg may use because its primary will buy (or short) them."""
        if row.status is not OrderStatus.PENDING_TRIGGER or row.parent_conf_num is None:
            return ZERO
        parent = self._rows.owned(self._store.conn, row.parent_conf_num, row.spec.acct_num)
        if parent.spec.symbol != row.spec.symbol or not parent.working:
            return ZERO
        return parent.spec.sign * parent.remaining

    def replacement(self, replace: ConditionalReplace, *, check_working: bool = True) -> tuple[list[Row], list[Spec]]:
        """Return the legs a conditional replace swaps and their replacements; refuse a mismatched one."""
        order = replace.order
        origs = [self._rows.owned(self._store.conn, conf, order.acct_num) for conf in replace.orig_conf_nums]
        groups = {o.group_id for o in origs}
        if len(groups) != 1 or None in groups:
            raise reject("REPLACE_MISMATCH", "The orders to replace must be legs of one conditional order")
        group_size = self._store.query_one(
            "SELECT COUNT(DISTINCT leg_index) AS n FROM paper_orders WHERE group_id = ?", (origs[0].group_id,)
        )
        if (
            origs[0].cond_type is not order.cond_order_type_code
            or group_size is None
            or group_size["n"] != len(order.legs)
        ):
            raise reject(
                "REPLACE_MISMATCH",
                f"The replacement must be a {origs[0].cond_type.value if origs[0].cond_type else ''} order with the"
                " same number of legs as the original",
            )
        specs = []
        for orig in origs:
            if check_working and not orig.replaceable:
                raise reject(
                    "ORDER_NOT_REPLACEABLE",
                    f"Leg {orig.conf_num} is {words(orig.status.value)} and can no longer be replaced",
                )
            spec = equity_spec(order.legs[orig.leg_index or 0], order.acct_num)
            if (spec.symbol, spec.action) != (orig.spec.symbol, orig.spec.action):
                raise reject(
                    "REPLACE_MISMATCH",
                    f"Leg {orig.leg_index} must keep its symbol and action ({orig.spec.action} {orig.spec.symbol})",
                )
            specs.append(spec)
        return origs, specs
