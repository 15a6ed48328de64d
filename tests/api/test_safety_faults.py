"""The kill switch under faults, through the running paper service: a halt found at start-up, a lost safety file."""

from __future__ import annotations

from datetime import UTC, datetime

from ftdesk.domain.errors import StorageFull
from ftdesk.domain.safety import HaltState
from ftdesk.service.safety.store import SAFETY_FILE_NAME, SafetyRecord, SafetyStore
from tests.api import safety_rig
from tests.api.safety_rig import Desk
from tests.fakes.full_disk import fill

clock, make_desk = safety_rig.clock, safety_rig.make_desk  # fixtures


async def test_a_start_that_finds_a_halt_cancels_every_working_order_before_it_answers(make_desk, tmp_path) -> None:
    first: Desk = await make_desk()
    acct = await first.account()
    placed = [(await first.place(await first.resting_buy(acct, qty=n)))[1]["data"]["conf_num"] for n in (1, 2, 3)]
    assert len(await first.open_orders()) == 3
    await first.http.close()
    await first.control.stop()
    # What a crash right after the halt was saved leaves: halted, the orders still working at the broker.
    SafetyStore(tmp_path / "data").save(
        SafetyRecord(halt=HaltState(halted=True, since=datetime(2026, 3, 2, 15, 0, tzinfo=UTC), by="api"))
    )

    second: Desk = await make_desk(live=False, FTSERVICE_LIVE_TRADING="true")
    assert await second.open_orders() == []  # the first answer after the login already finds none working
    assert second.control.safety().halt.halted and second.control.status().live is False
    journal = await second.journal()
    sweep = next(e for e in journal if e["action"] == "halt" and e["endpoint"] == "safety (restart)")
    assert sorted(sweep["conf_nums"]) == sorted(placed) and sweep["outcome"] == "accepted"
    cancels = [e for e in journal if e["action"] == "cancel" and e["endpoint"] == "HALT cancel (restart)"]
    assert sorted(e["conf_num"] for e in cancels) == sorted(placed)
    assert {e["outcome"] for e in cancels} == {"accepted"}


async def test_deleting_the_safety_file_after_a_halt_keeps_trading_halted_and_says_so(make_desk, tmp_path) -> None:
    first: Desk = await make_desk()
    await first.ok("POST", "/safety/halt", json={"reason": "lunch"})
    await first.http.close()
    await first.control.stop()
    (tmp_path / "data" / SAFETY_FILE_NAME).unlink()

    second: Desk = await make_desk(live=False)
    halt = second.control.safety().halt
    assert halt.halted and halt.by == "api"
    (problem,) = second.control.status().problems
    assert f"{tmp_path / 'data' / SAFETY_FILE_NAME} is missing" in problem and "never resumed" in problem
    health = await second.ok("GET", "/health")
    assert health["problems"] == [problem]
    acct = await second.account()
    status, refused = await second.call("POST", "/orders/equity/preview", json=await second.resting_buy(acct))
    assert status == 409 and refused["error"]["code"] == "TRADING_HALTED"

    await second.ok("POST", "/safety/resume")  # the resume is journaled: the journal's copy is lifted too
    await second.http.close()
    await second.control.stop()
    (tmp_path / "data" / SAFETY_FILE_NAME).unlink()
    third: Desk = await make_desk(live=False)
    assert not third.control.safety().halt.halted and third.control.status().problems == ()


async def test_a_safety_file_saying_not_halted_loses_to_the_journals_unresumed_halt(make_desk, tmp_path) -> None:
    first: Desk = await make_desk()
    await first.ok("POST", "/safety/halt")
    await first.http.close()
    await first.control.stop()
    SafetyStore(tmp_path / "data").save(SafetyRecord())  # an old copy put back, or a bad edit

    second: Desk = await make_desk(live=False)
    assert second.control.safety().halt.halted
    (problem,) = second.control.status().problems
    assert "says trading is not halted, but the order journal's last halt" in problem


async def test_a_halt_on_a_full_disk_cancels_every_order_and_journals_the_cancels_once_there_is_room(
    make_desk,
) -> None:
    desk: Desk = await make_desk()
    acct = await desk.account()
    placed = [(await desk.place(await desk.resting_buy(acct, qty=n)))[1]["data"]["conf_num"] for n in (1, 2, 3)]
    journal = desk.control._require().context.orders._recorder.journal  # the journal's own connection fills up
    disk = fill(journal)

    status, refused = await desk.call("POST", "/orders/equity/preview", json=await desk.resting_buy(acct))
    assert status == 507 and refused["error"]["code"] == "STORAGE_FULL", refused
    halt = await desk.ok("POST", "/safety/halt")
    assert sorted(c["conf_num"] for c in halt["canceled"]) == sorted(placed) and halt["failures"] == []
    assert await desk.open_orders() == []  # the cancels went out though their rows could not be written
    assert any("STORAGE_FULL" in problem for problem in (await desk.ok("GET", "/health"))["problems"])

    disk.full = False  # room again: the next write writes what waited, in order
    await desk.ok("POST", "/safety/resume")
    journal_rows = await desk.journal()
    cancels = [e for e in journal_rows if e["action"] == "cancel"]
    assert sorted(e["conf_num"] for e in cancels) == sorted(placed) and {e["outcome"] for e in cancels} == {"accepted"}
    (halt_row,) = [e for e in journal_rows if e["action"] == "halt"]
    assert halt_row["outcome"] == "accepted" and sorted(halt_row["conf_nums"]) == sorted(placed)
    assert journal_rows[0]["action"] == "resume"  # written after what waited
    assert (await desk.ok("GET", "/health"))["problems"] == []


async def test_a_halt_that_cannot_be_saved_at_all_says_so_in_its_answer_health_and_the_tray(
    make_desk, monkeypatch
) -> None:
    desk: Desk = await make_desk()

    def no_room(self: SafetyStore, _record: SafetyRecord) -> None:
        raise StorageFull("The disk of the data dir is full (0 KiB free): the safety file cannot be written")

    monkeypatch.setattr(SafetyStore, "save", no_room)
    halt = await desk.ok("POST", "/safety/halt")
    assert halt["saved"] is False
    assert desk.control.safety().halt.halted  # it holds for this run
    (problem,) = [p for p in desk.control.status().problems if "could not be saved" in p]
    assert "holds for this run only" in problem and "safety file cannot be written" in problem
    assert problem in (await desk.ok("GET", "/health"))["problems"]
