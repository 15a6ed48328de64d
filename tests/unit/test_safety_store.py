"""The kill switch's file: kept as written, private, and read as HALTED when it cannot be read."""

from __future__ import annotations

import os
import stat
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from ftdesk.domain.safety import HaltState, LiveSwitchChange
from ftdesk.service.safety_store import SAFETY_FILE_NAME, SafetyRecord, SafetyStore

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
