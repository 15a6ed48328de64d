"""Keep one upstream stream connection up while it is wanted: connect, serve, back off, reconnect.

The quote hub and the account-event hub share this loop. The backoff index counts consecutive bad
connections (a refused connect, or one that ended before ``stable_after`` seconds); the last delay is
reused, and a login or logout starts afresh with no backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

from ftdesk.domain.clock import Clock
from ftdesk.streaming.models import HubState
from ftdesk.streaming.timing import wait_event_until

log = logging.getLogger(__name__)

ConnectionT = TypeVar("ConnectionT")
ConnectionT_co = TypeVar("ConnectionT_co", covariant=True)


class _Connectable(Protocol[ConnectionT_co]):
    async def connect(self) -> ConnectionT_co: ...


class SupervisedStream(Generic[ConnectionT]):
    """The reconnect loop of a hub; subclasses say when a connection is wanted and how to serve it."""

    _stream_name: str  # e.g. "market-data", for messages

    def __init__(self, clock: Clock, backoff: Iterable[float], stable_after: float) -> None:
        delays = tuple(float(d) for d in backoff)
        if not delays or any(d <= 0 for d in delays):
            raise ValueError(f"backoff must be a non-empty sequence of positive seconds, got {delays}")
        if stable_after < 0:
            raise ValueError(f"stable_after must not be negative, got {stable_after}")
        self._clock = clock
        self._backoff = delays
        self._stable_after = float(stable_after)
        self._session_active = False
        self._session_epoch = 0
        self._state = HubState.DISABLED
        self._since: datetime = clock.now()
        self._reconnect_count = 0
        self._last_error: str | None = None
        self._started = False
        self._closed = False
        self._supervisor_wake = asyncio.Event()
        self._session_wake = asyncio.Event()

    def set_session_active(self, active: bool) -> None:
        """Say whether a brokerage session exists: logout closes the upstream, login reopens it."""
        if active == self._session_active:
            return
        self._session_active = active
        self._session_epoch += 1
        self._supervisor_wake.set()
        self._session_wake.set()

    def _connector(self) -> _Connectable[ConnectionT]:
        raise NotImplementedError

    def _wanted(self) -> bool:
        raise NotImplementedError

    def _resting_state(self) -> HubState:
        raise NotImplementedError

    async def _serve(self, connection: ConnectionT, epoch: int) -> None:
        raise NotImplementedError

    def _set_state(self, state: HubState) -> None:
        if state is not self._state:
            self._state = state
            self._since = self._clock.now()

    def _note_failure(self, reason: str) -> None:
        self._last_error = reason
        log.warning("%s stream: %s", self._stream_name.capitalize(), reason)

    def _wall_time(self, mono: float | None) -> datetime | None:
        if mono is None:
            return None
        return self._clock.now() - timedelta(seconds=self._clock.monotonic() - mono)

    async def _until_session_changes(self, epoch: int) -> None:
        while self._session_epoch == epoch:
            self._session_wake.clear()
            await self._session_wake.wait()

    async def _supervise(self) -> None:
        # A stream whose supervisor died would stay down for good while its status still read "connected":
        # an unexpected error is logged, shown as the last error, and supervision resumes after the longest
        # backoff delay. Cancellation (close) is not an Exception and ends it.
        while True:
            try:
                await self._keep_connected()
            except Exception as exc:
                log.error("The %s stream supervisor failed; it resumes shortly", self._stream_name, exc_info=exc)
                self._note_failure(f"Internal error in the {self._stream_name} stream: {describe(exc)}")
                self._set_state(HubState.RECONNECTING)
                await self._back_off(self._clock.monotonic() + self._backoff[-1], self._session_epoch)

    async def _keep_connected(self) -> None:
        failures = 0  # consecutive bad connections or refused connects: the index into the backoff
        while True:
            if not self._wanted():
                self._set_state(self._resting_state())
                failures = 0
                self._supervisor_wake.clear()
                await self._supervisor_wake.wait()
                continue
            epoch = self._session_epoch
            if failures:
                self._reconnect_count += 1
            self._set_state(HubState.RECONNECTING if failures else HubState.CONNECTING)
            try:
                connection = await self._connector().connect()
            except Exception as exc:  # every connect failure is retried after the backoff
                self._note_failure(f"Could not open the {self._stream_name} connection: {describe(exc)}")
            else:
                opened = self._clock.monotonic()
                await self._serve(connection, epoch)
                if self._clock.monotonic() - opened >= self._stable_after:
                    failures = 0
            if self._session_epoch != epoch or not self._wanted():
                # Logged out (or out and in), or nothing is wanted any more: start afresh, no backoff.
                failures = 0
                continue
            failures += 1
            self._set_state(HubState.RECONNECTING)
            delay = self._backoff[min(failures, len(self._backoff)) - 1]
            log.info("Reconnecting the %s stream in %g s", self._stream_name, delay)
            await self._back_off(self._clock.monotonic() + delay, epoch)

    async def _back_off(self, deadline: float, epoch: int) -> None:
        # A login or logout ends the wait: the supervisor then starts afresh.
        while self._clock.monotonic() < deadline and self._session_epoch == epoch:
            self._supervisor_wake.clear()
            await wait_event_until(self._clock, self._supervisor_wake, deadline)


def describe(exc: BaseException) -> str:
    """Return an exception as one line a trader can read in the status page."""
    text = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


ItemT = TypeVar("ItemT")


async def drain(stream: AsyncIterator[ItemT], receive: Callable[[ItemT], None]) -> None:
    """Hand every item of an upstream stream to ``receive`` until it ends, then close the stream."""
    try:
        async for item in stream:
            receive(item)
    finally:
        closer = getattr(stream, "aclose", None)  # async generators hold resources until closed
        if closer is not None:
            await closer()
