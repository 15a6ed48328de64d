"""One reader of the quote hub: the symbols it holds, its conflating buffer, ``get()`` and direct delivery to a sink.

A consumer is made by ``QuoteHub.open_consumer`` and talks back to its hub only through ``ConsumerHub`` (take,
drop, forget, queue for a direct flush), so this module needs nothing from the hub's. How the hub and its
consumers share the work of direct delivery is told in the hub module's docstring.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol

from ftdesk.domain.clock import Clock
from ftdesk.streaming.conflation import ConflatingBuffer
from ftdesk.streaming.models import ConsumerClosed, ConsumerKind, ConsumerStatus, QuoteItem
from ftdesk.streaming.timing import sleep_until

CONSUMER_CLOSED_REASON = "The quote consumer was closed"


def normalize_symbols(symbols: Iterable[str]) -> list[str]:
    """Return the symbols stripped and upper-cased, without blanks or repeats, in first-seen order."""
    if isinstance(symbols, str):  # a bare "AAPL" would otherwise be read as ["A", "A", "P", "L"]
        raise TypeError("Pass a list of symbols, not a single string")
    return list(dict.fromkeys(cleaned for cleaned in (s.strip().upper() for s in symbols) if cleaned))


QuoteSink = Callable[[list[QuoteItem]], Coroutine[Any, Any, None]]
"""Writes a batch of updates to a consumer's client: what ``QuoteConsumer.deliver_to`` registers."""

if sys.version_info >= (3, 12):
    DIRECT_DELIVERY = True

    def _start_eagerly(loop: asyncio.AbstractEventLoop, write: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a coroutine now, up to its first real suspension; the task finishes it if it suspends."""
        return asyncio.Task(write, loop=loop, eager_start=True)

else:  # no eager tasks: a sink run would cost the very task wake-up it is meant to save
    DIRECT_DELIVERY = False

    def _start_eagerly(loop: asyncio.AbstractEventLoop, write: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Start a coroutine as a task (not reached: ``deliver_to`` has no effect without eager tasks)."""
        return loop.create_task(write)


class ConsumerHub(Protocol):
    """What a consumer asks of the hub that made it."""

    def _acquire(self, consumer: QuoteConsumer, symbols: list[str]) -> list[str]: ...

    def _release(self, consumer: QuoteConsumer, symbols: list[str]) -> list[str]: ...

    def _forget_consumer(self, consumer: QuoteConsumer) -> None: ...

    def _queue_direct(self, consumer: QuoteConsumer) -> None: ...


class QuoteConsumer:
    """One reader of the quote stream: an SSE response, a WebSocket, or the shared REST subscription set."""

    def __init__(self, hub: ConsumerHub, consumer_id: str, kind: ConsumerKind, clock: Clock) -> None:
        self.id = consumer_id
        self.kind: ConsumerKind = kind
        self._hub = hub
        self._clock = clock
        self._held: dict[str, None] = {}  # insertion-ordered set
        self._buffer: ConflatingBuffer[QuoteItem] = ConflatingBuffer()
        self._wake = asyncio.Event()
        self._closed_reason: str | None = None
        # The get() timeout's timer outlives a get() that returned with updates: a stream calls get() once
        # per batch, and a timer per call cost more than the rest of the delivery (one Qt timer each under
        # qasync). A timer set for an earlier deadline only wakes get() early; it then waits again.
        self._alarm: asyncio.Task[None] | None = None
        self._alarm_deadline = 0.0
        # Direct delivery (see the hub module's docstring). The sink runs only while the reader is parked in get()
        # and no earlier sink run is in flight, and get() hands out nothing while one is: one writer at a
        # time, so updates reach the client in the order they left the buffer.
        self._sink: QuoteSink | None = None
        self._parked = False  # the reader waits in get()
        self._queued = False  # in the hub's list for the next direct flush
        self._flush: asyncio.Task[None] | None = None  # a sink run waiting for its socket
        self._flushed_at = float("-inf")  # when the sink last got a batch: get()'s timeout counts from it
        self._failure: BaseException | None = None  # what the sink raised; get() raises it

    @property
    def symbols(self) -> list[str]:
        """Return the symbols this consumer holds, in the order it took them."""
        return list(self._held)

    @property
    def closed(self) -> bool:
        """Return True once the consumer was closed (by its owner or by the hub)."""
        return self._closed_reason is not None

    @property
    def pending_count(self) -> int:
        """Return how many updates wait to be read (at most one per held symbol)."""
        return len(self._buffer)

    def acquire(self, symbols: Iterable[str]) -> list[str]:
        """Hold these symbols; return the ones not held before. Raise ``ConsumerClosed`` once closed."""
        if self._closed_reason is not None:
            raise ConsumerClosed(self._closed_reason)
        return self._hub._acquire(self, normalize_symbols(symbols))

    def release(self, symbols: Iterable[str]) -> list[str]:
        """Stop holding these symbols; return the ones that were held (others are ignored)."""
        return self._hub._release(self, normalize_symbols(symbols))

    def close(self) -> None:
        """Release every symbol and end ``get()``; idempotent."""
        self._shutdown(CONSUMER_CLOSED_REASON)

    def deliver_to(self, sink: QuoteSink) -> None:
        """Let the hub hand updates straight to ``sink`` while the reader waits in ``get()`` with nothing pending.

        The sink gets a batch as ``get()`` would return it and must write it as the reader would: the reader
        writes whatever ``get()`` returns when the sink could not take it. The hub starts the sink
        synchronously (an eager task) and never awaits it; while a run waits for its socket, ``get()`` hands
        out nothing and updates conflate. What the sink raises, the next ``get()`` raises. Updates the sink
        got count as delivered, and as activity for ``get()``'s timeout. No effect before Python 3.12.
        """
        if DIRECT_DELIVERY and self._closed_reason is None:
            self._sink = sink

    # The timeout runs on the injected clock (tests drive it), which asyncio.timeout() cannot do.
    async def get(self, timeout: float | None = None) -> list[QuoteItem]:  # noqa: ASYNC109
        """Return the waiting updates (latest per symbol, oldest first); ``[]`` after ``timeout`` quiet seconds.

        Waits until at least one update is there. Quiet means nothing read here and nothing handed to the
        sink (``deliver_to``). Raises ``ConsumerClosed`` once the consumer is closed, and what the sink
        raised once it failed.
        """
        started = self._clock.monotonic()
        while True:
            if self._closed_reason is not None:
                raise ConsumerClosed(self._closed_reason)
            if self._failure is not None:
                raise self._failure
            if self._flush is None:  # else the sink is still writing, and wakes us when done
                if self._buffer:
                    return self._buffer.drain()
                if timeout is not None:
                    deadline = max(started, self._flushed_at) + timeout
                    if self._clock.monotonic() >= deadline:
                        return []
                    self._set_alarm(deadline)
            self._wake.clear()
            self._parked = True
            try:
                await self._wake.wait()
            except asyncio.CancelledError:
                self._cancel_alarm()  # nobody waits any more: leave no timer behind
                raise
            finally:
                self._parked = False

    def _set_alarm(self, deadline: float) -> None:
        """Make sure ``_wake`` is set at ``deadline`` at the latest."""
        alarm = self._alarm
        if alarm is not None and not alarm.done():
            if self._alarm_deadline <= deadline:
                return
            alarm.cancel()
        self._alarm_deadline = deadline
        self._alarm = asyncio.ensure_future(self._ring(deadline))

    async def _ring(self, deadline: float) -> None:
        await sleep_until(self._clock, deadline)
        self._wake.set()

    def _cancel_alarm(self) -> None:
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None

    def status(self) -> ConsumerStatus:
        """Return this consumer's counters."""
        return ConsumerStatus(
            id=self.id,
            kind=self.kind,
            symbol_count=len(self._held),
            pending=len(self._buffer),
            delivered=self._buffer.delivered,
            conflated=self._buffer.conflated,
            lag_seconds=round(self._buffer.lag(self._clock.monotonic()), 3),
        )

    # --- called by the hub ----------------------------------------------------------------------

    def _offer(self, symbol: str, item: QuoteItem, now: float) -> None:
        self._buffer.put(symbol, item, now)
        if self._flush is not None:
            return  # the sink is writing: it wakes the reader when done
        if self._parked and self._sink is not None and self._failure is None:
            if not self._queued:
                self._queued = True
                self._hub._queue_direct(self)
            return
        self._wake.set()

    def _deliver_directly(self, now: float, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the pending updates to the sink if the reader is still idle, else wake the reader."""
        self._queued = False
        if not self._buffer or self._closed_reason is not None:
            return
        sink = self._sink
        if sink is None or not self._parked or self._flush is not None or self._failure is not None:
            self._wake.set()
            return
        self._flushed_at = now
        run = _start_eagerly(loop, sink(self._buffer.drain()))
        if run.done():
            self._after_flush(run)
        else:
            self._flush = run
            run.add_done_callback(self._after_flush)

    def _after_flush(self, run: asyncio.Task[None]) -> None:
        self._flush = None
        failure = None if run.cancelled() else run.exception()  # retrieved, so never logged as unretrieved
        if failure is not None:
            self._failure = failure
            self._wake.set()
        elif self._buffer:
            self._wake.set()  # what came in meanwhile: the reader takes it

    def _shutdown(self, reason: str) -> None:
        if self._closed_reason is not None:
            return
        self._hub._release(self, list(self._held))
        self._hub._forget_consumer(self)
        self._closed_reason = reason
        self._buffer.clear()
        self._cancel_alarm()
        self._sink = None
        if self._flush is not None:
            self._flush.cancel()
        self._wake.set()
