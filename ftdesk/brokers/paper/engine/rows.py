"""Stored orders of the paper engine: load, insert and change them, and publish their order events."""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from typing import Any

from ftdesk.brokers.paper.engine.model import Row, Spec, row_from_db, status_desc
from ftdesk.brokers.paper.ledger.money import price_float, session_close, trading_day
from ftdesk.brokers.paper.ledger.outbox import Outbox
from ftdesk.brokers.paper.ports import EventSink
from ftdesk.brokers.paper.quantities import number, stored
from ftdesk.brokers.paper.userdata import iso_time
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound, OrderRejected
from ftdesk.domain.events import EventType, account_event
from ftdesk.domain.orders import ConditionalType, OrderStatus, TimeInForce

GroupPlace = tuple[str | None, ConditionalType | None, int | None, str | None]
"""Where an order sits in a conditional order: group id, type, leg index and the primary it waits for."""


class OrderRows:
    """The paper_orders table: every change to an order goes through here and raises its event."""

    def __init__(self, outbox: Outbox, clock: Clock, events: EventSink) -> None:
        self._outbox = outbox
        self._clock = clock
        self._events = events

    @staticmethod
    def load(conn: sqlite3.Connection, conf_num: str) -> Row:
        """Return the order with this conf_num (which must exist)."""
        return row_from_db(conn.execute("SELECT * FROM paper_orders WHERE conf_num = ?", (conf_num,)).fetchone())

    def owned(self, conn: sqlite3.Connection, conf_num: str, acct_num: str | None) -> Row:
        """Return an order of the account (any account when None); NotFound otherwise."""
        r = conn.execute("SELECT * FROM paper_orders WHERE conf_num = ?", (conf_num,)).fetchone()
        if r is None or (acct_num is not None and r["acct_num"] != acct_num):
            where = f" in account {acct_num}" if acct_num else ""
            raise NotFound(f"Order {conf_num} not found{where}")
        return row_from_db(r)

    @staticmethod
    def group(conn: sqlite3.Connection, group_id: str) -> list[Row]:
        """Return the orders of a conditional group, by leg."""
        rows = conn.execute("SELECT * FROM paper_orders WHERE group_id = ? ORDER BY leg_index, seq", (group_id,))
        return [row_from_db(r) for r in rows]

    def insert(
        self,
        conn: sqlite3.Connection,
        conf: str,
        spec: Spec,
        status: OrderStatus,
        *,
        group: GroupPlace = (None, None, None, None),
        replaces: str | None = None,
        reject: OrderRejected | None = None,
    ) -> Row:
        """Store a new order and announce it."""
        now = self._clock.now()
        expires = self.day_close(spec) if status is OrderStatus.OPEN else None
        legs = json.dumps([leg.__dict__ for leg in spec.legs]) if spec.legs else None
        group_id, cond, leg_index, parent = group
        conn.execute(
            "INSERT INTO paper_orders (conf_num, acct_num, kind, symbol, action, qty, price_type, limit_price,"
            " stop_price, tif, status, entry_time, expires_at, updated_time, group_id, cond_type, leg_index,"
            " parent_conf_num, replaces, legs, reject_reason, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conf,
                spec.acct_num,
                spec.kind,
                spec.symbol,
                spec.action,
                stored(spec.qty),
                spec.price_type.value,
                _text(spec.limit),
                _text(spec.stop),
                spec.tif.value,
                status.value,
                iso_time(now),
                expires,
                iso_time(now),
                group_id,
                cond.value if cond else None,
                leg_index,
                parent,
                replaces,
                legs,
                reject.reason if reject else None,
                reject.message if reject else None,
            ),
        )
        row = self.load(conn, conf)
        extra = {"reason": reject.reason} if reject else {}
        self.publish_order(EventType.ORDER_UPDATE, row, **extra)
        return row

    def day_close(self, spec: Spec) -> str | None:
        """Return when a day order entered now expires (None for GTC)."""
        if spec.tif is not TimeInForce.DAY:
            return None
        return iso_time(session_close(trading_day(self._clock.now())))

    def set_status(self, conn: sqlite3.Connection, row: Row, status: OrderStatus, note: str | None) -> None:
        """Move an order to a new status, keeping its previous note when there is no new one."""
        conn.execute(
            "UPDATE paper_orders SET status = ?, note = COALESCE(?, note), updated_time = ? WHERE conf_num = ?",
            (status.value, note, iso_time(self._clock.now()), row.conf_num),
        )

    def publish_order(self, event_type: EventType, row: Row, **extra: Any) -> None:
        """Announce an order's new status."""
        self.publish(event_type, row, status=row.status.value, status_desc=status_desc(row), **extra)

    def publish(self, event_type: EventType, row: Row, **extra: Any) -> None:
        """Announce an order event after the current unit of work commits."""
        spec = row.spec
        desc: dict[str, Any] = {
            "acct_num": spec.acct_num,
            "conf_num": row.conf_num,
            "symbol": spec.symbol,
            "action": spec.action,
            "qty": number(spec.qty),
            "price_type": spec.price_type.value,
            "limit_price": price_float(spec.limit) if spec.limit is not None else None,
            "stop_price": price_float(spec.stop) if spec.stop is not None else None,
            **extra,
        }
        if row.parent_conf_num:
            desc["parent_conf_num"] = row.parent_conf_num
        event = account_event(event_type.value, desc, time=iso_time(self._clock.now()))
        self._outbox.publish(self._events, event)


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)
