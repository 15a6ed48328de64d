"""Price alerts of the paper brokerage: triggers kept in SQLite, checked against the market every tick.

A trigger fires once: when the last price reaches its level it becomes TRIGGERED (time and price
recorded in one transaction) and a BEPS-style ``TRPA``/``TRPB`` account event is published after the
commit, so a consumer never hears of an alert the database does not hold. A percent trigger's level is
its percent move from the previous close (``BELOW`` 4 fires at 96 % of the close), worked out at each check.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from ftdesk.brokers.paper.ports import EventSink, MarketView
from ftdesk.brokers.paper.store import PaperStore
from ftdesk.brokers.paper.userdata import invalid, iso_time, normalize_symbol, unique_id
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import NotFound
from ftdesk.domain.events import AccountEvent, EventType, account_event
from ftdesk.domain.user_data import (
    AlertSubscription,
    PriceTrigger,
    PriceTriggerDraft,
    TriggerBasis,
    TriggerDirection,
    TriggerStatus,
)

ALERTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS price_triggers (
    trigger_id         TEXT PRIMARY KEY,
    symbol             TEXT NOT NULL,
    direction          TEXT NOT NULL CHECK (direction IN ('ABOVE', 'BELOW')),
    price_e4           INTEGER NOT NULL,  -- level in ten-thousandths of a dollar, or of a percent (exact)
    basis              TEXT NOT NULL DEFAULT 'PRICE' CHECK (basis IN ('PRICE', 'PERCENT')),
    status             TEXT NOT NULL CHECK (status IN ('ACTIVE', 'TRIGGERED')),
    note               TEXT NOT NULL,
    create_time        TEXT NOT NULL,
    triggered_time     TEXT,
    triggered_price_e4 INTEGER,
    seq                INTEGER NOT NULL  -- creation order, the order triggers are listed in
);
CREATE INDEX IF NOT EXISTS price_triggers_status ON price_triggers(status);
"""

ALERT_DELIVERY = "/api/v1/streaming/events"

_E4 = Decimal("0.0001")


def _to_e4(price: float) -> int:
    """Return a price in exact ten-thousandths (the float's shortest decimal form, rounded half up)."""
    return int(Decimal(repr(price)).quantize(_E4, rounding=ROUND_HALF_UP) / _E4)


def _from_e4(value: int) -> float:
    return float(Decimal(value) * _E4)


def _money(value: int) -> str:
    """Return a price for a message: cents, or more places when the level has them."""
    text = f"{Decimal(value) * _E4:f}".rstrip("0")
    whole, _, places = text.partition(".")
    return f"${whole}.{places.ljust(2, '0')}"


@dataclass(frozen=True)
class _Crossing:
    trigger_id: str
    last_e4: int


class PriceAlerts:
    """The price triggers of the paper user."""

    def __init__(
        self, store: PaperStore, market: MarketView, clock: Clock, events: EventSink, rng: random.Random
    ) -> None:
        self._store = store
        self._market = market
        self._clock = clock
        self._events = events
        self._rng = rng
        self._add_basis_column()

    def _add_basis_column(self) -> None:
        """Give a database made before percent triggers its basis column (its triggers are all price levels)."""
        if not any(row["name"] == "basis" for row in self._store.query("PRAGMA table_info(price_triggers)")):
            with self._store.transaction() as conn:
                conn.execute("ALTER TABLE price_triggers ADD COLUMN basis TEXT NOT NULL DEFAULT 'PRICE'")

    def triggers(self) -> list[PriceTrigger]:
        """Return every trigger, active and fired, in the order they were created."""
        return [self._trigger(row) for row in self._store.query("SELECT * FROM price_triggers ORDER BY seq")]

    def create(self, draft: PriceTriggerDraft) -> PriceTrigger:
        """Create an active trigger; refuse one that would fire at the current price."""
        symbol = normalize_symbol(draft.symbol)
        try:
            self._market.instrument(symbol)
            quote = self._market.quote(symbol)
        except NotFound:
            raise invalid(f"Unknown symbol {symbol}", [("symbol", f"unknown symbol {symbol}")]) from None
        last_e4 = _to_e4(quote.last)
        value_e4 = _to_e4(draft.price)
        if value_e4 <= 0:
            raise invalid("The alert price must be at least $0.0001", [("price", "must be at least 0.0001")])
        if (
            draft.basis is TriggerBasis.PERCENT
            and draft.direction is TriggerDirection.BELOW
            and value_e4 >= 100 * 10_000
        ):
            raise invalid("A price cannot fall 100% or more", [("price", "a BELOW percent must be under 100")])
        level_e4 = _level(draft.basis, draft.direction, value_e4, quote.prev_close)
        if level_e4 is not None:
            self._refuse_instant_fire(symbol, draft.direction, level_e4, last_e4)
        with self._store.transaction() as conn:
            trigger_id = unique_id(conn, self._rng, "T", "price_triggers", "trigger_id")
            conn.execute(
                "INSERT INTO price_triggers(trigger_id, symbol, direction, price_e4, basis, status, note, create_time,"
                " seq) VALUES(?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM price_triggers))",
                (
                    trigger_id,
                    symbol,
                    draft.direction.value,
                    value_e4,
                    draft.basis.value,
                    TriggerStatus.ACTIVE.value,
                    draft.note,
                    iso_time(self._clock.now()),
                ),
            )
            return self._trigger(self._row(conn, trigger_id))

    def delete(self, trigger_id: str) -> None:
        """Delete a trigger, active or fired."""
        with self._store.transaction() as conn:
            if conn.execute("DELETE FROM price_triggers WHERE trigger_id = ?", (trigger_id,)).rowcount == 0:
                raise NotFound(f"No price alert with id {trigger_id}")

    def subscribe(self) -> AlertSubscription:
        """Report alert delivery as active: alerts arrive on the account-event stream."""
        row = self._store.query_one("SELECT COUNT(*) AS n FROM price_triggers WHERE status = ?", ("ACTIVE",))
        return AlertSubscription(active=True, delivery=ALERT_DELIVERY, active_triggers=int(row["n"]) if row else 0)

    def watched_symbols(self) -> list[str]:
        """Return the symbols active triggers watch (what the market must keep current for ``check``)."""
        rows = self._store.query(
            "SELECT DISTINCT symbol FROM price_triggers WHERE status = ? ORDER BY symbol", ("ACTIVE",)
        )
        return [str(r["symbol"]) for r in rows]

    def check(self) -> list[PriceTrigger]:
        """Fire every active trigger whose symbol's last price reached its level; return the ones fired."""
        active = self._store.query("SELECT * FROM price_triggers WHERE status = ? ORDER BY seq", ("ACTIVE",))
        quotes: dict[str, tuple[int, float | None] | None] = {}
        crossings: list[_Crossing] = []
        for row in active:
            symbol = str(row["symbol"])
            if symbol not in quotes:
                try:
                    quote = self._market.quote(symbol)
                    quotes[symbol] = (_to_e4(quote.last), quote.prev_close)
                except NotFound:  # delisted (an expired option): nothing to compare against
                    quotes[symbol] = None
            known = quotes[symbol]
            if known is None:
                continue
            direction = TriggerDirection(row["direction"])
            level_e4 = _level(TriggerBasis(row["basis"]), direction, int(row["price_e4"]), known[1])
            if level_e4 is not None and _reached(direction, level_e4, known[0]):
                crossings.append(_Crossing(str(row["trigger_id"]), known[0]))
        if not crossings:
            return []
        now = iso_time(self._clock.now())
        fired: list[tuple[PriceTrigger, int]] = []
        with self._store.transaction() as conn:
            for crossing in crossings:
                updated = conn.execute(
                    "UPDATE price_triggers SET status = ?, triggered_time = ?, triggered_price_e4 = ? "
                    "WHERE trigger_id = ? AND status = ?",
                    (TriggerStatus.TRIGGERED.value, now, crossing.last_e4, crossing.trigger_id, "ACTIVE"),
                )
                if updated.rowcount == 1:  # deleted or fired meanwhile: skip
                    fired.append((self._trigger(self._row(conn, crossing.trigger_id)), crossing.last_e4))
        for trigger, last_e4 in fired:
            self._events(_alert_event(trigger, now, last_e4))
        return [trigger for trigger, _ in fired]

    # --- internals -------------------------------------------------------------------------

    @staticmethod
    def _refuse_instant_fire(symbol: str, direction: TriggerDirection, level_e4: int, last_e4: int) -> None:
        if not _reached(direction, level_e4, last_e4):
            return
        if direction is TriggerDirection.ABOVE:
            side, hint = "at or below", "set it above the current price"
        else:
            side, hint = "at or above", "set it below the current price"
        raise invalid(
            f"{symbol} last traded at {_money(last_e4)}; an alert for {direction.value} {_money(level_e4)} "
            f"is {side} that price and would fire immediately: {hint}",
            [("price", f"would fire immediately ({symbol} last {_money(last_e4)})")],
        )

    @staticmethod
    def _row(conn: sqlite3.Connection, trigger_id: str) -> sqlite3.Row:
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM price_triggers WHERE trigger_id = ?", (trigger_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"No price alert with id {trigger_id}")
        return row

    @staticmethod
    def _trigger(row: sqlite3.Row) -> PriceTrigger:
        triggered_e4 = row["triggered_price_e4"]
        return PriceTrigger(
            trigger_id=row["trigger_id"],
            symbol=row["symbol"],
            direction=TriggerDirection(row["direction"]),
            price=_from_e4(int(row["price_e4"])),
            basis=TriggerBasis(row["basis"]),
            status=TriggerStatus(row["status"]),
            note=row["note"],
            create_time=row["create_time"],
            triggered_time=row["triggered_time"],
            triggered_price=None if triggered_e4 is None else _from_e4(int(triggered_e4)),
        )


def _level(basis: TriggerBasis, direction: TriggerDirection, value_e4: int, prev_close: float | None) -> int | None:
    """Return a trigger's price level now: its own, or its percent move from the previous close (None: no close)."""
    if basis is TriggerBasis.PRICE:
        return value_e4
    if not prev_close:
        return None
    move = Decimal(value_e4) * _E4 / 100
    factor = 1 + move if direction is TriggerDirection.ABOVE else 1 - move
    return int((Decimal(repr(prev_close)) * factor).quantize(_E4, rounding=ROUND_HALF_UP) / _E4)


def _reached(direction: TriggerDirection, level_e4: int, last_e4: int) -> bool:
    """Say whether a last price has reached a trigger's level in the trigger's direction."""
    return last_e4 >= level_e4 if direction is TriggerDirection.ABOVE else last_e4 <= level_e4


def _alert_event(trigger: PriceTrigger, when: str, last_e4: int) -> AccountEvent:
    """Build the TRPA/TRPB account event of a trigger that fired at ``when`` on the price ``last_e4``."""
    above = trigger.direction is TriggerDirection.ABOVE
    if trigger.basis is TriggerBasis.PERCENT:
        level = f"{trigger.price:g}% {'above' if above else 'below'} the previous close"
    else:
        level = _money(_to_e4(trigger.price))
    return account_event(
        (EventType.PRICE_ABOVE if above else EventType.PRICE_BELOW).value,
        {
            "trigger_id": trigger.trigger_id,
            "symbol": trigger.symbol,
            "direction": trigger.direction.value,
            "price": trigger.price,
            "basis": trigger.basis.value,
            "triggered_price": _from_e4(last_e4),
            "note": trigger.note,
            "message": f"{trigger.symbol} {'rose' if above else 'fell'} to {_money(last_e4)}, reaching your "
            f"{trigger.direction.value} alert at {level}",
        },
        time=when,
    )
