"""The data dir's privacy (the dir and everything in it readable by the user alone) and its damaged files.

A damaged file (bytes that are not what ftdesk wrote: binary garbage, a cut or emptied database) is never
deleted and never silently replaced: it is moved aside under a name saying when (``move_aside``), and its
owner either starts fresh, saying so, or refuses to start with the command that recovers (``DataDirDamaged``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ftdesk.domain.errors import StorageFull

log = logging.getLogger(__name__)

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
    A file that cannot be opened at all (a folder in its place, no permission) is not called damaged either:
    opening it fails with that error, as it should.
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    if status.st_size == 0:
        return "it is empty (0 bytes)"
    try:
        conn = sqlite3.connect(path)
    except sqlite3.Error:
        return None
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError:  # could not be read (locked, no permission): not what it holds
        return None
    except sqlite3.DatabaseError as exc:
        return f"it is not a whole database ({exc})"
    finally:
        conn.close()
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else f"it is not a whole database ({'; '.join(found[:2])})"


RESERVE_FILE_NAME = "space.reserve"
RESERVE_BYTES = 128 * 1024
"""Disk space the data dir keeps in reserve (a file of zeros) for what must be written on a full disk: the
outcomes of order actions already acknowledged, a halt and its cancels. Released on the first such write that
finds the disk full (or at a start with less free space than this), made again once space returns."""
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def is_disk_full(exc: BaseException) -> bool:
    """Say whether a failed write failed because the disk (or the user's quota) is full."""
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return False


def free_bytes(path: Path) -> int | None:
    """Return the free space of the disk holding ``path`` (None when it cannot be read)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def storage_full_error(data_dir: Path, what: str) -> StorageFull:
    """Return the ``STORAGE_FULL`` refusal naming the data dir and its free space."""
    free = free_bytes(data_dir)
    shown = "unknown" if free is None else f"{free / 1024:,.0f} KiB"
    return StorageFull(
        f"The disk of the data dir {data_dir} is full ({shown} free): {what}. Free some space on that disk; "
        "cancels and the kill switch still work",
        details={"data_dir": str(data_dir), "free_bytes": free},
    )


class DataDirSpace:
    """The data dir's reserve of disk space and whether a write found the disk full (blocking: call off the loop).

    ``release`` frees the reserve for a write that must not fail (an outcome, a halt, a cancel); ``check``
    makes it again once the disk has room for it twice over, and says whether the disk is still short.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.reserve = data_dir / RESERVE_FILE_NAME
        self.full = False  # a write found the disk full and the reserve is not back yet
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (from any thread) when the disk becomes full or has room again."""
        self._listeners.append(listener)

    def _set_full(self, full: bool) -> None:
        if full != self.full:
            self.full = full
            for listener in list(self._listeners):
                listener()

    def problem(self) -> str | None:
        """Return the one line the tray and /health show while the disk is full."""
        if not self.full:
            return None
        return storage_full_error(self.data_dir, "previews and places are refused (STORAGE_FULL)").message

    def check(self) -> bool:
        """Make the reserve when the disk has room for it (twice over); return whether the disk is short."""
        if self.reserve.exists():
            self._set_full(False)
            return False
        free = free_bytes(self.data_dir)
        if free is None or free < 2 * RESERVE_BYTES:
            return True
        try:
            self.data_dir.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
            fd = os.open(self.reserve, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, DATA_FILE_MODE)
            try:
                os.write(fd, bytes(RESERVE_BYTES))  # real blocks, not a sparse file
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self.reserve.unlink(missing_ok=True)
            log.warning("Could not make the data dir's space reserve %s (%s)", self.reserve, exc.strerror)
            return True
        if self.full:
            log.warning("The data dir %s has room again: previews and places work again", self.data_dir)
        self._set_full(False)
        return False

    def release(self, why: str) -> bool:
        """Free the reserve for a write that must not fail; return whether there was one to free."""
        self._set_full(True)
        try:
            self.reserve.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.error("Could not release the space reserve %s (%s)", self.reserve, exc.strerror)
            return False
        log.error(
            "The disk of the data dir %s is full: released its %d KiB reserve for %s; previews and places are refused "
            "(STORAGE_FULL) until there is room again",
            self.data_dir,
            RESERVE_BYTES // 1024,
            why,
        )
        return True

    def prepare(self) -> None:
        """At start: free the reserve on a disk with less room than it holds, else make it if it is missing."""
        if not self.release_if_short("a start on a full disk"):
            self.check()

    def release_if_short(self, why: str) -> bool:
        """Free the reserve when the disk has less free space than it holds; return whether it did."""
        free = free_bytes(self.data_dir)
        return free is not None and free < RESERVE_BYTES and self.reserve.exists() and self.release(why)

    def note_full(self, what: str) -> StorageFull:
        """Record that a write found the disk full; return the refusal to raise."""
        self._set_full(True)
        return storage_full_error(self.data_dir, what)
