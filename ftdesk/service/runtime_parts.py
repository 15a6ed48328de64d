"""The parts of one run of the service, each a small async context manager: started on entry, released on exit.

The composition root (``ftdesk.app.ServiceRuntime``) enters them on one ``AsyncExitStack`` in order, so a start
that fails half-way releases exactly what it had started, and a stop releases everything in reverse order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from ftdesk.brokers.base import Broker
from ftdesk.config import Settings
from ftdesk.data_dir import DataDirSpace
from ftdesk.domain.clock import Clock
from ftdesk.domain.session import SessionState
from ftdesk.service.credentials import CredentialStore
from ftdesk.service.orders.journal import JOURNAL_FILE_NAME, OrderJournal
from ftdesk.service.orders.recorder import OrderRecorder
from ftdesk.service.safety.guard import SafetyGuard
from ftdesk.service.safety.loss_watch import LossWatch
from ftdesk.service.safety.reads import BrokerReads
from ftdesk.service.safety.store import SafetyStore
from ftdesk.service.safety.sweep import KillSwitch, RestartSweep
from ftdesk.service.session import SessionManager
from ftdesk.service.switches import LiveTradingSwitch, SettingsHolder
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.hub import QuoteHub


@contextlib.asynccontextmanager
async def order_journal(settings: Settings, clock: Clock, space: DataDirSpace) -> AsyncIterator[OrderRecorder]:
    """Open the order journal first and close it last.

    Rows a crashed run left 'pending' become 'unknown' before any new order; an action in flight at stop is still
    recorded. Which market this run trades on ("paper on Fidelity's market"...) is journaled when it changed. The
    data dir's space reserve is made first (or freed, at a start on a full disk), for the journal's must-writes.
    """
    await asyncio.to_thread(space.prepare)
    recorder = OrderRecorder(OrderJournal(settings.data_dir / JOURNAL_FILE_NAME, clock, space))
    await recorder.open()
    try:
        paper_on_fidelity = settings.broker == "paper" and settings.paper_market == "fidelity"
        await asyncio.to_thread(recorder.journal.note_market, settings.trading_mode, first=paper_on_fidelity)
        yield recorder
    finally:
        await recorder.close()


@contextlib.asynccontextmanager
async def started_broker(broker: Broker) -> AsyncIterator[Broker]:
    """Start the broker; close it on the way out, also after a start that failed half-way (closing is safe)."""
    try:
        await broker.start()
        yield broker
    finally:
        await broker.close()


@contextlib.asynccontextmanager
async def brokerage_session(
    broker: Broker, clock: Clock, credentials: CredentialStore, settings: SettingsHolder, live: LiveTradingSwitch
) -> AsyncIterator[SessionManager]:
    """Run the brokerage session (logged out at first); it follows the settings that change live."""
    current = settings.current
    session = SessionManager(
        broker,
        clock,
        credentials,
        keepalive_interval=current.session_keepalive_interval,
        auto_reauth=current.auto_reauth,
        live_trading=lambda: live.enabled,
    )
    unfollow = settings.add_listener(session.follow_settings)
    try:
        await session.refresh_credentials_flag()
        yield session
    finally:
        unfollow()
        await session.close()


@contextlib.asynccontextmanager
async def safety_guard(
    settings: Settings,
    recorder: OrderRecorder,
    clock: Clock,
    holder: SettingsHolder,
    session: SessionManager,
    quotes: QuoteHub,
    known_problems: Sequence[str] = (),
    space: DataDirSpace | None = None,
    events: AccountEventHub | None = None,
) -> AsyncIterator[SafetyGuard]:
    """Bring back the kill switch's state from the data dir before the server opens: a halted run stays halted.

    The guard reads the broker for the risk limits through its own reads, inside the session; at stop it finishes
    the audit writes still in flight.
    """
    guard = await SafetyGuard.open(
        SafetyStore(settings.data_dir, space),
        recorder.journal,
        clock,
        settings=holder,
        reads=BrokerReads(
            session, quotes, clock, lambda: [item.event for item in events.buffered()] if events is not None else []
        ),
        known_problems=known_problems,
    )
    if space is not None:
        guard.watch_space(space)  # a full disk is shown among the problems while it lasts
    try:
        yield guard
    finally:
        await guard.close()


@contextlib.asynccontextmanager
async def restart_sweep(
    guard: SafetyGuard, kill_switch: KillSwitch, session: SessionManager
) -> AsyncIterator[RestartSweep]:
    """Have a run that found a halt cancel the open orders (requests wait while it sweeps)."""
    sweep = RestartSweep(guard, kill_switch)
    unfollow = session.add_listener(lambda state: sweep.session_changed(state is SessionState.LOGGED_IN))
    try:
        yield sweep
    finally:
        unfollow()
        await sweep.close()


@contextlib.asynccontextmanager
async def loss_watch(guard: SafetyGuard, kill_switch: KillSwitch, clock: Clock) -> AsyncIterator[LossWatch]:
    """Check the daily loss limit on a timer while the service runs."""
    watch = LossWatch(guard, kill_switch, clock)
    watch.start()
    try:
        yield watch
    finally:
        await watch.close()


class SessionStream(Protocol):
    """A stream hub: one upstream connection, open while a brokerage session exists."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def set_session_active(self, active: bool) -> None: ...


@contextlib.asynccontextmanager
async def following_session(hub: SessionStream, session: SessionManager) -> AsyncIterator[None]:
    """Run a stream hub that follows the session (its connection open while logged in); close it on the way out."""
    await hub.start()
    try:
        hub.set_session_active(session.state is SessionState.LOGGED_IN)
        unfollow = session.add_listener(lambda state: hub.set_session_active(state is SessionState.LOGGED_IN))
        try:
            yield
        finally:
            unfollow()
    finally:
        await hub.close()
