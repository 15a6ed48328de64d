"""The kill switch's file: kept as written, private, and read as HALTED when it cannot be read."""

from __future__ import annotations

import os
import stat
import threading
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from ftdesk.domain.safety import HaltState, LiveSwitchChange
from ftdesk.service.orders.journal import OrderJournal
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.store import SAFETY_FILE_NAME, SafetyRecord, SafetyStore
from tests.fakes.clock import ManualClock

NOW = datetime(2026, 11, 25, 15, 30, tzinfo=UTC)


def test_nothing_stored_is_not_halted(tmp_path: Path) -> None:
    assert SafetyStore(tmp_path).load(NOW) == SafetyRecord()


def test_a_record_comes_back_as_saved(tmp_path: Path) -> None:
    record = SafetyRecord(
        halt=HaltState(halted=True, since=NOW, by="api", reason="lunch"),
        last_live_change=LiveSwitchChange(enabled=False, source="halt", time=NOW),
    ).with_loss_halt("X1", date(2026, 11, 25))
    store = SafetyStore(tmp_path)
    store.save(record)
    assert store.load(NOW) == record
    assert record.loss_halted_on("X1") == date(2026, 11, 25) and record.loss_halted_on("X2") is None
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / SAFETY_FILE_NAME).stat().st_mode) == 0o600


@pytest.mark.parametrize("text", ["{not json", '{"halt": {"halted": "maybe"}}', "[]"])
def test_an_unreadable_file_reads_as_halted(tmp_path: Path, text: str) -> None:
    (tmp_path / SAFETY_FILE_NAME).write_text(text)
    halt = SafetyStore(tmp_path).load(NOW).halt
    assert halt.halted and halt.by == "safety-file" and halt.since == NOW


class _SlowUnhaltedWrites(SafetyStore):
    """A disk on which a write of a not-halted record is slower than the halt's write that follows it."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.halt_written = threading.Event()

    def save(self, record: SafetyRecord) -> None:
        if not record.halt.halted:
            self.halt_written.wait(timeout=2)
        super().save(record)
        if record.halt.halted:
            self.halt_written.set()


async def test_a_halt_right_after_a_live_switch_is_what_the_file_keeps(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    journal = OrderJournal(tmp_path / "journal.sqlite", clock)
    journal.open()
    store = _SlowUnhaltedWrites(tmp_path)
    guard = SafetyGuard(store, journal, clock, SafetyRecord())
    guard.live_changed(True, "tray")  # its file write runs in the background
    await guard.set_halted("api", None)
    await guard.close()
    journal.close()
    kept = SafetyStore(tmp_path).load(NOW)
    assert kept.halt.halted and kept.halt.by == "api", "a restart must come back halted"
    assert kept.last_live_change is not None and kept.last_live_change.enabled
