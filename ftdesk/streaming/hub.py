"""The quote hub: one upstream market-data connection shared by every streaming consumer.

Desired state first: consumers hold symbols (``QuoteConsumer.acquire``/``release``); a symbol's refcount is
the number of distinct consumers holding it. Order books (level 2) are held by their book key
(``brokers.base.book_key``), so a book is shared, refcounted and unsubscribed late exactly like a quote, and
its latest ``OrderBook`` never conflates with the symbol's quote. The hub keeps the upstream connection in line
with that set: a syncer sends subscribe/unsubscribe messages of at most ``feed.max_symbols_per_message`` symbols, one at
a time, recomputing the difference before each, so whatever happens meanwhile (releases, reconnects,
refusals) the upstream ends up carrying exactly the held symbols. A symbol nobody holds any more lingers
``unsubscribe_delay`` seconds before it leaves the upstream, so a client that reconnects at once does not
cause churn. Subscriptions made before login or while the upstream is down only change the desired set;
the next connection applies them.

The connection is opened when a session exists and some symbol is held, and kept open (even when every
symbol is released) until logout, failure or shutdown. After a failure it is reopened after the next
backoff delay (the last delay repeats). The sequence starts again after a *good* connection: one that
stayed open at least ``stable_after`` seconds. (Time up, not "delivered a message": an upstream that
accepts, sends a snapshot and drops at once would otherwise be hammered at the shortest delay.)

A watchdog looks after a connection that carries symbols but delivered nothing for ``watchdog_timeout``
seconds. Silence alone proves little (quiet symbols overnight send nothing), so it first probes: it
subscribes one carried symbol again, which every feed answers with a snapshot. Only when that brings
nothing within ``probe_timeout`` seconds is the connection dropped and reopened.

The read loop never awaits a consumer: each message is stored as the symbol's latest item and put into
each holder's ``ConflatingBuffer`` (latest per symbol), so a consumer that stops reading costs one slot
per held symbol and never slows the others. Every delay uses the injected clock.

Direct delivery (Python 3.12+). Waking a consumer's writer task costs one loop callback per consumer per
update, and under qasync each callback is a Qt timer: with a thousand consumers that was most of the cost
of a quote. So a consumer whose edge attached a ``QuoteWriter`` (``QuoteConsumer.deliver_to``) and whose reader
is idle, waiting in ``get()`` with nothing pending, is not woken. The hub collects such consumers while it
takes in upstream messages and, in one loop callback per burst, asks each to write its pending updates
(``QuoteConsumer.write_pending``). The consumer runs its writer as an eager task and owns that run: it
completes inside the callback when its socket takes the bytes at once (the usual case), so no per-consumer
callback is needed; a writer that has to wait for its socket (back-pressure) goes on as the consumer's task;
until it ends the consumer counts as busy, updates conflate in its buffer as usual, and its reader takes them
once the run is done. The read loop still never waits: the write is a callback of its own and the hub never
touches a writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Iterable
from datetime import datetime

from ftdesk.brokers.base import QuoteConnection, QuoteFeed, QuoteFeedMessage, SymbolError, message_key
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import StreamingUnavailable
from ftdesk.domain.market import Quote
from ftdesk.streaming.consumer import QuoteConsumer
from ftdesk.streaming.models import (
    CONSUMER_KINDS,
    HubState,
    QuoteError,
    QuoteHubStatus,
    QuoteItem,
    SymbolSubscription,
)
from ftdesk.streaming.supervisor import SupervisedStream, describe, drain
from ftdesk.streaming.timing import sleep_until

log = logging.getLogger(__name__)

HUB_CLOSED_REASON = "The quote stream is shutting down"


def _failure_of(task: asyncio.Task[None]) -> BaseException | None:
    """Return the exception a finished task raised, or None (still running, cancelled or returned)."""
    if not task.done() or task.cancelled():
        return None
    return task.exception()


class QuoteHub(SupervisedStream[QuoteConnection]):
    """Shares one upstream quote connection among many consumers (see the module docstring)."""

    def __init__(
        self,
        feed: QuoteFeed,
        clock: Clock,
        *,
        unsubscribe_delay: float,
        backoff: Iterable[float],
        watchdog_timeout: float = 30.0,
        probe_timeout: float = 10.0,
        stable_after: float = 10.0,
    ) -> None:
        super().__init__(clock, backoff, stable_after)
        if unsubscribe_delay < 0:
            raise ValueError(f"unsubscribe_delay must not be negative, got {unsubscribe_delay}")
        if watchdog_timeout <= 0:
            raise ValueError(f"watchdog_timeout must be positive, got {watchdog_timeout}")
        if probe_timeout <= 0:
            raise ValueError(f"probe_timeout must be positive, got {probe_timeout}")
        if feed.max_symbols_per_message < 1:
            raise ValueError(f"the feed's max_symbols_per_message must be >= 1, got {feed.max_symbols_per_message}")
        self._feed = feed
        self._unsubscribe_delay = float(unsubscribe_delay)
        self._watchdog_timeout = float(watchdog_timeout)
        self._probe_timeout = float(probe_timeout)
        self._probe_count = 0
        self._received = 0  # messages since start: a probe is answered when this moves

        # Desired state. A symbol is a key of _holders while anyone holds it or its unsubscribe is pending
        # (then its holder dict is empty and _lingering has its deadline, in deadline order).
        self._holders: dict[str, dict[str, QuoteConsumer]] = {}
        self._lingering: dict[str, float] = {}
        self._last: dict[str, QuoteItem] = {}
        self._consumers: dict[str, QuoteConsumer] = {}
        self._ids = itertools.count(1)
        self._direct: list[QuoteConsumer] = []  # idle consumers with updates for the next direct flush

        # The current connection: what we told it (subscribed, not unsubscribed) and what it refused.
        self._upstream: dict[str, None] = {}
        self._refused: set[str] = set()
        self._silence_since = clock.monotonic()

        self._last_message_mono: float | None = None
        self._tasks: list[asyncio.Task[None]] = []

        self._sync_wake = asyncio.Event()
        self._linger_wake = asyncio.Event()
        self._watchdog_wake = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the connection supervisor and the delayed-unsubscribe timer; idempotent."""
        if self._closed:
            raise StreamingUnavailable("The quote stream was shut down")
        if self._started:
            return
        self._started = True
        self._set_state(self._resting_state())
        self._tasks = [
            asyncio.create_task(self._supervise(), name="quote-hub-supervisor"),
            asyncio.create_task(self._expire_lingering(), name="quote-hub-unsubscribe-timer"),
        ]

    async def close(self) -> None:
        """Cancel every task, close the upstream connection and every consumer; idempotent."""
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # the supervisor closes the connection
        for consumer in list(self._consumers.values()):
            consumer.close(HUB_CLOSED_REASON)
        self._set_state(HubState.DISABLED)

    # --- consumers ------------------------------------------------------------------------------

    def open_consumer(self, kind: str) -> QuoteConsumer:
        """Open a consumer of this kind ("sse", "ws", "shared" or "paper"); close it when done."""
        if kind not in CONSUMER_KINDS:
            raise ValueError(f"Unknown consumer kind {kind!r}; expected one of {', '.join(CONSUMER_KINDS)}")
        if self._closed:
            raise StreamingUnavailable("The quote stream was shut down")
        consumer = QuoteConsumer(self, f"{kind}-{next(self._ids)}", kind, self._clock)
        self._consumers[consumer.id] = consumer
        return consumer

    # --- observation ----------------------------------------------------------------------------

    @property
    def state(self) -> HubState:
        """Return the connection state."""
        return self._state

    @property
    def since(self) -> datetime:
        """Return when the hub entered its current state (UTC)."""
        return self._since

    @property
    def last_error(self) -> str | None:
        """Return why the last connection ended or could not be opened, if one did."""
        return self._last_error

    @property
    def upstream_symbols(self) -> list[str]:
        """Return the symbols the upstream connection carries now, in subscription order."""
        return list(self._upstream)

    def latest_quote(self, symbol: str) -> Quote | None:
        """Return the live stream's latest quote of a symbol, or None when the connection does not carry it."""
        # Only a symbol the open connection carries: a quote kept from a dropped connection may be stale.
        item = self._last.get(symbol)
        live = self._state is HubState.CONNECTED and symbol in self._upstream
        return item if live and isinstance(item, Quote) else None

    def status(self) -> QuoteHubStatus:
        """Return the connection state, counters and per-consumer figures."""
        by_kind = dict.fromkeys(CONSUMER_KINDS, 0)
        for consumer in self._consumers.values():
            by_kind[consumer.kind] += 1
        return QuoteHubStatus(
            state=self._state,
            since=self._since,
            reconnect_count=self._reconnect_count,
            last_message_at=self._wall_time(self._last_message_mono),
            last_error=self._last_error,
            watchdog_probes=self._probe_count,
            subscribed_symbols=list(self._upstream),
            consumers_by_kind=by_kind,
            consumers=[consumer.status() for consumer in self._consumers.values()],
        )

    def subscriptions(self) -> list[SymbolSubscription]:
        """Return every symbol the hub holds or is about to unsubscribe, by symbol."""
        now = self._clock.monotonic()
        result = []
        for symbol in sorted(self._holders):
            holders = self._holders[symbol]
            deadline = self._lingering.get(symbol)
            last = self._last.get(symbol)
            result.append(
                SymbolSubscription(
                    symbol=symbol,
                    refcount=len(holders),
                    kinds=sorted({consumer.kind for consumer in holders.values()}),
                    upstream=symbol in self._upstream,
                    unsubscribe_in_seconds=None if deadline is None else round(max(0.0, deadline - now), 3),
                    error=last.message if isinstance(last, QuoteError) else None,
                )
            )
        return result

    # --- desired state (what a QuoteConsumer tells its hub: the HoldingHub interface) ---------------

    def hold(self, consumer: QuoteConsumer, symbols: list[str]) -> None:
        """Count the consumer among the holders of symbols it did not hold before; offer each its latest item."""
        now = self._clock.monotonic()
        for symbol in symbols:
            self._holders.setdefault(symbol, {})[consumer.id] = consumer
            self._lingering.pop(symbol, None)  # taken again within the delay: keep the subscription
            last = self._last.get(symbol)
            if last is not None:
                consumer.offer(symbol, last, now)
        if symbols:
            self._sync_wake.set()
            self._supervisor_wake.set()

    def let_go(self, consumer: QuoteConsumer, symbols: list[str]) -> None:
        """Stop counting the consumer among the holders of symbols it held; unused ones linger, then leave."""
        now = self._clock.monotonic()
        for symbol in symbols:
            holders = self._holders[symbol]
            del holders[consumer.id]
            if not holders:
                if self._unsubscribe_delay > 0 and not self._closed:
                    self._lingering[symbol] = now + self._unsubscribe_delay
                    self._linger_wake.set()
                else:
                    self._forget(symbol)

    def forget_consumer(self, consumer: QuoteConsumer) -> None:
        """Drop a closed consumer."""
        self._consumers.pop(consumer.id, None)

    def queue_write(self, consumer: QuoteConsumer) -> None:
        """Have the consumer write its pending updates in the next direct-write callback."""
        # One callback for all the consumers of a burst: the point is not to pay one per consumer.
        self._direct.append(consumer)
        if len(self._direct) == 1:
            asyncio.get_running_loop().call_soon(self._write_queued)

    def _write_queued(self) -> None:
        ready, self._direct = self._direct, []
        now = self._clock.monotonic()
        loop = asyncio.get_running_loop()
        for consumer in ready:
            consumer.write_pending(now, loop)  # the consumer runs its own writer and keeps the run

    def _forget(self, symbol: str) -> None:
        """Drop a symbol nobody holds from the desired state (the syncer then unsubscribes it)."""
        self._holders.pop(symbol, None)
        self._lingering.pop(symbol, None)
        self._last.pop(symbol, None)
        self._refused.discard(symbol)
        self._sync_wake.set()

    async def _expire_lingering(self) -> None:
        # One delay for every symbol, so deadlines are added in increasing order: the first entry is
        # always the next one due. A re-acquired symbol only makes this wake early and sleep again.
        while True:
            if not self._lingering:
                self._linger_wake.clear()
                await self._linger_wake.wait()
                continue
            symbol, deadline = next(iter(self._lingering.items()))
            if self._clock.monotonic() < deadline:
                await sleep_until(self._clock, deadline)
                continue
            self._forget(symbol)

    # --- the connection -------------------------------------------------------------------------

    _stream_name = "market-data"

    def _connector(self) -> QuoteFeed:
        return self._feed

    def _wanted(self) -> bool:
        return self._session_active and any(self._holders.values())

    def _resting_state(self) -> HubState:
        if not self._session_active:
            return HubState.WAITING_FOR_SESSION
        return HubState.CONNECTING if self._wanted() else HubState.IDLE

    async def _serve(self, connection: QuoteConnection, epoch: int) -> None:
        """Run one connection until it fails, goes silent or the session changes; then close it."""
        self._upstream.clear()
        self._refused.clear()
        self._silence_since = self._clock.monotonic()
        self._set_state(HubState.CONNECTED)
        log.info("Market-data stream connected")
        reader = asyncio.create_task(self._read(connection), name="quote-hub-reader")
        syncer = asyncio.create_task(self._sync(connection), name="quote-hub-syncer")
        watchdog = asyncio.create_task(self._watch(connection), name="quote-hub-watchdog")
        session = asyncio.create_task(self._until_session_changes(epoch), name="quote-hub-session")
        tasks = (reader, syncer, watchdog, session)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._upstream.clear()
            self._refused.clear()
            with contextlib.suppress(Exception):
                await connection.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._session_epoch != epoch:
            log.info("Market-data stream closed: the brokerage session ended")
        elif watchdog.done() and not watchdog.cancelled():
            self._note_failure(
                f"No market data for {self._watchdog_timeout:g} s while symbols were subscribed, "
                f"and no answer to a probe within {self._probe_timeout:g} s"
            )
        elif (exc := _failure_of(syncer)) is not None:
            self._note_failure(f"A subscribe or unsubscribe failed: {describe(exc)}")
        elif (exc := _failure_of(reader)) is not None:
            self._note_failure(f"The market-data connection failed: {describe(exc)}")
        else:
            self._note_failure("The upstream closed the market-data connection")

    async def _read(self, connection: QuoteConnection) -> None:
        await drain(connection.messages(), self._receive)

    def _receive(self, message: QuoteFeedMessage) -> None:
        """Store a message as its key's latest item and hand it to each holder, never waiting on one."""
        now = self._clock.monotonic()
        self._silence_since = now
        self._last_message_mono = now
        self._received += 1
        key = message_key(message)  # a book travels under its book key, so it never replaces the quote
        holders = self._holders.get(key)
        if holders is None:  # a late message for a symbol already unsubscribed
            return
        item: QuoteItem
        if isinstance(message, SymbolError):
            self._upstream.pop(key, None)
            self._refused.add(key)  # not asked again on this connection
            item = QuoteError(key, message.message)
        else:
            item = message
        self._last[key] = item
        for consumer in holders.values():
            consumer.offer(key, item, now)

    async def _sync(self, connection: QuoteConnection) -> None:
        """Bring the connection in line with the desired state, one chunked message at a time."""
        size = self._feed.max_symbols_per_message
        while True:
            self._sync_wake.clear()
            stale = list(itertools.islice((s for s in self._upstream if s not in self._holders), size))
            if stale:
                await connection.unsubscribe(stale)
                for symbol in stale:
                    self._upstream.pop(symbol, None)
                continue
            fresh = list(
                itertools.islice((s for s in self._holders if s not in self._upstream and s not in self._refused), size)
            )
            if fresh:
                await connection.subscribe(fresh)
                if not self._upstream:  # the silence watchdog counts from the first subscription
                    self._silence_since = self._clock.monotonic()
                    self._watchdog_wake.set()
                for symbol in fresh:
                    if symbol not in self._refused:
                        self._upstream[symbol] = None
                continue
            await self._sync_wake.wait()

    async def _watch(self, connection: QuoteConnection) -> None:
        """Return once the connection carries symbols, went silent and did not answer a probe."""
        while True:
            if not self._upstream:
                self._watchdog_wake.clear()
                await self._watchdog_wake.wait()
                continue
            # Messages only move _silence_since; the watchdog re-reads it when it wakes instead of being
            # woken per message.
            deadline = self._silence_since + self._watchdog_timeout
            if self._clock.monotonic() < deadline:
                await sleep_until(self._clock, deadline)
                continue
            received = self._received
            self._probe_count += 1
            log.debug("Market-data stream silent for %g s: probing", self._watchdog_timeout)
            await connection.subscribe([next(iter(self._upstream))])
            await sleep_until(self._clock, self._clock.monotonic() + self._probe_timeout)
            if self._received == received:
                return
