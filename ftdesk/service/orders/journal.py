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

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from ftdesk.data_dir import DataDirSpace, is_disk_full
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import StorageFull
from ftdesk.service.orders.journal_backlog import JournalBacklog, Write
from ftdesk.service.orders.journal_file import check_whole, create_journal
from ftdesk.service.orders.journal_file import start_new_journal as _start_new_journal
from ftdesk.service.orders.journal_rows import (
    JournalAction,
    JournalDraft,
    JournaledHalt,
    JournalEntry,
    KeyClaim,
    OrderFacts,
    Outcome,
    StoredResponse,
    entry_of,
)

__all__ = (  # the rows' types live in journal_rows; the journal is where callers find them
    "JOURNAL_FILE_NAME",
    "JournalAction",
    "JournalDraft",
    "JournalEntry",
    "JournaledHalt",
    "KeyClaim",
    "OrderFacts",
    "OrderJournal",
    "Outcome",
    "StoredResponse",
    "start_new_journal",
)

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


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


class JournalClosed(RuntimeError):
    """The journal is not open."""


def start_new_journal(path: Path) -> str:
    """Create a new journal after a damaged one was moved aside (``ftdesk --new-journal``); return what it did."""
    return _start_new_journal(path, _SCHEMA, _SCHEMA_VERSION)


# Actions whose row may wait in memory on a full disk while the broker is called anyway: they reduce risk.
_RISK_REDUCING = frozenset({JournalAction.CANCEL, JournalAction.CANCEL_PREVIEW, JournalAction.HALT})
WAL_PAGES = 64
"""Pages the journal's write-ahead log holds before SQLite copies them into the journal and starts it over, so
the log stays small (256 KiB) on a small or nearly full disk."""


class OrderJournal:
    """The SQLite order journal and Idempotency-Key store (blocking: call it through ``asyncio.to_thread``).

    On a full disk (``space``): a new preview or place is refused with ``STORAGE_FULL`` (nothing is sent);
    every write that must not be lost (an outcome, a cancel, a halt) first frees the data dir's space reserve and,
    if the disk is still full, waits in memory (``journal_backlog``) and is written once there is room.
    """

    def __init__(self, path: Path, clock: Clock, space: DataDirSpace | None = None) -> None:
        self.path = path
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.space = space
        self._backlog = JournalBacklog()

    # --- lifecycle -------------------------------------------------------------------------------

    def open(self) -> int:
        """Open (creating if needed) the journal; mark rows left ``pending`` as ``unknown``; return how many."""
        with self._lock:
            if self._conn is not None:
                return 0
            check_whole(self.path)
            # Created 0600 before SQLite opens it: SQLite gives its -wal, -shm and -journal files the database's mode.
            create_journal(self.path, _SCHEMA, _SCHEMA_VERSION)
            os.close(os.open(self.path, os.O_WRONLY))  # a folder in its place fails here, as an OSError
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA busy_timeout=5000")
                conn.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
                conn.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            now = self._clock.now()

            def mark_unknown(tx: sqlite3.Connection, _resolve: Any) -> int:
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
                return int(unknown)

            found = self._write(mark_unknown, "rows a stopped run left pending marked unknown", must=True)
            unknown = int(found) if isinstance(found, int) and found > 0 else 0
        if unknown:
            log.warning(
                "Order journal: %d order action(s) were in flight when the service stopped; marked 'unknown'", unknown
            )
        return int(unknown)

    def close(self) -> None:
        """Close the journal; idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the caller holds the lock); a failed commit (a full disk) is rolled back."""
        if self._conn is None:
            raise JournalClosed(f"The order journal {self.path} is not open")
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _write(self, write: Write, what: str, *, must: bool, inserts_row: bool = False) -> Any:
        """Make one write (the caller holds the lock), after the writes kept from a full disk.

        A full disk: a write that may fail raises ``STORAGE_FULL``; one that must not (``must``) frees the space
        reserve and tries again, then waits in the backlog (returning a row's temporary entry id, or None).
        """
        self._flush_backlog()
        if not len(self._backlog):
            try:
                return self._once(write)
            except (sqlite3.Error, OSError) as exc:
                if not is_disk_full(exc):
                    raise
                if not must:
                    raise self._full(what) from None
            self._make_room(what)
            try:
                return self._once(write)
            except (sqlite3.Error, OSError) as exc:
                if not is_disk_full(exc):
                    raise
        elif not must:  # writes are waiting for room: a new order action would only join them
            raise self._full(what)
        return self._backlog.keep(write, what, inserts_row=inserts_row)

    def _once(self, write: Write) -> Any:
        with self._transaction() as tx:
            result = write(tx, self._backlog.entry_id)
        if self.space is not None and self.space.full:
            self.space.check()  # room again: the reserve is made again, previews and places work again
        return result

    def _flush_backlog(self) -> None:
        if not len(self._backlog):
            return
        try:
            with self._transaction() as tx:
                made = self._backlog.flush(tx)
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_full(exc):
                log.exception("Order journal: could not write the writes kept in memory")
            return
        self._backlog.written(made)

    def _make_room(self, what: str) -> None:
        assert self._conn is not None
        with contextlib.suppress(sqlite3.Error):  # the write-ahead log copied into the journal, cut back: space
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if self.space is not None:
            self.space.release(what)

    def _full(self, what: str) -> Exception:
        if self.space is not None:
            return self.space.note_full(f"the order journal cannot record {what}, so nothing was sent to the broker")
        return StorageFull(f"The disk of {self.path.parent} is full: the order journal cannot record {what}")

    # --- journal rows ----------------------------------------------------------------------------

    def begin(self, draft: JournalDraft) -> int:
        """Record an order action as ``pending`` (before the broker call); return its entry id.

        On a full disk a preview or place raises ``STORAGE_FULL``; a cancel or halt gets its row kept in memory
        (a temporary, negative entry id) and goes on: a cancel reduces risk.
        """
        what = f"{draft.action.value} {draft.endpoint} (request {draft.request_id})"
        must = draft.action in _RISK_REDUCING
        with self._lock:
            entry_id = self._write(
                lambda tx, _resolve: self._insert(tx, draft, Outcome.PENDING, None, None),
                what,
                must=must,
                inserts_row=True,
            )
            return int(entry_id)

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

        def write(tx: sqlite3.Connection, _resolve: Any) -> int:
            entry_id = self._insert(tx, draft, outcome, error_code, message)
            if outcome is not Outcome.PENDING:
                tx.execute("UPDATE order_journal SET finished_time = time WHERE entry_id = ?", (entry_id,))
            if release_key is not None:
                self._release(tx, release_key)
            return entry_id

        what = f"{draft.action.value} {draft.endpoint} {outcome.value}: {message or error_code or ''}"
        with self._lock:
            return int(self._write(write, what, must=True, inserts_row=True))

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
        """Record the outcome of a pending action; store (``response``) or free (``None``) its Idempotency-Key.

        The outcome of an action the broker was asked for is never lost: on a full disk it waits in memory.
        """
        finished = _iso(self._clock.now())

        def write(tx: sqlite3.Connection, resolve: Any) -> None:
            self._finish(tx, resolve(entry_id), outcome, finished, conf_nums, error_code, message, key, response)

        what = f"the outcome of entry {entry_id}: {outcome.value} {' '.join(conf_nums or ())} {message or ''}"
        with self._lock:
            self._write(write, what.strip(), must=True)

    def _finish(
        self,
        tx: sqlite3.Connection,
        entry_id: int,
        outcome: Outcome,
        finished: str,
        conf_nums: Sequence[str] | None,
        error_code: str | None,
        message: str | None,
        key: str | None,
        response: StoredResponse | None,
    ) -> None:
        assignments = "outcome = ?, error_code = ?, message = ?, finished_time = ?"
        values: list[Any] = [outcome.value, error_code, message, finished]
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

        def write(tx: sqlite3.Connection, _resolve: Any) -> bool:
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

        with self._lock:  # on a full disk the row waits in memory like any other (the start goes on)
            return self._write(write, f"the market this run trades on: {mode}", must=True) is True

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
        return [entry_of(row) for row in rows]

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
        created = _iso(self._clock.now())

        def write(tx: sqlite3.Connection, _resolve: Any) -> sqlite3.Row | None:
            found: sqlite3.Row | None = tx.execute(
                "SELECT * FROM idempotency_keys WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if found is None:
                tx.execute(
                    "INSERT INTO idempotency_keys (idempotency_key, endpoint, body_hash, state, created)"
                    " VALUES (?, ?, ?, 'pending', ?)",
                    (key, endpoint, body_hash, created),
                )
            return found

        with self._lock:
            row = self._write(write, f"the Idempotency-Key of a place to {endpoint}", must=False)
        if row is None:
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
        with self._lock:
            self._write(lambda tx, _resolve: self._release(tx, key), "an Idempotency-Key freed", must=True)

    @staticmethod
    def _release(tx: sqlite3.Connection, key: str) -> None:
        tx.execute("DELETE FROM idempotency_keys WHERE idempotency_key = ? AND state = 'pending'", (key,))
