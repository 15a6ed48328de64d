"""SQLite persistence of the paper world: one file in the data dir, every change in a transaction.

Components declare their tables as DDL strings; the store creates them on open. WAL mode with
``synchronous=NORMAL`` keeps every committed transaction across a killed process (a power loss may
drop the last ones), and a transaction that was not committed leaves no trace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ftdesk.data_dir import is_disk_full, move_aside, sqlite_damage, storage_full_error
from ftdesk.domain.errors import InternalError

log = logging.getLogger(__name__)

WAL_PAGES = 128
"""Pages the write-ahead log holds before SQLite copies them into the world and starts it over (512 KiB)."""

_META_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class PaperStore:
    """A SQLite database holding everything a paper user creates or changes."""

    def __init__(
        self, path: Path, schemas: Sequence[str] = (), *, on_damaged: Callable[[str], None] | None = None
    ) -> None:
        self.path = path
        self._schemas = [_META_SCHEMA, *schemas]
        self._conn: sqlite3.Connection | None = None
        self._depth = 0
        self._on_damaged = on_damaged

    def open(self) -> None:
        """Open (creating if needed) the database and its tables.

        A damaged world (emptied, cut short, not a database) is moved aside, never deleted, and a fresh one is
        created in its place, saying so (the log, and ``on_damaged`` for the tray): a paper world is simulated
        money, so starting over is safe, and its orders and notes stay in the moved file.
        """
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        damage = sqlite_damage(self.path)
        if damage is not None:
            moved = move_aside(self.path)
            notice = (
                f"The paper world {self.path} was damaged ({damage}); moved to {moved.name}. "
                "Started a fresh paper world (new accounts, no orders)"
            )
            log.error("%s", notice)
            if self._on_damaged is not None:
                self._on_damaged(notice)
        # Created 0600 before SQLite opens it: SQLite gives its -wal, -shm and -journal files the database's mode.
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            # A small write-ahead log, started over once copied in: the world fits a small or nearly full disk.
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
            for ddl in self._schemas:
                conn.executescript(ddl)
        except BaseException:
            conn.close()  # a file that is not a database (or a full disk) must not leave the file open
            raise
        self._conn = conn

    def compact_log(self) -> None:
        """Copy the write-ahead log into the database and cut it back (best effort: a busy or full disk skips it)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the database; idempotent."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        """Return the open connection."""
        if self._conn is None:
            raise InternalError("PaperStore is not open")
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run a block atomically; nested blocks join the outer transaction."""
        conn = self.conn
        if self._depth:
            self._depth += 1
            try:
                yield conn
            finally:
                self._depth -= 1
            return
        conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:  # a failed commit (a full disk) leaves the transaction open
                conn.execute("ROLLBACK")
            if is_disk_full(exc):
                raise storage_full_error(self.path.parent, "the paper world cannot record this change") from None
            raise
        finally:
            self._depth = 0

    def version(self) -> int | None:
        """Return a stamp that changes whenever the world's rows may have changed; None inside a transaction.

        The rows changed through this connection (``total_changes``, no query): the world is this process's
        alone and every write goes through this connection. Inside a transaction there is no stamp: what it
        changed may yet roll back.
        """
        conn = self.conn
        return None if conn.in_transaction else conn.total_changes

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Return all rows of a read query."""
        return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Row | None:
        """Return the first row of a read query, or None."""
        row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
        return row

    def get_meta(self, key: str) -> str | None:
        """Return a value of the key/value meta table."""
        row = self.query_one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        """Set a value of the key/value meta table (inside the caller's transaction, if any)."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
