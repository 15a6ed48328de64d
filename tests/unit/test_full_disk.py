"""Every write site on a full disk: the journal, the safety file, the paper world, the log file, the reserve.

The disk is made full for real where SQLite can be told so (``PRAGMA max_page_count``: SQLite then answers
SQLITE_FULL, "database or disk is full", exactly as on a full disk) and with an ``OSError(ENOSPC)`` from the
file write elsewhere. tests/component/test_fault_processes.py fills a real 1 MiB tmpfs.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from pathlib import Path

import pytest

from ftdesk.brokers.paper.store import PaperStore
from ftdesk.data_dir import RESERVE_BYTES, RESERVE_FILE_NAME, DataDirSpace, is_disk_full
from ftdesk.domain.errors import StorageFull
from ftdesk.domain.safety import HaltState
from ftdesk.logs import PrivateRotatingFileHandler
from ftdesk.service.orders.journal import JournalAction, JournalDraft, OrderFacts, OrderJournal, Outcome
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from tests.fakes.clock import ManualClock
from tests.fakes.full_disk import fill

DISK_FULL = OSError(errno.ENOSPC, "No space left on device")


def draft(action: JournalAction, request_id: str, conf_num: str | None = None) -> JournalDraft:
    facts = OrderFacts(conf_nums=(conf_num,) if conf_num else ())
    return JournalDraft(request_id, f"test {action.value}", action, None, facts, "hash")


@pytest.fixture
def space(tmp_path: Path) -> DataDirSpace:
    made = DataDirSpace(tmp_path)
    made.prepare()
    return made


@pytest.fixture
def journal(tmp_path: Path, space: DataDirSpace) -> OrderJournal:
    opened = OrderJournal(tmp_path / "journal.sqlite3", ManualClock(), space)
    opened.open()
    yield opened
    opened.close()


def test_on_a_full_disk_a_preview_or_place_is_refused_naming_the_data_dir_and_its_free_space(
    journal: OrderJournal, tmp_path: Path
) -> None:
    fill(journal)
    for action in (JournalAction.PREVIEW, JournalAction.PLACE):
        with pytest.raises(StorageFull) as refused:
            journal.begin(draft(action, f"r-{action.value}"))
        assert str(tmp_path) in refused.value.message and "KiB free" in refused.value.message
        assert refused.value.details["data_dir"] == str(tmp_path) and refused.value.details["free_bytes"] >= 0
    with pytest.raises(StorageFull):
        journal.claim_key("key-1", "POST /place", "hash")
    assert journal.entries() == []


def test_on_a_full_disk_cancels_outcomes_and_halts_wait_in_memory_and_are_written_in_order_once_there_is_room(
    journal: OrderJournal, space: DataDirSpace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    placed = journal.begin(draft(JournalAction.PLACE, "place-1"))  # sent to the broker before the disk filled up
    disk = fill(journal)
    with caplog.at_level(logging.ERROR):
        journal.finish(placed, Outcome.ACCEPTED, conf_nums=["C1"])  # acknowledged: its outcome must not be lost
        cancel = journal.begin(draft(JournalAction.CANCEL, "halt-1", "C1"))  # a cancel goes out anyway
        journal.finish(cancel, Outcome.ACCEPTED)
        journal.record(draft(JournalAction.HALT, "halt-1"), Outcome.ACCEPTED, message="Trading halted by api")
    assert cancel < 0, "a temporary entry id until the row is written"
    assert not (tmp_path / RESERVE_FILE_NAME).exists(), "the reserve was freed for them"
    assert space.full and "previews and places are refused" in (space.problem() or "")
    kept = [r.getMessage() for r in caplog.records if "kept in memory" in r.getMessage()]
    assert len(kept) == 4 and "C1" in kept[0], kept  # each one logged as it was kept
    assert [e.outcome for e in journal.entries()] == [Outcome.PENDING]  # nothing written yet

    disk.full = False
    journal.record(draft(JournalAction.RESUME, "resume-1"), Outcome.ACCEPTED)  # the next write writes them first
    rows = list(reversed(journal.entries()))
    assert [(r.action, r.outcome) for r in rows] == [
        (JournalAction.PLACE, Outcome.ACCEPTED),
        (JournalAction.CANCEL, Outcome.ACCEPTED),
        (JournalAction.HALT, Outcome.ACCEPTED),
        (JournalAction.RESUME, Outcome.ACCEPTED),
    ]
    assert rows[0].conf_nums == ["C1"] and rows[1].conf_nums == ["C1"]
    assert not space.full and (tmp_path / RESERVE_FILE_NAME).stat().st_size == RESERVE_BYTES  # made again


def test_a_freed_reserve_gives_a_must_write_its_room(journal: OrderJournal, space: DataDirSpace) -> None:
    placed = journal.begin(draft(JournalAction.PLACE, "place-1"))
    disk = fill(journal)
    calls = []
    released = space.release

    def release_and_make_room(why: str) -> bool:  # freeing the reserve is what gives the disk room again
        calls.append(why)
        disk.full = False
        return released(why)

    space.release = release_and_make_room  # type: ignore[method-assign]
    journal.finish(placed, Outcome.ACCEPTED, conf_nums=["C1"])
    assert len(calls) == 1 and journal.entries()[0].outcome is Outcome.ACCEPTED  # written at once, not kept


def test_the_safety_file_on_a_full_disk_frees_the_reserve_then_is_rewritten_in_place(
    tmp_path: Path, space: DataDirSpace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SafetyStore(tmp_path, space)
    store.save(SafetyRecord())  # the file as a run leaves it: padded, so its blocks can take any record
    halted = SafetyRecord(halt=HaltState(halted=True, by="api"))
    monkeypatch.setattr("ftdesk.service.safety.store.tempfile.mkstemp", _full_disk)  # no new file can be made
    store.save(halted)
    assert not (tmp_path / RESERVE_FILE_NAME).exists()  # freed first (in vain here: the disk stays full)
    assert store.load(ManualClock().now()).halt.halted
    assert not list(tmp_path.glob(".safety-*"))


def test_the_safety_file_that_cannot_be_written_at_all_raises_storage_full(
    tmp_path: Path, space: DataDirSpace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SafetyStore(tmp_path, space)  # no file yet: nothing to rewrite in place
    monkeypatch.setattr("ftdesk.service.safety.store.tempfile.mkstemp", _full_disk)
    with pytest.raises(StorageFull):
        store.save(SafetyRecord(halt=HaltState(halted=True, by="api")))


def test_the_paper_world_on_a_full_disk_refuses_the_change_with_storage_full(tmp_path: Path) -> None:
    store = PaperStore(tmp_path / "paper.sqlite3", ["CREATE TABLE IF NOT EXISTS t (v TEXT)"])
    store.open()
    try:
        disk = fill(store)
        with pytest.raises(StorageFull) as refused, store.transaction() as conn:
            conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
        assert str(tmp_path) in refused.value.message
        disk.full = False
        with store.transaction() as conn:  # the transaction was rolled back: the world goes on
            conn.execute("INSERT INTO t VALUES ('y')")
    finally:
        store.close()


def test_a_log_file_on_a_full_disk_says_so_once_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handler = PrivateRotatingFileHandler(tmp_path / "ftdesk.log", maxBytes=0, encoding="utf-8")

    class FullStream:
        def write(self, _text: str) -> int:
            raise DISK_FULL

        def flush(self) -> None:
            raise DISK_FULL

        def close(self) -> None:
            pass

    logger = logging.getLogger("test.full_disk")
    logger.addHandler(handler)
    try:
        for n in range(3):
            handler.stream = FullStream()  # type: ignore[assignment]
            logger.error("record %d", n)
    finally:
        logger.removeHandler(handler)
        handler.close()
    err = capsys.readouterr().err
    assert err.count("cannot be written") == 1 and "Traceback" not in err, err


def test_the_reserve_is_made_where_there_is_room_and_freed_at_a_start_on_a_short_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    space = DataDirSpace(tmp_path)
    space.prepare()
    assert (tmp_path / RESERVE_FILE_NAME).stat().st_size == RESERVE_BYTES and not space.full
    monkeypatch.setattr("ftdesk.data_dir.free_bytes", lambda _path: RESERVE_BYTES // 2)
    DataDirSpace(tmp_path).prepare()
    assert not (tmp_path / RESERVE_FILE_NAME).exists()
    assert is_disk_full(DISK_FULL) and is_disk_full(sqlite3.OperationalError("database or disk is full"))


def _full_disk(*_args: object, **_kwargs: object) -> None:
    raise DISK_FULL


def test_a_start_on_a_full_disk_notes_its_market_once_there_is_room(journal: OrderJournal) -> None:
    disk = fill(journal)
    assert journal.note_market("paper on Fidelity's market", first=True) is False  # kept: the start goes on
    disk.full = False
    journal.record(draft(JournalAction.RESUME, "resume-1"), Outcome.ACCEPTED)
    assert [e.action for e in reversed(journal.entries())] == [JournalAction.MARKET, JournalAction.RESUME]
