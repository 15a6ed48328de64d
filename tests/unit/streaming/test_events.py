"""The account-event hub on the paper event bus: ids, replay, eviction, overflow, reconnects and the session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ftdesk.brokers.paper.feeds import EventBus, PaperAccountEventFeed
from ftdesk.domain.errors import StreamingUnavailable
from ftdesk.domain.events import AccountEvent, account_event
from ftdesk.streaming.event_consumer import EventConsumer
from ftdesk.streaming.event_hub import (
    REPLAY_EARLIER_RUN,
    REPLAY_EVICTED,
    REPLAY_UNKNOWN_ID,
    AccountEventHub,
    first_event_id,
)
from ftdesk.streaming.models import ConsumerClosed, HubState
from tests.fakes.clock import ANCHOR, ManualClock
from tests.unit.streaming.helpers import settle

BACKOFF = (1.0, 2.0)


def fill(n: int) -> AccountEvent:
    """Return the n-th fill event of a test."""
    return account_event(
        "MFCEX", {"acct_num": "X1", "conf_num": f"C{n}", "symbol": "AAPL", "qty": n}, time="2026-11-16T15:00:00+00:00"
    )


class Desk:
    """A hub over a paper event bus, on a manual clock."""

    def __init__(self, bus_capacity: int = 10_000, **hub_options: Any) -> None:
        self.clock = ManualClock()
        self.bus = EventBus(bus_capacity)
        self.hub = AccountEventHub(PaperAccountEventFeed(self.bus), self.clock, backoff=BACKOFF, **hub_options)

    async def publish(self, *numbers: int) -> None:
        for n in numbers:
            self.bus.publish(fill(n))
        await settle()

    async def advance(self, seconds: float) -> None:
        await settle()
        await self.clock.advance(seconds)
        await settle()

    def state(self) -> HubState:
        return self.hub.state


@pytest.fixture
async def desks() -> AsyncIterator[list[Desk]]:
    made: list[Desk] = []
    yield made
    for desk in made:
        await desk.hub.close()
        await settle()
        assert desk.bus.connection_count == 0, "close() left the upstream connection open"
        assert desk.clock.sleeper_count == 0, "the hub left a task sleeping after close()"


async def started(desks: list[Desk], *, login: bool = True, **options: Any) -> Desk:
    desk = Desk(**options)
    desks.append(desk)
    await desk.hub.start()
    if login:
        desk.hub.set_session_active(True)
    await settle()
    return desk


async def read(consumer: EventConsumer) -> list[tuple[int, str]]:
    """Return (id, conf_num) of what the consumer can read right now."""
    return [(item.id, item.event.desc["conf_num"]) for item in await consumer.get(timeout=0)]


async def test_events_get_increasing_ids_and_reach_every_consumer(desks: list[Desk]) -> None:
    desk = await started(desks)
    assert desk.state() is HubState.CONNECTED and desk.bus.connection_count == 1
    first, _ = desk.hub.open_consumer()
    await desk.publish(1, 2)
    second, _ = desk.hub.open_consumer()
    await desk.publish(3)
    assert await read(first) == [(1, "C1"), (2, "C2"), (3, "C3")]
    assert await read(second) == [(3, "C3")], "a consumer without a last id starts with live events"
    status = desk.hub.status()
    assert status.last_event_id == 3 and status.buffered == 3 and status.last_event_at is not None
    assert [c.delivered for c in status.consumers] == [3, 1]


async def test_a_consumer_resuming_after_an_id_gets_only_the_later_events_then_live_ones(desks: list[Desk]) -> None:
    desk = await started(desks)
    await desk.publish(1, 2, 3, 4)
    consumer, replay = desk.hub.open_consumer(last_event_id=2)
    assert not replay.missed
    await desk.publish(5)
    assert await read(consumer) == [(3, "C3"), (4, "C4"), (5, "C5")]

    up_to_date, replay = desk.hub.open_consumer(last_event_id=5)
    assert not replay.missed and await read(up_to_date) == []


async def test_the_buffer_keeps_the_newest_events_and_an_older_id_is_reported_missed(desks: list[Desk]) -> None:
    desk = await started(desks, buffer_size=3)
    await desk.publish(1, 2, 3, 4, 5)
    assert [item.id for item in desk.hub.buffered()] == [3, 4, 5]

    at_edge, replay = desk.hub.open_consumer(last_event_id=2)
    assert not replay.missed and await read(at_edge) == [(3, "C3"), (4, "C4"), (5, "C5")]

    too_old, replay = desk.hub.open_consumer(last_event_id=1)
    assert replay.missed and replay.why_missed == REPLAY_EVICTED, "event 2 was evicted, so the client lost it"
    assert await read(too_old) == [(3, "C3"), (4, "C4"), (5, "C5")]
    _, replay = desk.hub.open_consumer(last_event_id=0)
    assert replay.missed and replay.why_missed == REPLAY_EVICTED, "0 asks for the whole run, whose start is gone"

    never_issued, replay = desk.hub.open_consumer(last_event_id=99)
    assert replay.missed and replay.why_missed == REPLAY_UNKNOWN_ID and len(await read(never_issued)) == 3


async def test_a_run_numbers_from_its_first_id_and_an_id_below_it_replays_everything_as_missed(
    desks: list[Desk],
) -> None:
    earlier_start, later_start = ANCHOR, ANCHOR + timedelta(seconds=30)
    earlier = await started(desks, first_id=first_event_id(earlier_start))
    await earlier.publish(*range(1, 13))
    earlier_ids = [item.id for item in earlier.hub.buffered()]
    assert earlier_ids == list(range(earlier.hub.first_id, earlier.hub.first_id + 12))

    later = await started(desks, first_id=first_event_id(later_start))
    assert later.hub.last_event_id == 0 and later.hub.status().last_event_id == 0, "0: none yet in this run"
    fresh, replay = later.hub.open_consumer(last_event_id=earlier_ids[6])
    assert replay.missed and replay.why_missed == REPLAY_EARLIER_RUN and await read(fresh) == []

    await later.publish(*range(101, 113))  # more events than the earlier id's position in its run
    later_ids = [item.id for item in later.hub.buffered()]
    assert min(later_ids) > max(earlier_ids), "every id of the later run is above every id of the earlier one"
    for earlier_id in (earlier_ids[6], earlier_ids[-1], later.hub.first_id - 1):
        resumed, replay = later.hub.open_consumer(last_event_id=earlier_id)
        assert replay.missed and replay.why_missed == REPLAY_EARLIER_RUN
        got = await read(resumed)
        assert [conf for _, conf in got] == [f"C{n}" for n in range(101, 113)], "all of this run, none skipped"
        assert [event_id for event_id, _ in got] == later_ids

    from_the_start, replay = later.hub.open_consumer(last_event_id=0)
    assert not replay.missed and [event_id for event_id, _ in await read(from_the_start)] == later_ids, (
        "0 asks for this run from its start: nothing of it is missing"
    )

    own, replay = later.hub.open_consumer(last_event_id=later_ids[6])
    assert not replay.missed and [conf for _, conf in await read(own)] == [f"C{n}" for n in range(108, 113)]


def test_first_ids_are_microseconds_since_the_epoch_and_stay_exact_in_javascript() -> None:
    assert first_event_id(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000
    start = datetime(2026, 11, 29, 2, 0, 0, 123456, tzinfo=UTC)
    assert first_event_id(start + timedelta(microseconds=1)) == first_event_id(start) + 1
    assert first_event_id(datetime(2200, 12, 31, tzinfo=UTC)) < 2**53
    with pytest.raises(ValueError, match="first_id"):
        AccountEventHub(PaperAccountEventFeed(EventBus()), ManualClock(), backoff=BACKOFF, first_id=0)


async def test_a_consumer_that_falls_behind_is_closed_with_a_reason_after_its_queued_events(desks: list[Desk]) -> None:
    desk = await started(desks, consumer_queue=2)
    slow, _ = desk.hub.open_consumer()
    fast, _ = desk.hub.open_consumer()
    await desk.publish(1, 2)
    assert await read(fast) == [(1, "C1"), (2, "C2")]
    await desk.publish(3)
    assert slow.closed and slow.closed_reason is not None
    assert "Last-Event-ID 2" in slow.closed_reason
    assert await read(slow) == [(1, "C1"), (2, "C2")], "events queued before the overflow are still delivered"
    with pytest.raises(ConsumerClosed) as closed:
        await slow.get(timeout=0)
    assert closed.value.reason == slow.closed_reason
    assert await read(fast) == [(3, "C3")], "the other consumer is unaffected"
    assert [c.id for c in desk.hub.status().consumers] == [fast.id]


async def test_the_hub_reconnects_after_the_paper_connection_ends(desks: list[Desk]) -> None:
    # A bus queue of one: two events published back to back overflow it and the bus ends the connection.
    desk = await started(desks, bus_capacity=1)
    consumer, _ = desk.hub.open_consumer()
    desk.bus.publish(fill(1))
    desk.bus.publish(fill(2))
    await settle()
    assert desk.state() is HubState.RECONNECTING and desk.bus.connection_count == 0
    assert desk.hub.status().last_error == "The upstream closed the account-event connection"

    await desk.advance(BACKOFF[0])
    assert desk.state() is HubState.CONNECTED and desk.bus.connection_count == 1
    assert desk.hub.status().reconnect_count == 1
    await desk.publish(3)
    assert await read(consumer) == [(1, "C1"), (2, "C3")], "ids keep counting across connections"


async def test_logout_closes_the_upstream_and_login_opens_a_new_one(desks: list[Desk]) -> None:
    desk = await started(desks, login=False)
    assert desk.state() is HubState.WAITING_FOR_SESSION and desk.bus.connection_count == 0
    consumer, _ = desk.hub.open_consumer()  # a stream opened before login gets the events after it
    desk.hub.set_session_active(True)
    await settle()
    await desk.publish(1)

    desk.hub.set_session_active(False)
    await settle()
    assert desk.state() is HubState.WAITING_FOR_SESSION and desk.bus.connection_count == 0
    await desk.publish(2)  # nobody is connected upstream while logged out

    desk.hub.set_session_active(True)
    await settle()
    assert desk.state() is HubState.CONNECTED and desk.bus.connection_count == 1
    await desk.publish(3)
    assert await read(consumer) == [(1, "C1"), (2, "C3")]
    assert desk.hub.status().reconnect_count == 0, "a login is not a reconnect"


async def test_close_ends_every_consumer_and_refuses_new_ones(desks: list[Desk]) -> None:
    desk = await started(desks)
    consumer, _ = desk.hub.open_consumer()
    await desk.hub.close()
    assert desk.state() is HubState.DISABLED and desk.bus.connection_count == 0
    with pytest.raises(ConsumerClosed):
        await consumer.get(timeout=0)
    with pytest.raises(StreamingUnavailable):
        desk.hub.open_consumer()


class UnconfiguredFeed:
    """An account-event feed that cannot run, like Fidelity without BEPS settings."""

    def unavailable_reason(self) -> str | None:
        return "Set FTSERVICE_BEPS_TOKEN to stream account events"

    async def connect(self) -> Any:
        raise AssertionError("the hub must not connect a feed that cannot run")


async def test_an_unavailable_feed_leaves_the_hub_disabled_with_the_reason() -> None:
    clock = ManualClock()
    hub = AccountEventHub(UnconfiguredFeed(), clock, backoff=BACKOFF)
    await hub.start()
    hub.set_session_active(True)
    await settle()
    try:
        status = hub.status()
        assert status.state is HubState.DISABLED
        assert status.unavailable_reason == "Set FTSERVICE_BEPS_TOKEN to stream account events"
        with pytest.raises(StreamingUnavailable, match="FTSERVICE_BEPS_TOKEN"):
            hub.open_consumer()
    finally:
        await hub.close()


class FeedWithAFaultyCheck(PaperAccountEventFeed):
    """The paper feed, except that its availability check raises while ``faults_left`` is positive."""

    def __init__(self, bus: EventBus) -> None:
        super().__init__(bus)
        self.faults_left = 0

    def unavailable_reason(self) -> str | None:
        if self.faults_left:
            self.faults_left -= 1
            raise RuntimeError("could not read the feed's settings")
        return None


async def test_an_unexpected_error_in_the_supervisor_is_shown_and_supervision_resumes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    bus = EventBus()
    feed = FeedWithAFaultyCheck(bus)
    hub = AccountEventHub(feed, clock, backoff=BACKOFF)
    await hub.start()
    try:
        consumer, _ = hub.open_consumer()
        feed.faults_left = 1
        hub.set_session_active(True)
        await settle()
        assert hub.state is HubState.RECONNECTING and bus.connection_count == 0
        assert hub.last_error == (
            "Internal error in the account-event stream: RuntimeError: could not read the feed's settings"
        )
        assert any(r.levelname == "ERROR" and r.exc_info for r in caplog.records), "the failure is logged"

        await clock.advance(BACKOFF[-1])
        await settle()
        assert hub.state is HubState.CONNECTED and bus.connection_count == 1
        bus.publish(fill(1))
        await settle()
        assert await read(consumer) == [(1, "C1")]
    finally:
        await hub.close()
    assert bus.connection_count == 0 and clock.sleeper_count == 0
