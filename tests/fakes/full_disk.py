"""A full disk under a SQLite connection, for the journal and the paper world (``fill``)."""

from __future__ import annotations

import sqlite3


class FullDisk:
    """A SQLite connection on a disk that fills up: while ``full``, each commit fails as SQLite's does there.

    In WAL mode SQLite writes a transaction's pages at its commit, so that is where a full disk answers
    SQLITE_FULL ("database or disk is full"); the transaction stays open and must be rolled back.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.full = True

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if self.full and sql.strip().upper() == "COMMIT":
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def fill(owner: object) -> FullDisk:
    """Put the journal's or the paper world's connection on a full disk; return it (``.full = False`` frees it)."""
    disk = FullDisk(owner._conn)  # type: ignore[attr-defined]
    owner._conn = disk  # type: ignore[attr-defined]
    return disk
