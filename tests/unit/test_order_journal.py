"""The order journal and Idempotency-Key store, and the desk's journal writes around a broker call."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from ftdesk.domain import errors as e
from ftdesk.domain.orders import EquityAction, EquityOrder, OrderPlacement, OrderStatus, PriceType
from ftdesk.service.orders.approvals import ApprovalBook
from ftdesk.service.orders.commands import PlaceEquity
from ftdesk.service.orders.desk import OrderDesk
from ftdesk.service.orders.journal import (
    JOURNAL_FILE_NAME,
    JournalAction,
    JournalDraft,
    OrderFacts,
    OrderJournal,
    Outcome,
    StoredResponse,
)
from ftdesk.service.orders.previews import OrderKind, PreviewBook
from ftdesk.service.orders.recorder import OrderRecorder, OrderTicket, PlacesInFlight
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.store import SafetyRecord, SafetyStore
from ftdesk.service.safety.sweep import KillSwitch
from ftdesk.service.switches import LiveTradingSwitch, SettingsHolder
from tests.fakes.clock import ManualClock

PLACE = "POST /api/v1/orders/equity/place"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def journal(tmp_path: Path, clock: ManualClock) -> OrderJournal:
    opened = OrderJournal(tmp_path / JOURNAL_FILE_NAME, clock)
    assert opened.open() == 0
    yield opened
    opened.close()


def draft(request_id: str = "req-1", key: str | None = None, **facts: Any) -> JournalDraft:
    values = {"acct_num": "PAP1", "symbol": "AAPL", "side": "B", "qty": 10.0, "price": 150.25, **facts}
    return JournalDraft(
        request_id=request_id,
        endpoint=PLACE,
        action=JournalAction.PLACE,
        order_kind="equity",
        facts=OrderFacts(**values),
        body_hash="ab" * 32,
        idempotency_key=key,
    )


def test_an_action_is_pending_until_its_outcome_is_recorded(journal: OrderJournal, clock: ManualClock) -> None:
    entry_id = journal.begin(draft(conf_nums=("CONF0001",)))
    (pending,) = journal.entries()
    assert (pending.entry_id, pending.outcome, pending.finished_time) == (entry_id, Outcome.PENDING, None)
    assert (pending.acct_num, pending.symbol, pending.side, pending.qty, pending.price) == (
        "PAP1",
        "AAPL",
        "B",
        10.0,
        150.25,
    )
    assert pending.conf_num == "CONF0001" and pending.time == clock.now()

    clock.set_wall(clock.now() + timedelta(seconds=2))
    journal.finish(entry_id, Outcome.ACCEPTED, conf_nums=["CONF0001", "CONF0002"], message="Open")
    (done,) = journal.entries()
    assert (done.outcome, done.message, done.error_code) == (Outcome.ACCEPTED, "Open", None)
    assert done.conf_nums == ["CONF0001", "CONF0002"] and done.finished_time == clock.now()


def test_the_journal_keeps_facts_and_a_hash_never_a_body(journal: OrderJournal) -> None:
    journal.begin(draft())
    conn = sqlite3.connect(journal.path)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(order_journal)")}
    conn.close()
    assert "body_hash" in columns
    assert not columns & {"body", "payload", "request", "password", "api_key"}


def test_entries_are_newest_first_within_utc_days_and_a_limit(journal: OrderJournal, clock: ManualClock) -> None:
    first_day = clock.now().date()
    journal.begin(draft("day-1"))
    clock.set_wall(clock.now() + timedelta(days=1))
    journal.begin(draft("day-2a"))
    journal.begin(draft("day-2b"))
    assert [x.request_id for x in journal.entries()] == ["day-2b", "day-2a", "day-1"]
    assert [x.request_id for x in journal.entries(limit=1)] == ["day-2b"]
    assert [x.request_id for x in journal.entries(start=first_day, end=first_day)] == ["day-1"]
    assert [x.request_id for x in journal.entries(start=first_day + timedelta(days=1))] == ["day-2b", "day-2a"]
    assert journal.entries(end=first_day - timedelta(days=1)) == []


def test_a_refusal_is_one_finished_row(journal: OrderJournal) -> None:
    journal.record(draft(), Outcome.REFUSED, error_code="LIVE_TRADING_DISABLED", message="dry-run")
    (row,) = journal.entries()
    assert (row.outcome, row.error_code, row.message) == (Outcome.REFUSED, "LIVE_TRADING_DISABLED", "dry-run")
    assert row.finished_time == row.time


def test_rows_left_pending_become_unknown_when_the_journal_opens(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / JOURNAL_FILE_NAME
    first = OrderJournal(path, clock)
    first.open()
    finished = first.begin(draft("finished"))
    first.finish(finished, Outcome.ACCEPTED)
    first.claim_key("key-in-flight", PLACE, "h1")
    first.begin(draft("in-flight", key="key-in-flight"))
    first.close()  # the process "died" during the broker call

    second = OrderJournal(path, clock)
    assert second.open() == 1
    outcomes = {x.request_id: (x.outcome, x.message) for x in second.entries()}
    assert outcomes["finished"] == (Outcome.ACCEPTED, None)
    assert outcomes["in-flight"][0] is Outcome.UNKNOWN and "check GET /api/v1/orders/status" in outcomes["in-flight"][1]
    assert second.claim_key("key-in-flight", PLACE, "h1").state == "unknown"
    assert second.open() == 0  # already open: nothing more to mark
    second.close()
    second.close()  # idempotent


def test_an_idempotency_key_is_reserved_then_remembers_the_answer(journal: OrderJournal) -> None:
    assert journal.claim_key("k", PLACE, "h1").state == "new"
    assert journal.claim_key("k", PLACE, "h1").state == "in_flight"
    assert journal.claim_key("k", PLACE, "h2").state == "reused"
    assert journal.claim_key("k", "POST /api/v1/orders/option/place", "h1").state == "reused"
    entry_id = journal.begin(draft(key="k"))
    journal.finish(entry_id, Outcome.ACCEPTED, key="k", response=StoredResponse(200, '{"ok":true}'))
    replay = journal.claim_key("k", PLACE, "h1")
    assert (replay.state, replay.response) == ("replay", StoredResponse(200, '{"ok":true}'))
    journal.release_key("k")  # a finished key is never released
    assert journal.claim_key("k", PLACE, "h1").state == "replay"


def test_a_key_whose_request_never_reached_the_broker_is_freed(journal: OrderJournal) -> None:
    journal.claim_key("refused", PLACE, "h1")
    journal.record(draft(key="refused"), Outcome.REFUSED, error_code="PREVIEW_REQUIRED", release_key="refused")
    assert journal.claim_key("refused", PLACE, "h2").state == "new"
    entry_id = journal.begin(draft(key="refused"))
    journal.finish(entry_id, Outcome.ERROR, error_code="AUTH_REQUIRED", key="refused", response=None)
    assert journal.claim_key("refused", PLACE, "h3").state == "new"


def test_keys_older_than_30_days_are_pruned_at_open(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / JOURNAL_FILE_NAME
    first = OrderJournal(path, clock)
    first.open()
    first.claim_key("old", PLACE, "h")
    first.finish(first.begin(draft(key="old")), Outcome.ACCEPTED, key="old", response=StoredResponse(200, "{}"))
    first.close()
    clock.set_wall(clock.now() + timedelta(days=31))
    second = OrderJournal(path, clock)
    second.open()
    assert second.claim_key("old", PLACE, "h").state == "new"
    assert len(second.entries()) == 1  # journal rows are kept
    second.close()


def test_a_closed_journal_refuses_writes(journal: OrderJournal) -> None:
    journal.close()
    with pytest.raises(RuntimeError, match="not open"):
        journal.begin(draft())


# --- the desk around a broker call ----------------------------------------------------------------------------


def ticket(key: str | None = "desk-key", conf: str = "CONF0001") -> OrderTicket:
    return OrderTicket(
        request_id="req-desk",
        endpoint=PLACE,
        facts=OrderFacts(acct_num="PAP1", symbol="AAPL", side="B", qty=1, conf_nums=(conf,)),
        body_hash="cd" * 32,
        fields={"qty": 1},
        conf_nums=(conf,),
        idempotency_key=key,
    )


def equity_order() -> EquityOrder:
    return EquityOrder(acct_num="PAP1", symbol="AAPL", action=EquityAction.BUY, qty=1, price_type=PriceType.MARKET)


class _Broker:
    """A broker whose orders group places with the test's function, as the session hands it to the desk."""

    def __init__(self, place: Any) -> None:
        self.orders = self
        self.place_equity_order = place


class _Session:
    """The brokerage session, logged in: runs the operation once on the broker."""

    def __init__(self, broker: _Broker) -> None:
        self.broker = broker

    async def run(self, operation: Any, *, retry_on_expiry: bool = True) -> Any:
        return await operation(self.broker)


async def open_desk(tmp_path: Path, clock: ManualClock, settings: Any, place: Any) -> tuple[OrderDesk, OrderRecorder]:
    """Build the desk as the composition root does, on a broker that places with ``place``; live trading on."""
    recorder = OrderRecorder(OrderJournal(tmp_path / JOURNAL_FILE_NAME, clock))
    await recorder.open()
    session: Any = _Session(_Broker(place))
    guard = SafetyGuard(SafetyStore(tmp_path), recorder.journal, clock, SafetyRecord())
    live, in_flight = LiveTradingSwitch(True), PlacesInFlight()
    kill_switch = KillSwitch(guard, live, session, recorder, in_flight)
    holder = SettingsHolder(settings)
    desk = OrderDesk(
        recorder, PreviewBook(clock), guard, kill_switch, live, session, in_flight, holder, ApprovalBook(clock)
    )
    return desk, recorder


def place_command() -> PlaceEquity:
    return PlaceEquity(equity_order(), "CONF0001")


async def test_a_place_cancelled_at_the_broker_is_recorded_as_unknown(
    tmp_path: Path, clock: ManualClock, make_settings: Any
) -> None:
    at_broker = asyncio.Event()

    async def never_answers(*_args: Any) -> OrderPlacement:
        at_broker.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    desk, recorder = await open_desk(tmp_path, clock, make_settings(), never_answers)
    desk.previews.register(OrderKind.EQUITY, ["CONF0001"], {"qty": 1})
    task = asyncio.create_task(desk.place(place_command(), ticket()))
    await at_broker.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await recorder.close()  # waits for the outcome write

    journal = OrderJournal(tmp_path / JOURNAL_FILE_NAME, clock)
    assert journal.open() == 0
    (entry,) = journal.entries()
    assert (entry.outcome, entry.idempotency_key) == (Outcome.UNKNOWN, "desk-key")
    assert journal.claim_key("desk-key", PLACE, "cd" * 32).state == "unknown"
    journal.close()
    assert desk.previews._by_conf["CONF0001"].state == "used"


async def test_nothing_is_sent_when_the_journal_cannot_be_written(
    tmp_path: Path, clock: ManualClock, make_settings: Any
) -> None:
    sent: list[str] = []

    async def place(*_args: Any) -> OrderPlacement:
        sent.append("placed")
        return OrderPlacement(conf_num="CONF0001", acct_num="PAP1", status=OrderStatus.OPEN)

    desk, _recorder = await open_desk(tmp_path, clock, make_settings(), place)
    desk.previews.register(OrderKind.EQUITY, ["CONF0001"], {"qty": 1})
    desk.journal.close()  # e.g. the disk went away
    with pytest.raises(e.InternalError, match="nothing was sent to the broker"):
        await desk.place(place_command(), ticket(key=None))
    assert sent == []

    desk.journal.open()
    placed = await desk.place(place_command(), ticket(key=None))  # the preview was not used up
    assert isinstance(placed, OrderPlacement) and sent == ["placed"]
    (entry,) = await desk.entries(limit=10, start=date(2000, 1, 1), end=None)
    assert entry.outcome is Outcome.ACCEPTED
    desk.journal.close()
