"""The kill switch's memory: ``safety.json`` in the data dir (0600), so a restart comes back halted.

The file holds the halt (halted, since, by, reason), the last change of the live-trading switch and the days
on which an account's daily loss limit halted trading (the journal keeps a second copy of the halt: see
``safety.guard``). It is replaced atomically (write a temp file, fsync,
rename): a crash leaves the old state or the new one, never half of one. An unreadable file is treated as
HALTED (the safe reading of "we do not know"), with the reason saying so; a damaged one (not text, nested too
deep, not a record) is moved aside first. On a full disk the data dir's space reserve is freed for it, and the
file, padded to ``RECORD_BYTES``, is rewritten in place when even that fails.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ftdesk.data_dir import DATA_DIR_MODE, DATA_FILE_MODE, DataDirSpace, is_disk_full, move_aside
from ftdesk.domain.errors import StorageFull
from ftdesk.domain.safety import HaltState, LiveSwitchChange

log = logging.getLogger(__name__)

SAFETY_FILE_NAME = "safety.json"
RECORD_BYTES = 2048
"""Size the safety file is padded to, so it can be rewritten in place on a full disk."""


@dataclass(frozen=True)
class SafetyRecord:
    """What the safety file keeps."""

    halt: HaltState = field(default_factory=lambda: HaltState(halted=False))
    last_live_change: LiveSwitchChange | None = None
    loss_halted: tuple[tuple[str, date], ...] = ()  # (acct_num, day) the loss limit halted trading

    def with_loss_halt(self, acct_num: str, day: date) -> SafetyRecord:
        """Return the record with the loss-limit halt of this account on this day noted (one per account)."""
        kept = tuple((acct, when) for acct, when in self.loss_halted if acct != acct_num)
        return replace(self, loss_halted=(*kept, (acct_num, day)))

    def loss_halted_on(self, acct_num: str) -> date | None:
        """Return the day the loss limit last halted trading for this account, if it ever did."""
        return next((when for acct, when in self.loss_halted if acct == acct_num), None)


class SafetyStore:
    """Reads and writes ``safety.json``; blocking, so the service calls it through ``asyncio.to_thread``."""

    def __init__(self, data_dir: Path, space: DataDirSpace | None = None) -> None:
        self.path = data_dir / SAFETY_FILE_NAME
        self.space = space
        self.notices: list[str] = []  # one line each: a damaged file this store moved aside

    def load(self, now: datetime) -> SafetyRecord:
        """Return the stored record; nothing stored is not halted, an unreadable file is halted.

        A file that is not what ftdesk writes (bytes that are not UTF-8, nesting no record has, a document of
        another shape) is moved aside (``<name>.damaged-<time>``) and named in ``notices`` and the log.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return SafetyRecord()
        except UnicodeDecodeError:
            return self._damaged(now, "its bytes are not text")
        except OSError as exc:
            return _unreadable(now, f"the safety file could not be read ({exc.strerror})")
        try:
            raw = json.loads(text)
            halt = HaltState.model_validate(raw["halt"])
            live = raw.get("last_live_change")
            return SafetyRecord(
                halt=halt,
                last_live_change=LiveSwitchChange.model_validate(live) if live else None,
                loss_halted=tuple((str(a), date.fromisoformat(str(d))) for a, d in raw.get("loss_halted", [])),
            )
        except RecursionError:
            return self._damaged(now, "it is nested far deeper than a safety record")
        except (ValueError, KeyError, TypeError) as exc:
            return self._damaged(now, f"it is not a safety record ({type(exc).__name__})")

    def _damaged(self, now: datetime, why: str) -> SafetyRecord:
        """Move the damaged file aside, say so once, and read it as halted."""
        try:
            moved = f"moved to {move_aside(self.path, now).name}"
        except OSError as exc:
            moved = f"could not be moved aside ({exc.strerror})"
        notice = (
            f"The safety file {self.path} was damaged ({why}); {moved}. Trading stays halted until the trader "
            "resumes (tray, or POST /api/v1/safety/resume)"
        )
        log.error("%s", notice)
        self.notices.append(notice)
        return _unreadable(now, f"the safety file was damaged ({why}) and {moved}")

    def save(self, record: SafetyRecord) -> None:
        """Replace the stored record atomically (0600); on a full disk, make room or rewrite the file in place.

        The document is padded to ``RECORD_BYTES``, so the file's blocks always hold a record: when the disk is
        full even after the space reserve is freed, the record is written over the old one in place (which
        needs no new space) rather than not at all. Raise ``StorageFull`` when neither works.
        """
        document: dict[str, Any] = {
            "halt": record.halt.model_dump(mode="json"),
            "last_live_change": record.last_live_change.model_dump(mode="json") if record.last_live_change else None,
            "loss_halted": [[acct, day.isoformat()] for acct, day in record.loss_halted],
        }
        text = json.dumps(document, indent=2)
        text += " " * (RECORD_BYTES - len(text.encode())) + "\n"  # JSON allows trailing blanks
        self.path.parent.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
        try:
            self._replace(text)
            return
        except OSError as exc:
            if not is_disk_full(exc):
                raise
        if self.space is not None and self.space.release("the kill switch's record"):
            with contextlib.suppress(OSError):
                self._replace(text)
                return
        try:
            self._overwrite(text)
        except OSError as exc:
            if not (is_disk_full(exc) or isinstance(exc, FileNotFoundError)):  # no file yet: none to rewrite
                raise
            if self.space is not None:
                raise self.space.note_full("the safety file cannot be written") from None
            raise StorageFull(f"The disk of {self.path.parent} is full: the safety file cannot be written") from None
        log.warning("The disk is full: the safety file %s was rewritten in place", self.path)

    def _replace(self, text: str) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".safety-", dir=self.path.parent)  # mkstemp makes it 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            if os.name == "posix":
                os.chmod(tmp, DATA_FILE_MODE)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _overwrite(self, text: str) -> None:
        """Write the record over the file's own blocks (a crash halfway reads as halted, never as trading)."""
        fd = os.open(self.path, os.O_WRONLY)  # FileNotFoundError: no file to rewrite, nothing to gain
        try:
            data = text.encode()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)


def _unreadable(now: datetime, why: str) -> SafetyRecord:
    return SafetyRecord(halt=HaltState(halted=True, since=now, by="safety-file", reason=f"{why}: resume once checked"))
