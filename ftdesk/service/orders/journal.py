"""The order journal: every order action, written down before and after the broker call.

One SQLite file in the data dir (``journal.sqlite3``) holds two tables:

* ``order_journal``: one row per preview, place, cancel preview and cancel (replace and conditional
  variants included), inserted with outcome ``pending`` BEFORE the broker is called and updated after it
  (``accepted``, ``rejected``, ``error``). Attempts the service refuses itself (live-trading gate, preview
  binding, Idempotency-Key misuse) are one row with outcome ``refused``. Rows still ``pending`` when the
  journal opens belong to a process that died during the broker call: they become ``unknown`` (check the
  order at the broker). The journal keeps the listed facts and a body hash, never a body or a secret.
* ``idempotency_keys``: the first response to each ``Idempotency-Key`` of a place that reached the broker,
  so a retried place returns that response instead of sending a second order, also after a restart.
  Keys older than 30 days are pruned when the journal opens.

Every write is one transaction, committed with ``synchronous=FULL`` (the row must be on disk before an
order leaves). That makes a write cost an fsync, milliseconds rather than microseconds, so the methods
here are blocking and the service calls them through ``asyncio.to_thread``; a lock serialises them.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ftdesk.data_dir import DATA_DIR_MODE, DATA_FILE_MODE, DataDirDamaged, damaged_copies, move_aside, sqlite_damage
from ftdesk.domain.clock import Clock

log = logging.getLogger(__name__)

JOURNAL_FILE_NAME = "journal.sqlite3"
IDEMPOTENCY_RETENTION = timedelta(days=30)
_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS order_journal (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    day TEXT NOT NULL,
    finished_time TEXT,
    request_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    action TEXT NOT NULL,
    order_kind TEXT,
    acct_num TEXT,
    symbol TEXT,
    side TEXT,
    qty REAL,
    price REAL,
    conf_nums TEXT NOT NULL DEFAULT '[]',
    orig_conf_nums TEXT NOT NULL DEFAULT '[]',
    body_hash TEXT NOT NULL,
    idempotency_key TEXT,
    outcome TEXT NOT NULL,
    error_code TEXT,
    message TEXT
);
CREATE INDEX IF NOT EXISTS order_journal_day ON order_journal (day);
CREATE INDEX IF NOT EXISTS order_journal_pending ON order_journal (outcome) WHERE outcome = 'pending';
CREATE TABLE IF NOT EXISTS idempotency_keys (
    idempotency_key TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    status INTEGER,
    response TEXT,
    created TEXT NOT NULL,
    entry_id INTEGER
);
"""

UNKNOWN_MESSAGE = (
    "The service stopped while the broker call was in flight, so its outcome was not recorded: "
    "check GET /api/v1/orders/status before acting on this order again"
)


HALT_CUT_SHORT = (
    "The service stopped during this halt, before it had canceled every open order: the next start found the "
    "halt and swept the open orders again (see the halt row of the restart)"
)


@dataclass(frozen=True)
class JournaledHalt:
    """The journal's copy of the kill switch: its last halt or resume row."""

    halted: bool
    time: datetime
    by: str  # the row's endpoint, e.g. 'safety (api)'


class JournalAction(StrEnum):
    """What an order request asked the broker to do."""

    PREVIEW = "preview"
    PLACE = "place"
    CANCEL_PREVIEW = "cancel_preview"
    CANCEL = "cancel"
    HALT = "halt"  # the kill switch: who pulled it, what it canceled and what it could not
    RESUME = "resume"
    LIVE_SWITCH = "live_switch"  # live trading turned on or off, and by whom
    MARKET = "market"  # the brokerage and market a run trades on, when it differs from the previous run's


class Outcome(StrEnum):
    """How a journaled order action ended."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    REFUSED = "refused"
    ERROR = "error"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class OrderFacts:
    """What the journal records about the order of one request (no bodies, no secrets)."""

    acct_num: str | None = None
    symbol: str | None = None
    side: str | None = None
    qty: float | None = None
    price: float | None = None
    conf_nums: tuple[str, ...] = ()
    orig_conf_nums: tuple[str, ...] = ()


@dataclass(frozen=True)
class JournalDraft:
    """A journal row before it is written: the request, the order facts and the body hash."""

    request_id: str
    endpoint: str
    action: JournalAction
    order_kind: str | None
    facts: OrderFacts
    body_hash: str
    idempotency_key: str | None = None


@dataclass(frozen=True)
class StoredResponse:
    """The HTTP status and JSON envelope of a place, kept for its Idempotency-Key."""

    status: int
    body: str


@dataclass(frozen=True)
class KeyClaim:
    """What the journal knows about an Idempotency-Key when a place arrives with it.

    ``new``: first use, now reserved (``pending``) for this request; ``replay``: a finished request with the
    same body, ``response`` is its answer; ``in_flight``: the first request is still running; ``unknown``:
    the service stopped during the first request; ``reused``: the key came with another endpoint or body.
    """

    state: Literal["new", "replay", "in_flight", "unknown", "reused"]
    response: StoredResponse | None = None


class JournalEntry(BaseModel):
    """One order action as the journal recorded it."""

    entry_id: int = Field(description="Increasing number of the entry.")
    time: datetime = Field(description="When the request was recorded, before any broker call (UTC).")
    finished_time: datetime | None = Field(description="When the outcome was recorded (null while pending).")
    request_id: str = Field(description="The X-Request-ID of the request, to find it in the service log.")
    endpoint: str = Field(description="Method and path, e.g. 'POST /api/v1/orders/equity/place'.")
    action: JournalAction = Field(
        description="preview, place, cancel_preview or cancel; halt, resume and live_switch record the kill switch "
        "and the live-trading switch (endpoint says who: 'safety (tray)', 'safety (api)', ...); market records the "
        'brokerage and market a run trades on (message: e.g. "paper on Fidelity\'s market"), written at a start '
        "in paper on Fidelity's market and at each later start whose market differs from the previous run's."
    )
    order_kind: str | None = Field(
        description="equity, option, multi_leg, replace, conditional or conditional_replace; null for cancels."
    )
    acct_num: str | None
    symbol: str | None = Field(
        description="The symbol; a multi-leg order's underlying; a conditional order's distinct leg symbols "
        "joined with '/'. Null for cancels (the order is named by conf_num)."
    )
    side: str | None = Field(
        description="The action code (B, S, SS, BC, ...); for multi-leg and conditional orders each leg's, "
        "joined with '/'; for cancels the action_code sent."
    )
    qty: float | None = Field(description="Shares or contracts; for multi-leg and conditional orders the first leg's.")
    price: float | None = Field(
        description="The limit price (net price for multi-leg), else the stop price; null for market orders."
    )
    conf_num: str | None = Field(description="The first of conf_nums, for convenience.")
    conf_nums: list[str] = Field(
        description="conf_num(s) of the order: those a place or cancel carried, or those the broker returned."
    )
    orig_conf_nums: list[str] = Field(description="The orders a replace or conditional replace replaces.")
    body_hash: str = Field(description="SHA-256 of the validated request body (the body itself is not kept).")
    idempotency_key: str | None = Field(description="The Idempotency-Key header of a place, if sent.")
    outcome: Outcome = Field(
        description="pending (broker call in flight), accepted, rejected (the broker said no), refused (ftdesk "
        "refused before the broker: live-trading gate, preview binding, Idempotency-Key), error (the call "
        "failed, e.g. AUTH_REQUIRED), unknown (the service stopped during the broker call: check the broker)."
    )
    error_code: str | None = Field(description="The error code the client received, when not accepted.")
    message: str | None = Field(description="The error message, or the broker's message for an accepted place.")


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


class JournalClosed(RuntimeError):
    """The journal is not open."""


NEW_JOURNAL_COMMAND = "ftdesk --new-journal"
"""Starts a new, empty order journal after the old one was found damaged (the damaged copy is kept)."""


def _refusal(path: Path, what: str) -> DataDirDamaged:
    return DataDirDamaged(
        f"The order journal {path} {what}. ftdesk never trades without its journal, so it did not start: check "
        f"your open orders at the broker, then start a new journal with: {NEW_JOURNAL_COMMAND} "
        "(the damaged copy stays where it is)"
    )


def create_journal(path: Path) -> None:
    """Create an empty journal with its tables; a journal that exists is left as it is.

    Made under a temporary name and renamed into place, so a journal file is never empty: an empty one at
    ``path`` is one that was emptied since, i.e. damaged.
    """
    if path.exists():
        return
    path.parent.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    building = path.with_name(path.name + ".new")
    for stale in (building, *(building.with_name(building.name + s) for s in ("-wal", "-shm", "-journal"))):
        stale.unlink(missing_ok=True)
    os.close(os.open(building, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DATA_FILE_MODE))
    conn = sqlite3.connect(building, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
    finally:
        conn.close()
    os.replace(building, path)


def start_new_journal(path: Path) -> str:
    """Create a new journal after a damaged one was moved aside (``ftdesk --new-journal``); return what it did."""
    copies = damaged_copies(path)
    if path.exists():
        damage = sqlite_damage(path)
        if damage is None:
            return f"The order journal {path} is whole; nothing to do"
        copies.append(move_aside(path))
    create_journal(path)
    kept = ", ".join(copy.name for copy in copies) or "none"
    return f"Started a new order journal at {path}; damaged copies kept beside it: {kept}"


class OrderJournal:
    """The SQLite order journal and Idempotency-Key store (blocking: call it through ``asyncio.to_thread``)."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # --- lifecycle -------------------------------------------------------------------------------

    def open(self) -> int:
        """Open (creating if needed) the journal; mark rows left ``pending`` as ``unknown``; return how many."""
        with self._lock:
            if self._conn is not None:
                return 0
            self._check_whole()
            # Created 0600 before SQLite opens it: SQLite gives its -wal, -shm and -journal files the database's mode.
            create_journal(self.path)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA busy_timeout=5000")
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            now = self._clock.now()
            with self._transaction() as tx:
                tx.execute(
                    "UPDATE order_journal SET outcome = ?, message = ?, finished_time = ?"
                    " WHERE outcome = ? AND action = ?",
                    (Outcome.UNKNOWN.value, HALT_CUT_SHORT, _iso(now), Outcome.PENDING.value, JournalAction.HALT.value),
                )
                unknown = tx.execute(
                    "UPDATE order_journal SET outcome = ?, message = ?, finished_time = ? WHERE outcome = ?",
                    (Outcome.UNKNOWN.value, UNKNOWN_MESSAGE, _iso(now), Outcome.PENDING.value),
                ).rowcount
                tx.execute("UPDATE idempotency_keys SET state = 'unknown' WHERE state = 'pending'")
                tx.execute("DELETE FROM idempotency_keys WHERE created < ?", (_iso(now - IDEMPOTENCY_RETENTION),))
        if unknown:
            log.warning(
                "Order journal: %d order action(s) were in flight when the service stopped; marked 'unknown'", unknown
            )
        return int(unknown)

    def _check_whole(self) -> None:
        """Refuse a damaged journal (moved aside, never replaced) and a missing one whose damaged copy is here.

        The refusal is one line the caller tells (stderr and the log) as the start fails.
        """
        damage = sqlite_damage(self.path)
        if damage is not None:
            moved = move_aside(self.path)
            raise _refusal(self.path, f"was damaged ({damage}); it was moved to {moved.name}")
        if not self.path.exists() and (copies := damaged_copies(self.path)):
            raise _refusal(self.path, f"is missing and its damaged copy {copies[-1].name} is beside it")

    def close(self) -> None:
        """Close the journal; idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the caller holds the lock)."""
        if self._conn is None:
            raise JournalClosed(f"The order journal {self.path} is not open")
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # --- journal rows ----------------------------------------------------------------------------

    def begin(self, draft: JournalDraft) -> int:
        """Record an order action as ``pending`` (before the broker call); return its entry id."""
        with self._lock, self._transaction() as tx:
            return self._insert(tx, draft, Outcome.PENDING, None, None)

    def record(
        self,
        draft: JournalDraft,
        outcome: Outcome,
        *,
        error_code: str | None = None,
        message: str | None = None,
        release_key: str | None = None,
    ) -> int:
        """Record a finished action in one row (a refusal); optionally free a reserved Idempotency-Key."""
        with self._lock, self._transaction() as tx:
            entry_id = self._insert(tx, draft, outcome, error_code, message)
            if outcome is not Outcome.PENDING:
                tx.execute("UPDATE order_journal SET finished_time = time WHERE entry_id = ?", (entry_id,))
            if release_key is not None:
                self._release(tx, release_key)
            return entry_id

    def finish(
        self,
        entry_id: int,
        outcome: Outcome,
        *,
        conf_nums: Sequence[str] | None = None,
        error_code: str | None = None,
        message: str | None = None,
        key: str | None = None,
        response: StoredResponse | None = None,
    ) -> None:
        """Record the outcome of a pending action; store (``response``) or free (``None``) its Idempotency-Key."""
        with self._lock, self._transaction() as tx:
            assignments = "outcome = ?, error_code = ?, message = ?, finished_time = ?"
            values: list[Any] = [outcome.value, error_code, message, _iso(self._clock.now())]
            if conf_nums:
                assignments += ", conf_nums = ?"
                values.append(json.dumps(list(conf_nums)))
            tx.execute(f"UPDATE order_journal SET {assignments} WHERE entry_id = ?", (*values, entry_id))
            if key is not None:
                if outcome is Outcome.UNKNOWN:
                    tx.execute(
                        "UPDATE idempotency_keys SET state = 'unknown', entry_id = ? WHERE idempotency_key = ?",
                        (entry_id, key),
                    )
                elif response is None:
                    self._release(tx, key)
                else:
                    tx.execute(
                        "UPDATE idempotency_keys SET state = 'done', status = ?, response = ?, entry_id = ?"
                        " WHERE idempotency_key = ?",
                        (response.status, response.body, entry_id, key),
                    )

    def _insert(
        self,
        tx: sqlite3.Connection,
        draft: JournalDraft,
        outcome: Outcome,
        error_code: str | None,
        message: str | None,
    ) -> int:
        now = self._clock.now()
        facts = draft.facts
        cursor = tx.execute(
            "INSERT INTO order_journal (time, day, request_id, endpoint, action, order_kind, acct_num, symbol, side,"
            " qty, price, conf_nums, orig_conf_nums, body_hash, idempotency_key, outcome, error_code, message)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                _iso(now),
                now.date().isoformat(),
                draft.request_id,
                draft.endpoint,
                draft.action.value,
                draft.order_kind,
                facts.acct_num,
                facts.symbol,
                facts.side,
                facts.qty,
                facts.price,
                json.dumps(list(facts.conf_nums)),
                json.dumps(list(facts.orig_conf_nums)),
                draft.body_hash,
                draft.idempotency_key,
                outcome.value,
                error_code,
                message,
            ),
        )
        return int(cursor.lastrowid or 0)

    def note_market(self, mode: str, *, first: bool) -> bool:
        """Journal the brokerage and market this run trades on when it differs from the last one noted; say if so.

        With nothing noted before, only a mode worth a row (``first``) is written: the default needs no entry.
        """
        with self._lock, self._transaction() as tx:
            row = tx.execute(
                "SELECT message FROM order_journal WHERE action = ? ORDER BY entry_id DESC LIMIT 1",
                (JournalAction.MARKET.value,),
            ).fetchone()
            previous = None if row is None else row[0]
            if previous == mode or (previous is None and not first):
                return False
            draft = JournalDraft(
                request_id=f"start-{self._clock.now():%Y%m%dT%H%M%S}",
                endpoint="service start" if previous is None else f"service start (was: {previous})",
                action=JournalAction.MARKET,
                order_kind=None,
                facts=OrderFacts(),
                body_hash="",
            )
            entry_id = self._insert(tx, draft, Outcome.ACCEPTED, None, mode)
            tx.execute("UPDATE order_journal SET finished_time = time WHERE entry_id = ?", (entry_id,))
            return True

    def entries(self, *, limit: int = 100, start: date | None = None, end: date | None = None) -> list[JournalEntry]:
        """Return journal entries newest first, optionally within UTC days ``start``..``end`` (inclusive)."""
        first = start.isoformat() if start else None
        last = end.isoformat() if end else None
        with self._lock:
            if self._conn is None:
                raise JournalClosed(f"The order journal {self.path} is not open")
            rows = self._conn.execute(
                "SELECT * FROM order_journal WHERE (? IS NULL OR day >= ?) AND (? IS NULL OR day <= ?)"
                " ORDER BY entry_id DESC LIMIT ?",
                (first, first, last, last, limit),
            ).fetchall()
        return [_entry(row) for row in rows]

    def last_halt(self) -> JournaledHalt | None:
        """Return the journal's copy of the kill switch (its newest halt or resume row), or None if it has none."""
        with self._lock:
            if self._conn is None:
                raise JournalClosed(f"The order journal {self.path} is not open")
            row = self._conn.execute(
                "SELECT action, time, endpoint FROM order_journal WHERE action IN (?, ?)"
                " ORDER BY entry_id DESC LIMIT 1",
                (JournalAction.HALT.value, JournalAction.RESUME.value),
            ).fetchone()
        if row is None:
            return None
        return JournaledHalt(
            halted=row["action"] == JournalAction.HALT.value,
            time=datetime.fromisoformat(row["time"]),
            by=str(row["endpoint"]),
        )

    # --- Idempotency-Key ---------------------------------------------------------------------------

    def claim_key(self, key: str, endpoint: str, body_hash: str) -> KeyClaim:
        """Look an Idempotency-Key up and, on first use, reserve it for this request (one transaction)."""
        with self._lock, self._transaction() as tx:
            row = tx.execute("SELECT * FROM idempotency_keys WHERE idempotency_key = ?", (key,)).fetchone()
            if row is None:
                tx.execute(
                    "INSERT INTO idempotency_keys (idempotency_key, endpoint, body_hash, state, created)"
                    " VALUES (?, ?, ?, 'pending', ?)",
                    (key, endpoint, body_hash, _iso(self._clock.now())),
                )
                return KeyClaim("new")
        if row["endpoint"] != endpoint or row["body_hash"] != body_hash:
            return KeyClaim("reused")
        if row["state"] == "done":
            return KeyClaim("replay", StoredResponse(status=int(row["status"]), body=str(row["response"])))
        if row["state"] == "unknown":
            return KeyClaim("unknown")
        return KeyClaim("in_flight")

    def release_key(self, key: str) -> None:
        """Forget a reserved key whose request never reached the broker."""
        with self._lock, self._transaction() as tx:
            self._release(tx, key)

    @staticmethod
    def _release(tx: sqlite3.Connection, key: str) -> None:
        tx.execute("DELETE FROM idempotency_keys WHERE idempotency_key = ? AND state = 'pending'", (key,))


def _entry(row: sqlite3.Row) -> JournalEntry:
    conf_nums = json.loads(row["conf_nums"])
    return JournalEntry(
        entry_id=row["entry_id"],
        time=datetime.fromisoformat(row["time"]),
        finished_time=datetime.fromisoformat(row["finished_time"]) if row["finished_time"] else None,
        request_id=row["request_id"],
        endpoint=row["endpoint"],
        action=JournalAction(row["action"]),
        order_kind=row["order_kind"],
        acct_num=row["acct_num"],
        symbol=row["symbol"],
        side=row["side"],
        qty=row["qty"],
        price=row["price"],
        conf_num=conf_nums[0] if conf_nums else None,
        conf_nums=conf_nums,
        orig_conf_nums=json.loads(row["orig_conf_nums"]),
        body_hash=row["body_hash"],
        idempotency_key=row["idempotency_key"],
        outcome=Outcome(row["outcome"]),
        error_code=row["error_code"],
        message=row["message"],
    )
