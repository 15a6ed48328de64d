"""The order journal's file: made whole or not at all, and refused when damaged (never silently replaced).

A new journal is built under a temporary name and renamed into place, so a journal file is never empty: an
empty one is one that was emptied since. A damaged journal (emptied, cut short, not a database) is moved aside and
the start refused with the command that recovers, ``ftdesk --new-journal``: ftdesk never trades without its
journal, and it never starts a new one on its own.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ftdesk.data_dir import DATA_DIR_MODE, DATA_FILE_MODE, DataDirDamaged, damaged_copies, move_aside, sqlite_damage

NEW_JOURNAL_COMMAND = "ftdesk --new-journal"
"""Starts a new, empty order journal after the old one was found damaged (the damaged copy is kept)."""


def _refusal(path: Path, what: str) -> DataDirDamaged:
    return DataDirDamaged(
        f"The order journal {path} {what}. ftdesk never trades without its journal, so it did not start: check "
        f"your open orders at the broker, then start a new journal with: {NEW_JOURNAL_COMMAND} "
        "(the damaged copy stays where it is)"
    )


def create_journal(path: Path, schema: str, version: int) -> None:
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
        conn.executescript(schema)
        conn.execute(f"PRAGMA user_version={version}")
    finally:
        conn.close()
    os.replace(building, path)


def start_new_journal(path: Path, schema: str, version: int) -> str:
    """Create a new journal after a damaged one was moved aside (``ftdesk --new-journal``); return what it did."""
    copies = damaged_copies(path)
    if path.exists():
        damage = sqlite_damage(path)
        if damage is None:
            return f"The order journal {path} is whole; nothing to do"
        copies.append(move_aside(path))
    create_journal(path, schema, version)
    kept = ", ".join(copy.name for copy in copies) or "none"
    return f"Started a new order journal at {path}; damaged copies kept beside it: {kept}"


def check_whole(path: Path) -> None:
    """Refuse a damaged journal (moved aside, never replaced) and a missing one whose damaged copy is here.

    The refusal is one line the caller tells (stderr and the log) as the start fails.
    """
    damage = sqlite_damage(path)
    if damage is not None:
        moved = move_aside(path)
        raise _refusal(path, f"was damaged ({damage}); it was moved to {moved.name}")
    if not path.exists() and (copies := damaged_copies(path)):
        raise _refusal(path, f"is missing and its damaged copy {copies[-1].name} is beside it")
