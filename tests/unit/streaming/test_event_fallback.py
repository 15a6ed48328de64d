"""The account-event hub's stand-in poller: polled only while the upstream is down, once more when it is back,
its events marked with their source, and an event already delivered from either side never delivered again."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ftdesk.brokers.paper.feeds import EventBus, EventBusConnection, PaperAccountEventFeed
from ftdesk.domain.errors import BrokerError
from ftdesk.domain.events import AccountEvent, account_event
from ftdesk.streaming.event_consumer import EventConsumer
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.models import HubState
from tests.fakes.clock import ManualClock
from tests.fakes.stepping import settle

BACKOFF = (1.0,)
INTERVAL = 5.0


def fill(conf: str, executed: int) -> AccountEvent:
    return account_event("MFCEX", {"conf_num": conf, "executed_qty": executed}, time="2026-11-16T15:00:00+00:00")


class SwitchableFeed:
    """The paper event bus behind a switch: while down, every connect fails as an unreachable BEPS would."""

    def __init__(self, bus: EventBus) -> None:
        self._inner = PaperAccountEventFeed(bus)
        self.up = False

    def unavailable_reason(self) -> str | None:
        return None

    async def connect(self) -> EventBusConnection:
        if not self.up:
            raise BrokerError("BEPS refused the connection (HTTP 503)")
        return await self._inner.connect()


class History:
    """An alert history: the first poll of a session only notes what is there, later ones return what is new."""

    source = "alerts"
    interval = INTERVAL

    def __init__(self) -> None:
        self.alerts: list[AccountEvent] = []
        self.polls = 0
        self.resets = 0
        self._seen = 0
        self._primed = False

    async def poll(self) -> list[AccountEvent]:
        self.polls += 1
        fresh, self._seen = self.alerts[self._seen :], len(self.alerts)
        if not self._primed:
            self._primed = True
            return []
        return fresh

    def reset(self) -> None:
        self.resets += 1
        self._primed = False

    def dedupe_key(self, event: AccountEvent) -> str | None:
        return f"{event.desc.get('conf_num')}|{event.desc.get('executed_qty')}"


class Rig:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.bus = EventBus()
        self.feed = SwitchableFeed(self.bus)
        self.history = History()
        self.hub = AccountEventHub(self.feed, self.clock, backoff=BACKOFF, fallback=self.history, source="beps")

    async def advance(self, seconds: float) -> None:
        remaining = seconds
        while remaining > 0:
            step = min(0.5, remaining)
            await settle()
            await self.clock.advance(step)
            await settle()
            remaining -= step


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = Rig()
    await made.hub.start()
    yield made
    await made.hub.close()
    await settle()
    assert made.clock.sleeper_count == 0, "the hub left a task sleeping after close()"


async def read(consumer: EventConsumer) -> list[tuple[str, str | None]]:
    return [(item.event.desc["conf_num"], item.event.source) for item in await consumer.get(timeout=0)]


async def test_the_fallback_stands_in_while_down_and_stops_once_the_stream_is_back(rig: Rig) -> None:
    consumer, _ = rig.hub.open_consumer()
    assert rig.history.polls == 0  # no session: nothing polled
    rig.hub.set_session_active(True)
    await rig.advance(0.1)
    assert rig.history.polls == 1  # notes the history at once; nothing from before is news
    status = rig.hub.status()
    assert status.live is False and status.fallback is not None and status.fallback.active
    assert status.why_not is not None and "HTTP 503" in status.why_not and "alerts fallback" in status.why_not

    rig.history.alerts.append(fill("C1", 10))
    await rig.advance(INTERVAL)
    assert rig.history.polls == 2
    assert await read(consumer) == [("C1", "alerts")]
    await rig.advance(INTERVAL)
    assert rig.history.polls == 3 and await read(consumer) == []

    rig.feed.up = True
    await rig.advance(BACKOFF[0])
    assert rig.hub.state is HubState.CONNECTED
    assert rig.history.polls == 4  # one more: what happened just before the stream came back
    await rig.advance(10 * INTERVAL)
    assert rig.history.polls == 4  # not while live
    assert rig.hub.status().fallback.active is False  # type: ignore[union-attr]

    rig.bus.publish(fill("C1", 10))  # the stream reports the same fill late: dropped
    rig.bus.publish(fill("C2", 5))
    await settle()
    assert await read(consumer) == [("C2", "beps")]
    status = rig.hub.status()
    assert status.duplicates_dropped == 1 and status.live and status.why_not is None


async def test_a_new_session_starts_the_history_afresh(rig: Rig) -> None:
    rig.hub.set_session_active(True)
    await rig.advance(0.1)
    rig.hub.set_session_active(False)
    await rig.advance(INTERVAL)
    polls = rig.history.polls
    assert polls == 1  # logged out: no polling
    rig.hub.set_session_active(True)
    await rig.advance(0.1)
    assert rig.history.resets >= 1 and rig.history.polls == polls + 1


async def test_a_failed_poll_is_shown_and_tried_again_at_the_next_interval(rig: Rig) -> None:
    async def broken() -> list[AccountEvent]:
        rig.history.polls += 1
        raise BrokerError("Fidelity answered HTTP 500")

    rig.history.poll = broken  # type: ignore[method-assign]
    rig.hub.set_session_active(True)
    await rig.advance(0.1)
    fallback = rig.hub.status().fallback
    assert fallback is not None and fallback.last_error is not None and "HTTP 500" in fallback.last_error
    await rig.advance(INTERVAL)
    assert rig.history.polls == 2
