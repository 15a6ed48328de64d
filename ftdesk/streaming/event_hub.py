"""The account-event hub: one upstream account-event connection, numbered events, replay and fan-out.

While a brokerage session exists the hub keeps one connection of the ``AccountEventFeed`` open (BEPS for
Fidelity, the ledger's event bus for paper), whether or not anyone reads: the replay buffer then holds what
happened while a client was away. Each event gets the next integer id, counting up from ``first_id``, and
joins a ring buffer of the last ``buffer_size`` events, so a client reconnecting with ``Last-Event-ID`` gets
what it missed first. After a failure the connection is reopened after the next backoff delay (the last
delay repeats); the sequence starts again after a connection that stayed open ``stable_after`` seconds.
Logout closes the connection, login opens a new one. Every delay uses the injected clock.

The service starts each run's ids at the microseconds since the epoch when it started (``first_event_id``),
so an id from an earlier run is below every id of this one: it is recognised as such (every buffered event
is replayed, marked ``missed``) rather than taken for an id of this run. Were the numbering to start at 1
again, a client resuming after the earlier run's id 7 would silently skip this run's events 1 to 7.

While a session exists but the connection is not open, an optional ``AccountEventFallback`` is polled every
``fallback.interval`` seconds (Fidelity: the alert history, for fills and cancels), once more when the
connection comes back (what happened just before), and its events join the same numbered stream, marked
with their source. An event whose ``dedupe_key`` was already delivered, from either side, is dropped, so a
fill seen by both arrives once. The status says whether events are live (the connection is open) and, when
not, why, and whether the fallback stands in.

Consumers read a bounded FIFO: events are never conflated or dropped. The read loop never awaits a
consumer; one that lets ``consumer_queue`` events pile up is closed with a reason saying so (it keeps the
events already queued, then ``get()`` raises ``ConsumerClosed``), and can resume with its last id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from ftdesk.brokers.base import AccountEventConnection, AccountEventFallback, AccountEventFeed
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import StreamingUnavailable
from ftdesk.domain.events import AccountEvent
from ftdesk.streaming.event_consumer import EventConsumer, NumberedEvent, Replay
from ftdesk.streaming.event_models import EventHubStatus, FallbackStatus
from ftdesk.streaming.models import HubState
from ftdesk.streaming.supervisor import SupervisedStream, describe, drain
from ftdesk.streaming.timing import wait_event_until

log = logging.getLogger(__name__)

HUB_CLOSED_REASON = "The account-event stream is shutting down"

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

REPLAY_EVICTED = "Some events after your Last-Event-ID are no longer buffered; every buffered event follows"
REPLAY_EARLIER_RUN = (
    "Your Last-Event-ID is from before the service last started: events between it and this start may be lost; "
    "every buffered event follows"
)
REPLAY_UNKNOWN_ID = (
    "Your Last-Event-ID is newer than any event this run of the service gave out (the computer's clock may have "
    "gone back since it was issued): events may be lost; every buffered event follows"
)


def first_event_id(now: datetime) -> int:
    """Return the first event id of a run started at ``now``: whole microseconds since the Unix epoch.

    Every later run starts above every id an earlier run gave out (unless the clock went back, or a run gave
    out more than one event per microsecond), and ids stay below 2**53, exact as JSON numbers in JavaScript,
    until past the year 2200.
    """
    return max(1, (now - UNIX_EPOCH) // timedelta(microseconds=1))


class AccountEventHub(SupervisedStream[AccountEventConnection]):
    """Shares one upstream account-event connection among many consumers (see the module docstring)."""

    def __init__(
        self,
        feed: AccountEventFeed,
        clock: Clock,
        *,
        backoff: Iterable[float],
        buffer_size: int = 1000,
        consumer_queue: int = 1000,
        stable_after: float = 10.0,
        fallback: AccountEventFallback | None = None,
        source: str | None = None,
        first_id: int = 1,
    ) -> None:
        self._fallback_wake = asyncio.Event()  # before super(): its set-up already sets the state
        super().__init__(clock, backoff, stable_after)
        if buffer_size < 0:
            raise ValueError(f"buffer_size must not be negative, got {buffer_size}")
        if consumer_queue < 1:
            raise ValueError(f"consumer_queue must be >= 1, got {consumer_queue}")
        if first_id < 1:
            raise ValueError(f"first_id must be >= 1, got {first_id}")
        self._feed = feed
        self._consumer_queue = consumer_queue

        self._buffer: deque[NumberedEvent] = deque(maxlen=buffer_size)
        self._first_id = first_id
        self._last_id = first_id - 1  # the id of the newest event; below first_id before the first
        self._consumers: dict[str, EventConsumer] = {}
        self._consumer_ids = itertools.count(1)

        self._last_event_mono: float | None = None
        self._task: asyncio.Task[None] | None = None

        self._source = source
        self._fallback = fallback
        self._fallback_task: asyncio.Task[None] | None = None
        self._fallback_active = False
        self._fallback_polls = 0
        self._fallback_events = 0
        self._fallback_mono: float | None = None
        self._fallback_error: str | None = None
        self._delivered_keys: dict[str, None] = {}  # oldest first, bounded like the buffer
        self._key_limit = max(buffer_size, 1000)
        self._duplicates = 0

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the connection supervisor; idempotent."""
        if self._closed:
            raise StreamingUnavailable("The account-event stream was shut down")
        if self._started:
            return
        self._started = True
        self._set_state(self._resting_state())
        self._task = asyncio.create_task(self._supervise(), name="event-hub-supervisor")
        if self._fallback is not None:
            self._fallback_task = asyncio.create_task(self._run_fallback(), name="event-hub-fallback")

    async def close(self) -> None:
        """Cancel the supervisor, close the upstream connection and every consumer; idempotent."""
        if self._closed:
            return
        self._closed = True
        tasks = [task for task in (self._task, self._fallback_task) if task is not None]
        self._task = self._fallback_task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # the supervisor closes the connection
        for consumer in list(self._consumers.values()):
            consumer.close(HUB_CLOSED_REASON)
        self._set_state(HubState.DISABLED)

    # --- consumers ------------------------------------------------------------------------------

    def unavailable_reason(self) -> str | None:
        """Return why the feed cannot run (missing configuration), or None."""
        return self._feed.unavailable_reason()

    def open_consumer(self, last_event_id: int | None = None) -> tuple[EventConsumer, Replay]:
        """Open a consumer; with ``last_event_id`` it first gets the buffered events after that id.

        ``last_event_id`` 0 asks for every event of this run. The replay says ``missed`` (and why) when events
        after ``last_event_id`` are no longer buffered, when the id is below this run's first id (it came from
        an earlier run), or when it is above any id given out yet; then every buffered event is replayed.
        Raise ``StreamingUnavailable`` when the feed cannot run or the hub was shut down.
        """
        if self._closed:
            raise StreamingUnavailable("The account-event stream was shut down")
        reason = self._feed.unavailable_reason()
        if reason is not None:
            raise StreamingUnavailable(reason)
        replay = self._replay_after(last_event_id)
        consumer = EventConsumer(
            self, f"events-{next(self._consumer_ids)}", self._clock, self._consumer_queue, replay.events
        )
        self._consumers[consumer.id] = consumer
        return consumer, replay

    def _replay_after(self, last_event_id: int | None) -> Replay:
        if last_event_id is None:
            return Replay([], missed=False)
        if last_event_id == 0:
            # No event has id 0: it asks for this run from its start (the status says 0 before the first event).
            last_event_id = self._first_id - 1
        elif last_event_id < self._first_id:
            return Replay(list(self._buffer), missed=True, why_missed=REPLAY_EARLIER_RUN)
        if last_event_id > self._last_id:
            return Replay(list(self._buffer), missed=True, why_missed=REPLAY_UNKNOWN_ID)
        oldest = self._buffer[0].id if self._buffer else self._last_id + 1
        if last_event_id < oldest - 1:
            return Replay(list(self._buffer), missed=True, why_missed=REPLAY_EVICTED)
        return Replay([item for item in self._buffer if item.id > last_event_id], missed=False)

    def forget_consumer(self, consumer: EventConsumer) -> None:
        """Drop a closed consumer (what an ``EventConsumer`` tells its hub)."""
        self._consumers.pop(consumer.id, None)

    # --- observation ----------------------------------------------------------------------------

    @property
    def state(self) -> HubState:
        """Return the connection state."""
        return self._state

    @property
    def last_error(self) -> str | None:
        """Return why the last connection ended or could not be opened, if one did."""
        return self._last_error

    @property
    def since(self) -> datetime:
        """Return when the hub entered its state."""
        return self._since

    @property
    def last_event_id(self) -> int:
        """Return the id of the newest event (0 before the first)."""
        return self._last_id if self._last_id >= self._first_id else 0

    @property
    def first_id(self) -> int:
        """Return the id the first event of this run gets (or got)."""
        return self._first_id

    def buffered(self) -> list[NumberedEvent]:
        """Return the events kept for replay, oldest first."""
        return list(self._buffer)

    def status(self) -> EventHubStatus:
        """Return the connection state, counters and per-consumer figures."""
        return EventHubStatus(
            state=self._state,
            since=self._since,
            reconnect_count=self._reconnect_count,
            last_event_at=self._wall_time(self._last_event_mono),
            last_event_id=self.last_event_id,
            last_error=self._last_error,
            buffered=len(self._buffer),
            consumers=[consumer.status() for consumer in self._consumers.values()],
            unavailable_reason=self._feed.unavailable_reason(),
            live=self._state is HubState.CONNECTED,
            why_not=self.why_not(),
            detail=self._detail(),
            fallback=self._fallback_status(),
            duplicates_dropped=self._duplicates,
        )

    def why_not(self) -> str | None:
        """Say in a sentence why events are not live (None when they are), and what stands in meanwhile."""
        state = self._state
        if state is HubState.CONNECTED:
            return None
        unavailable = self._feed.unavailable_reason()
        if unavailable is not None:
            return unavailable
        if self._closed or not self._started:
            return "The account-event stream is not running"
        if state is HubState.WAITING_FOR_SESSION or not self._session_active:
            return "No brokerage session: account events start after login"
        if state is HubState.RECONNECTING and self._last_error:
            reason = f"{self._last_error}; reconnecting"
        else:
            reason = "Connecting to the upstream account-event stream"
        if self._fallback is not None and self._fallback_active:
            reason += (
                f". Meanwhile fills and cancels come from the {self._fallback.source} fallback, polled every "
                f"{self._fallback.interval:g} s"
            )
        return reason

    def _detail(self) -> str | None:
        detail = getattr(self._feed, "detail", None)
        return str(detail()) if callable(detail) else None

    def _fallback_status(self) -> FallbackStatus | None:
        fallback = self._fallback
        if fallback is None:
            return None
        return FallbackStatus(
            source=fallback.source,
            active=self._fallback_active,
            interval_seconds=fallback.interval,
            polls=self._fallback_polls,
            events=self._fallback_events,
            last_poll_at=self._wall_time(self._fallback_mono),
            last_error=self._fallback_error,
        )

    # --- the connection -------------------------------------------------------------------------

    _stream_name = "account-event"

    def _connector(self) -> AccountEventFeed:
        return self._feed

    def _wanted(self) -> bool:
        return self._session_active and self._feed.unavailable_reason() is None

    def _resting_state(self) -> HubState:
        if self._feed.unavailable_reason() is not None:
            return HubState.DISABLED
        return HubState.WAITING_FOR_SESSION if not self._session_active else HubState.CONNECTING

    async def _serve(self, connection: AccountEventConnection, epoch: int) -> None:
        """Run one connection until it ends, fails or the session changes; then close it."""
        self._set_state(HubState.CONNECTED)
        log.info("Account-event stream connected")
        reader = asyncio.create_task(self._read(connection), name="event-hub-reader")
        session = asyncio.create_task(self._until_session_changes(epoch), name="event-hub-session")
        tasks = (reader, session)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            with contextlib.suppress(Exception):
                await connection.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._session_epoch != epoch:
            log.info("Account-event stream closed: the brokerage session ended")
        elif reader.done() and not reader.cancelled() and (exc := reader.exception()) is not None:
            self._note_failure(f"The account-event connection failed: {describe(exc)}")
        else:
            self._note_failure("The upstream closed the account-event connection")

    async def _read(self, connection: AccountEventConnection) -> None:
        await drain(connection.events(), self._receive_live)

    def _receive_live(self, event: AccountEvent) -> None:
        self._receive(event)

    def _set_state(self, state: HubState) -> None:
        super()._set_state(state)
        self._fallback_wake.set()

    def set_session_active(self, active: bool) -> None:
        """Say whether a brokerage session exists: logout closes the upstream, login reopens it."""
        super().set_session_active(active)
        self._fallback_wake.set()

    def _fallback_needed(self) -> bool:
        return (
            self._session_active
            and not self._closed
            and self._state is not HubState.CONNECTED
            and self._feed.unavailable_reason() is None
        )

    async def _run_fallback(self) -> None:
        """Poll the fallback while a session exists and the connection is down (see the module docstring)."""
        fallback = self._fallback
        assert fallback is not None
        epoch = self._session_epoch
        polled = False  # polled since the connection was last up
        while True:
            if self._session_epoch != epoch:
                epoch = self._session_epoch
                fallback.reset()  # a new session: its history is not news
                polled = False
            if not self._fallback_needed():
                if polled and self._session_active and self._state is HubState.CONNECTED:
                    await self._poll(fallback)  # what happened just before the connection came back
                polled = False
                self._fallback_active = False
                self._fallback_wake.clear()
                await self._fallback_wake.wait()
                continue
            self._fallback_active = True
            polled = True
            await self._poll(fallback)
            deadline = self._clock.monotonic() + fallback.interval
            # State changes wake this early; only the connection coming up or the session changing stop the wait.
            while self._fallback_needed() and self._session_epoch == epoch and self._clock.monotonic() < deadline:
                self._fallback_wake.clear()
                await wait_event_until(self._clock, self._fallback_wake, deadline)

    async def _poll(self, fallback: AccountEventFallback) -> None:
        try:
            events = await fallback.poll()
        except Exception as exc:  # a failed poll is retried at the next interval
            self._fallback_error = describe(exc)
            log.warning("The %s fallback poll failed: %s", fallback.source, self._fallback_error)
            return
        self._fallback_polls += 1
        self._fallback_error = None
        self._fallback_mono = self._clock.monotonic()
        for event in events:
            if self._receive(event, source=fallback.source):
                self._fallback_events += 1

    def _receive(self, event: AccountEvent, source: str | None = None) -> bool:
        """Number the event, buffer it and queue it for every consumer, never waiting on one.

        Return False (and drop it) when an event with the same dedupe key was delivered already.
        """
        marked = event.source or source or self._source
        if marked != event.source:
            event = event.model_copy(update={"source": marked})
        key = None if self._fallback is None else self._fallback.dedupe_key(event)
        if key is not None:
            if key in self._delivered_keys:
                self._duplicates += 1
                log.info("Account event from %s dropped: already delivered (%s)", marked, event.event_type)
                return False
            self._delivered_keys[key] = None
            if len(self._delivered_keys) > self._key_limit:
                del self._delivered_keys[next(iter(self._delivered_keys))]
        self._last_id += 1
        item = NumberedEvent(self._last_id, event)
        self._last_event_mono = self._clock.monotonic()
        self._buffer.append(item)
        for consumer in list(self._consumers.values()):
            if not consumer.offer(item):
                log.warning("Account-event consumer %s closed: %s", consumer.id, consumer.closed_reason)
        return True
