"""Journal writes kept in memory while the disk is full, written out in order once it has room.

Only writes that must not be lost wait here: the outcome of an order action already sent, a cancel the kill
switch sends anyway (cancels reduce risk), a halt, resume or refusal row. A new preview or place never waits:
it is refused (``STORAGE_FULL``) before it reaches the broker. Each write kept is logged as it is kept, so the
log (stderr, when the log file is on the same full disk) holds it even if the process stops before the disk has
room. A row kept here has a temporary, negative entry id until it is written.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

Write = Callable[[sqlite3.Connection, Callable[[int], int]], Any]
"""One write in a transaction: given the connection and the resolver of temporary entry ids."""


@dataclass(frozen=True)
class _Kept:
    write: Write
    temporary_id: int | None  # the id handed out for a row this write inserts


class JournalBacklog:
    """Writes waiting for disk space, in the order they were asked for (the journal's lock guards it)."""

    def __init__(self) -> None:
        self._kept: list[_Kept] = []
        self._written: dict[int, int] = {}  # temporary id -> entry id, once written
        self._next_temporary = -1

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, write: Write, what: str, *, inserts_row: bool) -> int | None:
        """Keep a write for later and log it; return the temporary entry id of the row it inserts, if any."""
        temporary = None
        if inserts_row:
            temporary, self._next_temporary = self._next_temporary, self._next_temporary - 1
        self._kept.append(_Kept(write, temporary))
        log.error("Order journal: the disk is full; kept in memory until it has room: %s", what)
        return temporary

    def entry_id(self, entry_id: int) -> int:
        """Return the entry id a temporary id became (ids already real are returned as they are)."""
        return self._written.get(entry_id, entry_id)

    def flush(self, conn: sqlite3.Connection) -> dict[int, int]:
        """Make every kept write inside the caller's transaction; return the entry ids its rows got.

        Hand the ids to ``written`` once the transaction committed; if it rolled back, everything stays kept.
        """
        made: dict[int, int] = {}

        def resolve(entry_id: int) -> int:
            return made.get(entry_id, self._written.get(entry_id, entry_id))

        for kept in self._kept:
            result = kept.write(conn, resolve)
            if kept.temporary_id is not None:
                made[kept.temporary_id] = int(result)
        return made

    def written(self, made: dict[int, int]) -> None:
        """Forget the kept writes, now on disk (``made``: the entry ids their rows got)."""
        if self._kept:
            log.warning("Order journal: the disk had room again; wrote the %d write(s) kept in memory", len(self._kept))
        self._written.update(made)
        self._kept.clear()
