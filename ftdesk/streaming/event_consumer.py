"""One reader of the account-event hub: a bounded FIFO of numbered events, never conflated.

A consumer is made by ``AccountEventHub.open_consumer`` with its replay already queued. The hub hands it each
event (``offer``) and closes it (``close``, with the hub's reason); the consumer tells the hub only that it is
gone (``EventSource.forget_consumer``). Neither reaches into the other's members.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, Field

from ftdesk.domain.clock import Clock
from ftdesk.domain.events import AccountEvent
from ftdesk.streaming.models import ConsumerClosed
from ftdesk.streaming.timing import wait_event_until

CONSUMER_CLOSED_REASON = "The account-event consumer was closed"


@dataclass(frozen=True, slots=True)
class NumberedEvent:
    """An account event with the id the hub gave it (one more per event, from the hub's ``first_id``)."""

    id: int
    event: AccountEvent


class EventConsumerStatus(BaseModel):
    """One reader of the account-event stream."""

    id: str = Field(description="Consumer id, e.g. events-2.")
    pending: int = Field(description="Events queued for the consumer and not read yet.")
    delivered: int = Field(description="Events the consumer has read.")


class EventSource(Protocol):
    """What an event consumer tells the hub that made it."""

    def forget_consumer(self, consumer: EventConsumer) -> None:
        """Drop a closed consumer."""
        ...


@dataclass(frozen=True, slots=True)
class Replay:
    """What a new consumer gets first: the buffered events after its last id, and whether some were lost."""

    events: list[NumberedEvent]
    missed: bool
    why_missed: str | None = None


class EventConsumer:
    """One reader of the account-event stream (an SSE response): a bounded FIFO of numbered events."""

    def __init__(
        self, hub: EventSource, consumer_id: str, clock: Clock, capacity: int, replay: Iterable[NumberedEvent] = ()
    ) -> None:
        self.id = consumer_id
        self._hub = hub
        self._clock = clock
        self._queue: deque[NumberedEvent] = deque(replay)
        # The replay may be as long as the whole buffer; the limit is for live events on top of it.
        self._capacity = capacity + len(self._queue)
        self._wake = asyncio.Event()
        self._closed_reason: str | None = None
        self._delivered = 0

    @property
    def closed(self) -> bool:
        """Return True once the consumer was closed (by its owner, by overflow or by the hub)."""
        return self._closed_reason is not None

    @property
    def closed_reason(self) -> str | None:
        """Return why the consumer was closed, or None while open."""
        return self._closed_reason

    @property
    def pending_count(self) -> int:
        """Return how many events wait to be read."""
        return len(self._queue)

    def close(self, reason: str = CONSUMER_CLOSED_REASON, *, keep_queued: bool = False) -> None:
        """Stop receiving events and end ``get()`` (queued events first when ``keep_queued``); idempotent."""
        if self._closed_reason is not None:
            return
        self._hub.forget_consumer(self)
        self._closed_reason = reason
        if not keep_queued:
            self._queue.clear()
        self._wake.set()

    # The timeout runs on the injected clock (tests drive it), which asyncio.timeout() cannot do.
    async def get(self, timeout: float | None = None) -> list[NumberedEvent]:  # noqa: ASYNC109
        """Return every queued event, oldest first; ``[]`` after ``timeout`` seconds without one.

        Raises ``ConsumerClosed`` (with the reason) once the consumer is closed and its queue is read.
        """
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        while True:
            if self._queue:
                batch = list(self._queue)
                self._queue.clear()
                self._delivered += len(batch)
                return batch
            if self._closed_reason is not None:
                raise ConsumerClosed(self._closed_reason)
            if deadline is not None and self._clock.monotonic() >= deadline:
                return []
            self._wake.clear()
            await wait_event_until(self._clock, self._wake, deadline)

    def status(self) -> EventConsumerStatus:
        """Return this consumer's counters."""
        return EventConsumerStatus(id=self.id, pending=len(self._queue), delivered=self._delivered)

    # --- what the hub calls -----------------------------------------------------------------------

    def offer(self, item: NumberedEvent) -> bool:
        """Queue an event; return False (and close the consumer with a reason) when the queue is full."""
        if self._closed_reason is not None:
            return False
        if len(self._queue) >= self._capacity:
            last = self._queue[-1].id if self._queue else item.id - 1
            # What is queued is still delivered; the stream then ends, saying where to resume from.
            self.close(
                f"The client fell {len(self._queue)} events behind (limit {self._capacity}); the stream was "
                f"closed after event {last}: reconnect with Last-Event-ID {last} to get the rest",
                keep_queued=True,
            )
            return False
        self._queue.append(item)
        self._wake.set()
        return True
