"""One reader of the quote hub: the symbols it holds, its conflating buffer, ``get()`` and direct writes.

A consumer is made by ``QuoteHub.open_consumer``. Each side sees only the other's public interface:

* the consumer owns what it holds and what waits for its reader (its held symbols, its buffer), and tells the
  hub through ``HoldingHub``: ``hold``, ``let_go``, ``forget_consumer``, ``queue_write``;
* the hub hands it updates (``offer``), asks it to write what waits (``write_pending``) and closes it
  (``close`` with the hub's reason).

A stream edge (an SSE response, a WebSocket) may attach a ``QuoteWriter`` (``deliver_to``); the consumer then
owns the writer's runs: it starts each run, keeps it, and raises its failure from ``get()``. How the hub and its
consumers share the work of direct writes is told in the hub module's docstring.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Iterable
from typing import Any, Protocol

from ftdesk.domain.clock import Clock
from ftdesk.streaming.conflation import ConflatingBuffer
from ftdesk.streaming.models import ConsumerClosed, ConsumerKind, ConsumerStatus, QuoteItem
from ftdesk.streaming.timing import sleep_until
from ftdesk.streaming.writer import QuoteWriter

CONSUMER_CLOSED_REASON = "The quote consumer was closed"


def normalize_symbols(symbols: Iterable[str]) -> list[str]:
    """Return the symbols stripped and upper-cased, without blanks or repeats, in first-seen order."""
    if isinstance(symbols, str):  # a bare "AAPL" would otherwise be read as ["A", "A", "P", "L"]
        raise TypeError("Pass a list of symbols, not a single string")
    return list(dict.fromkeys(cleaned for cleaned in (s.strip().upper() for s in symbols) if cleaned))


if sys.version_info >= (3, 12):
    DIRECT_DELIVERY = True

    def _start_eagerly(loop: asyncio.AbstractEventLoop, write: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run a coroutine now, up to its first real suspension; the task finishes it if it suspends."""
        return asyncio.Task(write, loop=loop, eager_start=True)

else:  # no eager tasks: a writer run would cost the very task wake-up it is meant to save
    DIRECT_DELIVERY = False

    def _start_eagerly(loop: asyncio.AbstractEventLoop, write: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Start a coroutine as a task (not reached: ``deliver_to`` has no effect without eager tasks)."""
        return loop.create_task(write)


class HoldingHub(Protocol):
    """What a quote consumer tells the hub that made it."""

    def hold(self, consumer: QuoteConsumer, symbols: list[str]) -> None:
        """Count the consumer among the holders of symbols it did not hold before."""
        ...

    def let_go(self, consumer: QuoteConsumer, symbols: list[str]) -> None:
        """Stop counting the consumer among the holders of symbols it held."""
        ...

    def forget_consumer(self, consumer: QuoteConsumer) -> None:
        """Drop a closed consumer."""
        ...

    def queue_write(self, consumer: QuoteConsumer) -> None:
        """Have the consumer write its pending updates in the next direct-write callback."""
        ...


class QuoteConsumer:
    """One reader of the quote stream: an SSE response, a WebSocket, or the shared REST subscription set."""

    def __init__(self, hub: HoldingHub, consumer_id: str, kind: ConsumerKind, clock: Clock) -> None:
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
        # Direct writes (see the hub module's docstring). The writer runs only while the reader is parked in get()
        # and no earlier run is in flight, and get() hands out nothing while one is: one writer at a time, so
        # updates reach the client in the order they left the buffer.
        self._writer: QuoteWriter | None = None
        self._parked = False  # the reader waits in get()
        self._queued = False  # in the hub's list for the next direct write
        self._flush: asyncio.Task[None] | None = None  # a writer run waiting for its socket (owned here)
        self._flushed_at = float("-inf")  # when the writer last got a batch: get()'s timeout counts from it
        self._failure: BaseException | None = None  # what the writer raised; get() raises it

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

    def holds(self, symbol: str) -> bool:
        """Say whether this consumer holds the symbol (or book key)."""
        return symbol in self._held

    def acquire(self, symbols: Iterable[str]) -> list[str]:
        """Hold these symbols; return the ones not held before. Raise ``ConsumerClosed`` once closed."""
        if self._closed_reason is not None:
            raise ConsumerClosed(self._closed_reason)
        taken = [symbol for symbol in normalize_symbols(symbols) if symbol not in self._held]
        if taken:
            self._held.update(dict.fromkeys(taken))
            self._hub.hold(self, taken)
        return taken

    def release(self, symbols: Iterable[str]) -> list[str]:
        """Stop holding these symbols; return the ones that were held (others are ignored)."""
        released = [symbol for symbol in normalize_symbols(symbols) if symbol in self._held]
        self._let_go(released)
        return released

    def _let_go(self, symbols: list[str]) -> None:
        for symbol in symbols:
            del self._held[symbol]
            self._buffer.discard(symbol)
        if symbols:
            self._hub.let_go(self, symbols)

    def close(self, reason: str = CONSUMER_CLOSED_REASON) -> None:
        """Release every symbol and end ``get()`` (which raises ``ConsumerClosed`` with the reason); idempotent."""
        if self._closed_reason is not None:
            return
        self._let_go(list(self._held))
        self._hub.forget_consumer(self)
        self._closed_reason = reason
        self._buffer.clear()
        self._cancel_alarm()
        self._writer = None
        if self._flush is not None:
            self._flush.cancel()
        self._wake.set()

    def deliver_to(self, writer: QuoteWriter) -> None:
        """Let the hub hand updates straight to ``writer`` while the reader waits in ``get()`` with nothing pending.

        The writer gets a batch as ``get()`` would return it and must write it as the reader would: the reader
        writes whatever ``get()`` returns when the writer could not take it. The consumer starts each run
        synchronously (an eager task) when the hub asks it to (``write_pending``), keeps the run while it waits
        for its socket, and never lets the hub await it; meanwhile ``get()`` hands out nothing and updates
        conflate. What the writer raises, the next ``get()`` raises. Updates the writer got count as delivered,
        and as activity for ``get()``'s timeout. No effect before Python 3.12.
        """
        if DIRECT_DELIVERY and self._closed_reason is None:
            self._writer = writer

    # The timeout runs on the injected clock (tests drive it), which asyncio.timeout() cannot do.
    async def get(self, timeout: float | None = None) -> list[QuoteItem]:  # noqa: ASYNC109
        """Return the waiting updates (latest per symbol, oldest first); ``[]`` after ``timeout`` quiet seconds.

        Waits until at least one update is there. Quiet means nothing read here and nothing handed to the
        writer (``deliver_to``). Raises ``ConsumerClosed`` once the consumer is closed, and what the writer
        raised once it failed.
        """
        started = self._clock.monotonic()
        while True:
            if self._closed_reason is not None:
                raise ConsumerClosed(self._closed_reason)
            if self._failure is not None:
                raise self._failure
            if self._flush is None:  # else the writer is still writing, and wakes us when done
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

    # --- what the hub calls -----------------------------------------------------------------------

    def offer(self, symbol: str, item: QuoteItem, now: float) -> None:
        """Take an update of a held symbol: buffered (latest per symbol), then the reader or the writer is told."""
        self._buffer.put(symbol, item, now)
        if self._flush is not None:
            return  # the writer is writing: it wakes the reader when done
        if self._parked and self._writer is not None and self._failure is None:
            if not self._queued:
                self._queued = True
                self._hub.queue_write(self)
            return
        self._wake.set()

    def write_pending(self, now: float, loop: asyncio.AbstractEventLoop) -> None:
        """Run the writer on the pending updates if the reader is still idle, else wake the reader.

        The run is this consumer's: started here as an eager task, kept until it ends, its failure raised by
        the next ``get()``. The hub only says when (one callback for every consumer of a burst).
        """
        self._queued = False
        if not self._buffer or self._closed_reason is not None:
            return
        writer = self._writer
        if writer is None or not self._parked or self._flush is not None or self._failure is not None:
            self._wake.set()
            return
        self._flushed_at = now
        run = _start_eagerly(loop, writer.send(self._buffer.drain()))
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
