"""The data dir's privacy (the dir and everything in it readable by the user alone) and its damaged files.

A damaged file (bytes that are not what ftdesk wrote: binary garbage, a cut or emptied database) is never
deleted and never silently replaced: it is moved aside under a name saying when (``move_aside``), and its
owner either starts fresh, saying so, or refuses to start with the command that recovers (``DataDirDamaged``).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from datetime import UTC, datetime
from pathlib import Path

DATA_DIR_MODE = 0o700
"""The data dir and its folders, on POSIX: the user alone may list or enter them."""
DATA_FILE_MODE = 0o600
"""Every file in the data dir, on POSIX: the user alone may read it (orders, credentials, logs, settings)."""


def secure_data_dir(data_dir: Path) -> list[str]:
    """Create the data dir 0700 and take group and other access off everything in it; return what changed.

    Files get 0600 and folders 0700 (POSIX only: elsewhere the per-user profile folder keeps other users
    out). Installs made before this existed had the umask's 0644/0755. The names returned are relative to
    the data dir ("." for the dir itself). Symbolic links are not followed out of the data dir.
    """
    if os.name != "posix":
        data_dir.mkdir(parents=True, exist_ok=True)
        return []
    data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    tightened: list[str] = []

    def tighten(path: Path, wanted: int) -> None:
        try:
            status = path.lstat()
            if stat.S_ISLNK(status.st_mode) or not status.st_mode & 0o077:
                return
            os.chmod(path, wanted)
        except OSError:  # gone meanwhile, or not ours: nothing this process could do about it
            return
        tightened.append(path.relative_to(data_dir).as_posix())

    tighten(data_dir, DATA_DIR_MODE)
    for root, folders, files in os.walk(data_dir):
        for name in folders:
            tighten(Path(root, name), DATA_DIR_MODE)
        for name in files:
            tighten(Path(root, name), DATA_FILE_MODE)
    return tightened


def tightened_message(data_dir: Path, tightened: list[str], *, shown: int = 8) -> str:
    """Return the one log line saying which data-dir entries ``secure_data_dir`` made private."""
    names = ", ".join(tightened[:shown]) + (f" and {len(tightened) - shown} more" if len(tightened) > shown else "")
    return (
        f"Data dir {data_dir}: made {len(tightened)} entries readable by this user only "
        f"(files 0600, folders 0700): {names}"
    )


DAMAGED_MARK = ".damaged-"
"""What a damaged file's new name adds to its old one, before the UTC time it was moved aside."""
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database, moved aside with it."""


class DataDirDamaged(Exception):
    """A data-dir file ftdesk cannot run without is damaged; the message is one line saying what to do."""


def move_aside(path: Path, now: datetime | None = None) -> Path:
    """Rename a damaged file (and SQLite's companions of it) to ``<name>.damaged-<UTC time>``; return the new path.

    Never deletes: the file stays in the data dir for the trader (or support) to look at.
    """
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}{DAMAGED_MARK}{stamp}")
    count = 1
    while target.exists():
        count += 1
        target = path.with_name(f"{path.name}{DAMAGED_MARK}{stamp}-{count}")
    os.replace(path, target)
    for suffix in SQLITE_COMPANIONS:
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            os.replace(companion, target.with_name(target.name + suffix))
    return target


def damaged_copies(path: Path) -> list[Path]:
    """Return the damaged copies of a data-dir file that ``move_aside`` left, oldest first."""
    if not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.glob(f"{path.name}{DAMAGED_MARK}*") if not p.name.endswith(SQLITE_COMPANIONS))


def sqlite_damage(path: Path) -> str | None:
    """Say what is wrong with an existing SQLite database file (empty, cut short, not a database), or None.

    A file that does not exist is not damaged (it will be created). A database ftdesk made is never empty:
    it is created with its header before it is used, so zero bytes is a file emptied since.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return "it is empty (0 bytes)"
    try:
        conn = sqlite3.connect(path)
    except sqlite3.Error as exc:
        return f"it cannot be opened as a database ({exc})"
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"it is not a whole database ({exc})"
    finally:
        conn.close()
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else f"it is not a whole database ({'; '.join(found[:2])})"
