"""The running service's one control surface: what the tray app and the composition root may do with it.

``ServiceControl`` starts, stops and restarts the service (one ``ServiceRun`` at a time, built by the
composition root), and is the only way in for the desktop app: the brokerage session (log in, log out,
store credentials), live trading on and off, the settings (read, validate, save, apply), the order
journal, the state of the stream hubs, the API key, and subscriptions to state changes and account events.
Every subscription returns the callable that ends it. What crosses into the GUI as an error is a domain
error (``ftdesk.domain.errors``), ``ServiceNotRunning``, ``ConfigError`` or ``PortInUseError``.

The few types the desktop app needs from the layers below are part of this module's public API (see
``__all__``), so the GUI depends on this module and on ``ftdesk.domain`` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from ftdesk import __version__
from ftdesk.autostart import LoginItem
from ftdesk.config import SETTINGS_BY_NAME, ConfigError, Settings, SettingSpec
from ftdesk.data_dir import DataDirDamaged
from ftdesk.domain.errors import FtdeskError, StreamingUnavailable
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.safety import HaltOutcome, HaltState, SafetyState, TradingHalted
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.logs import SecretRedactor, log_dir
from ftdesk.service.cockpit_access import CockpitAccess, OrderBook
from ftdesk.service.context import DesktopWindow, ServiceContext
from ftdesk.service.first_run import is_first_start, record_welcome_shown
from ftdesk.service.orders.approvals import ApprovalRequest, Approver, Verdict
from ftdesk.service.orders.journal import JournalAction, JournalEntry, Outcome
from ftdesk.service.settings_changes import SaveOutcome, save_changes, validate_setting
from ftdesk.service.web.server import PortInUseError
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.models import ConsumerClosed, HubState

__all__ = (
    "SETTINGS_BY_NAME",
    "AccountEventListener",
    "ApprovalRequest",
    "Approver",
    "CockpitAccess",
    "ConfigError",
    "DataDirDamaged",
    "HubState",
    "JournalAction",
    "JournalEntry",
    "LoginItem",
    "OrderBook",
    "Outcome",
    "PortInUseError",
    "RuntimeFactory",
    "SaveOutcome",
    "ServiceChange",
    "ServiceControl",
    "ServiceNotRunning",
    "ServiceRun",
    "ServiceStatus",
    "SettingSpec",
    "Settings",
    "StateListener",
    "StreamStatus",
    "Verdict",
    "validate_setting",
)
# Re-exported for the desktop app, which may import nothing else of the service:
# ``Settings``, ``SettingSpec`` and ``SETTINGS_BY_NAME`` (the settings table the dialog is built from),
# ``ConfigError`` (a setting ftdesk cannot use), ``PortInUseError`` (the port is taken at start),
# ``HubState`` (a stream hub's state), ``JournalEntry`` (one order-journal row, with its ``JournalAction`` and
# ``Outcome``, which the journal tab puts in words), ``LoginItem`` (the
# platform's start-at-login entry, which the settings dialog edits), ``SaveOutcome`` (the answer to a
# settings save), ``CockpitAccess`` and ``OrderBook`` (the cockpit's positions, orders and cancels) and
# ``validate_setting`` (the one check of a settings change, which the dialog runs on each field as it is typed).

log = logging.getLogger(__name__)


class ServiceNotRunning(FtdeskError):
    """The service is not running (not started yet, stopped, or between the two halves of a restart)."""

    def __init__(self) -> None:
        super().__init__("The service is not running")


class ServiceRun(Protocol):
    """One run of the service, as the composition root builds it (``ftdesk.app.ServiceRuntime`` is one)."""

    @property
    def settings(self) -> Settings:
        """Return the settings the run serves with now."""
        ...

    @property
    def url(self) -> str:
        """Return the base URL the run serves."""
        ...

    async def start(self) -> ServiceContext:
        """Start the run and return what it serves with; a failure leaves nothing of it running."""
        ...

    async def stop(self) -> None:
        """Stop the run (streams closed, server stopped, broker closed); idempotent."""

    async def regenerate_api_key(self) -> None:
        """Store a new API key; it takes effect at the next start."""


RuntimeFactory = Callable[[Settings, DesktopWindow | None], ServiceRun]
"""Builds one run from settings; the window (None when headless) lets a second launch bring ours to the front."""


class ServiceChange(StrEnum):
    """What changed, as told to ``ServiceControl.subscribe`` listeners."""

    RUNNING = "running"  # started, stopped, or restarting
    SESSION = "session"  # the brokerage session's state
    LIVE_TRADING = "live_trading"
    SETTINGS = "settings"  # settings applied without a restart
    SAFETY = "safety"  # halted or resumed, the live switch's audit, the limits (``ServiceControl.safety()``)


StateListener = Callable[[ServiceChange], None]
AccountEventListener = Callable[[AccountEvent], None]


@dataclass(frozen=True)
class StreamStatus:
    """The two upstream stream hubs and the client streams they serve."""

    quotes: HubState = HubState.DISABLED
    quotes_error: str | None = None  # why the last quote connection ended, if one did
    events: HubState = HubState.DISABLED
    events_error: str | None = None
    events_why_not: str | None = None  # why account events are not live (None when they are, or unknown)
    clients: Mapping[str, int] = field(default_factory=dict)  # "sse" and "ws" quote streams, "events"


@dataclass(frozen=True)
class ServiceStatus:
    """A snapshot of the service for the desktop app; ``running`` is False while stopped or restarting."""

    running: bool
    url: str
    broker: str
    live: bool
    session: SessionState
    username: str | None  # masked
    last_error: str | None  # why the last login, keep-alive or re-auth failed
    reauth_count: int
    auto_reauth: bool
    credentials_stored: bool
    streams: StreamStatus
    problems: tuple[str, ...] = ()  # one line each: damaged files moved aside, a full disk, a halt not saved
    paper_market: str = "simulated"  # with broker paper: "simulated" or "fidelity" (Fidelity's market, no real order)


@dataclass(frozen=True)
class _Run:
    """A started run and what it serves with: both exist together or not at all."""

    runtime: ServiceRun
    context: ServiceContext
    unsubscribe: Callable[[], None]


class ServiceControl:
    """Starts, stops and restarts the service and is the desktop app's only way in (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        make_runtime: RuntimeFactory,
        *,
        reload_settings: Callable[[], Settings] | None = None,
        redactor: SecretRedactor | None = None,
    ) -> None:
        self._settings = settings
        self._make_runtime = make_runtime
        self._reload_settings = reload_settings or (lambda: self._settings)
        self._redactor = redactor or SecretRedactor()
        self._window: DesktopWindow | None = None
        self._run: _Run | None = None
        self._lock = asyncio.Lock()  # one start, stop or restart at a time
        self._listeners: list[StateListener] = []
        self._event_listeners: list[AccountEventListener] = []
        self._event_reader: asyncio.Task[None] | None = None
        self._event_consumer_id: str | None = None
        self._cockpit = CockpitAccess(lambda: self._require().context)
        self._approvers: list[Approver] = []

    # --- what it is ----------------------------------------------------------------------------------

    @property
    def version(self) -> str:
        """Return the version of ftdesk."""
        return __version__

    @property
    def settings(self) -> Settings:
        """Return the settings the service runs with (or last ran with)."""
        return self._settings

    @property
    def running(self) -> bool:
        """Say whether the service runs (False while stopped or between the halves of a restart)."""
        return self._run is not None

    @property
    def url(self) -> str:
        """Return the base URL of the service (the configured one while it is not running)."""
        return self._run.runtime.url if self._run is not None else self._settings.base_url

    @property
    def log_folder(self) -> Path:
        """Return the folder of the log files."""
        return log_dir(self._settings.data_dir)

    @property
    def api_key(self) -> str:
        """Return the API key scripts need; raise ``ServiceNotRunning`` when there is none."""
        return self._require().context.api_key

    @property
    def cockpit(self) -> CockpitAccess:
        """Return the cockpit's positions, orders and cancels (each call raises ``ServiceNotRunning`` when stopped)."""
        return self._cockpit

    def scrub(self, text: str) -> str:
        """Return the text with every secret the service knows masked."""
        return self._redactor.scrub(text)

    def show_window_with(self, show: Callable[[], None]) -> None:
        """Let a second launch show our window by calling ``show`` (takes effect at the next start)."""
        self._window = DesktopWindow(show=show)

    def _require(self) -> _Run:
        if self._run is None:
            raise ServiceNotRunning()
        return self._run

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the service; raise what the start raises (``PortInUseError``, ``ConfigError``, ...)."""
        async with self._lock:
            if self._run is None:
                self._attach(await self._start_run(self._settings))

    async def stop(self) -> None:
        """Stop the service; idempotent."""
        async with self._lock:
            run = await self._detach()
            if run is not None:
                await run.runtime.stop()

    async def restart(self) -> str | None:
        """Stop, reload the settings and start again; return why the new settings failed, or None.

        When the new settings cannot start, the service starts again with the previous ones. The trading
        mode is never changed by a restart, and a session that was open is opened again with the stored
        credentials.
        """
        async with self._lock:
            old = await self._detach()
            if old is None:
                raise ServiceNotRunning()
            previous = self._settings
            live = old.context.live.enabled
            had_session = old.context.session.state is not SessionState.LOGGED_OUT
            await old.runtime.stop()
            failure: str | None = None
            try:
                settings = await asyncio.to_thread(self._reload_settings)
                started = await self._start_run(settings)
            except Exception as exc:
                log.exception("Restart with the new settings failed; starting with the previous ones")
                failure = str(exc)
                started = await self._start_run(previous)
            self._attach(started)
            self.set_live_trading(live and not started.context.safety.halted, source="kept across the restart")
            session = started.context.session
            if had_session and session.state is SessionState.LOGGED_OUT:
                await session.login_with_stored_credentials()
            log.info("Service restarted at %s", started.runtime.url)
            return failure

    async def _start_run(self, settings: Settings) -> _Run:
        runtime = self._make_runtime(settings, self._window)
        context = await runtime.start()
        unsubscribers = (
            context.session.add_listener(lambda _state: self._emit(ServiceChange.SESSION)),
            context.safety.add_listener(lambda: self._emit(ServiceChange.SAFETY)),
            context.live.add_listener(lambda _enabled, _source: self._emit(ServiceChange.LIVE_TRADING)),
            *(context.orders.approvals.attach(approver) for approver in self._approvers),
        )
        return _Run(runtime, context, lambda: _call_all(unsubscribers))

    def _attach(self, run: _Run) -> None:
        self._run = run
        self._settings = run.context.settings
        safety, live = run.context.safety, run.context.live.enabled
        if live and safety.halted:
            self.set_live_trading(False, source="halt kept across the restart")
        elif safety.last_live_change is None or safety.last_live_change.enabled != live:
            safety.live_changed(live, "startup")  # the value this run started with (settings or environment)
        self._start_event_reader()
        self._emit(ServiceChange.RUNNING)

    async def _detach(self) -> _Run | None:
        run, self._run = self._run, None
        if run is None:
            return None
        run.unsubscribe()
        reader, self._event_reader = self._event_reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        self._emit(ServiceChange.RUNNING)
        return run

    # --- subscriptions ----------------------------------------------------------------------------------

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(change)`` on every state change; return the callable that unsubscribes it.

        Listeners run inside the change (a session listener inside the session's own state change), so one
        that wants the whole new state should look at it on a later loop turn.
        """
        self._listeners.append(listener)
        return lambda: _remove(self._listeners, listener)

    def subscribe_account_events(self, listener: AccountEventListener) -> Callable[[], None]:
        """Call ``listener(event)`` for each account event while the service runs; return the unsubscriber."""
        self._event_listeners.append(listener)
        self._start_event_reader()

        def unsubscribe() -> None:
            _remove(self._event_listeners, listener)
            if not self._event_listeners and self._event_reader is not None:
                self._event_reader.cancel()
                self._event_reader = None

        return unsubscribe

    def _emit(self, change: ServiceChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # a listener must never break the service
                log.exception("Service listener failed")

    def _start_event_reader(self) -> None:
        if self._run is None or not self._event_listeners or self._event_reader is not None:
            return
        self._event_reader = asyncio.get_running_loop().create_task(
            self._read_account_events(self._run.context.events), name="account-event listeners"
        )

    async def _read_account_events(self, hub: AccountEventHub) -> None:
        """Hand every account event to the listeners, for as long as this run runs."""
        last_id: int | None = None
        while True:
            try:
                consumer, _replay = hub.open_consumer(last_id)
            except StreamingUnavailable:
                return  # not configured (e.g. Fidelity without BEPS) or shut down: no events to hand on
            self._event_consumer_id = consumer.id
            try:
                while True:
                    for item in await consumer.get():
                        last_id = item.id
                        for listener in list(self._event_listeners):
                            try:
                                listener(item.event)
                            except Exception:
                                log.exception("Account-event listener failed")
            except ConsumerClosed:
                continue  # overflow closes a reader: resume after the last event seen (hub closed: open fails)
            finally:
                consumer.close()
                if self._event_consumer_id == consumer.id:
                    self._event_consumer_id = None

    # --- status ------------------------------------------------------------------------------------------

    def status(self) -> ServiceStatus:
        """Return a snapshot of the service, the session and the streams."""
        run = self._run
        if run is None:
            return ServiceStatus(
                running=False,
                url=self.url,
                broker=self._settings.broker,
                live=False,
                session=SessionState.LOGGED_OUT,
                username=None,
                last_error=None,
                reauth_count=0,
                auto_reauth=self._settings.auto_reauth,
                credentials_stored=False,
                streams=StreamStatus(),
                paper_market=self._settings.paper_market,
            )
        session = run.context.session.status()
        return ServiceStatus(
            running=True,
            url=run.runtime.url,
            broker=session.broker,
            live=run.context.live.enabled,
            session=session.state,
            username=session.username,
            last_error=session.last_error,
            reauth_count=session.reauth_count,
            auto_reauth=session.auto_reauth,
            credentials_stored=session.credentials_stored,
            streams=self.streams(),
            problems=tuple(run.context.safety.problems),
            paper_market=self._settings.paper_market,
        )

    def streams(self) -> StreamStatus:
        """Return the state of the quote and account-event hubs and how many client streams each serves.

        The account-event reader behind ``subscribe_account_events`` is ftdesk's own, not a client: it is
        not counted.
        """
        run = self._run
        if run is None:
            return StreamStatus()
        quotes = run.context.quotes.status()
        events = run.context.events.status()
        clients = {
            "sse": quotes.consumers_by_kind.get("sse", 0),
            "ws": quotes.consumers_by_kind.get("ws", 0),
            "events": sum(1 for c in events.consumers if c.id != self._event_consumer_id),
        }
        return StreamStatus(
            quotes=quotes.state,
            quotes_error=quotes.last_error,
            events=events.state,
            events_error=events.last_error,
            events_why_not=events.why_not,
            clients=clients,
        )

    # --- the brokerage session -------------------------------------------------------------------------

    async def log_in(self, credentials: Credentials) -> None:
        """Log in to the brokerage; raise the domain error that says why not (``TotpRequired``, ...)."""
        await self._require().context.session.login(credentials)

    async def log_out(self) -> None:
        """End the brokerage session; idempotent."""
        await self._require().context.session.logout()

    async def store_credentials(self, credentials: Credentials) -> None:
        """Keep the credentials for auto re-auth (off the loop); raise ``FtdeskError`` or ``OSError`` if not."""
        run = self._require()
        await asyncio.to_thread(run.context.credentials.save, credentials)
        await run.context.session.refresh_credentials_flag()

    # --- live trading --------------------------------------------------------------------------------------

    def set_live_trading(self, enabled: bool, *, source: str) -> None:
        """Switch live trading on or off for this run (the settings file keeps the start value); log who did.

        Raise ``TradingHalted`` when asked to switch it on while trading is halted: the halt is lifted first
        (``resume``), whoever asks, so a confirmation dialog left open while a script halted cannot undo it.
        """
        context = self._require().context
        if context.live.enabled == enabled:
            return
        if enabled and context.safety.halted:
            raise context.safety.halted_error()
        # The switch logs who switched; its listeners journal it (the guard) and tell the desktop app (this surface).
        context.live.set(enabled, source)

    # --- the trader's approval of held places -------------------------------------------------------------

    def attach_approver(self, approver: Approver) -> Callable[[], None]:
        """Show ``approver`` (the tray's approval window) every place held for the trader, across restarts."""
        self._approvers.append(approver)
        if self._run is not None:
            self._run.context.orders.approvals.attach(approver)

        def detach() -> None:
            if approver in self._approvers:
                self._approvers.remove(approver)
            if self._run is not None:
                self._run.context.orders.approvals.detach(approver)

        return detach

    def answer_approval(self, number: int, approve: bool) -> bool:
        """Approve or reject a held place; False when it no longer waits (answered, timed out, withdrawn)."""
        return self._require().context.orders.approvals.answer(number, approve)

    # --- the kill switch -----------------------------------------------------------------------------------

    async def halt(self, source: str = "tray") -> HaltOutcome:
        """Halt trading: refuse previews and places, live trading off, cancel every open order; journal it."""
        return await self._require().context.kill_switch.halt(source)

    async def resume(self, source: str = "tray") -> HaltState:
        """Lift the halt (live trading stays off; the tray confirms first); return the halt that was lifted."""
        return await self._require().context.kill_switch.resume(source)

    def safety(self) -> SafetyState:
        """Return the halt, the live switch and its last change, the limits and today's usage."""
        return self._require().context.kill_switch.state()

    # --- settings ------------------------------------------------------------------------------------------

    async def saved_settings(self) -> Settings:
        """Return the settings as the file and the environment hold them now (read off the loop)."""
        return await asyncio.to_thread(self._reload_settings)

    async def save_settings(self, changes: Mapping[str, Any]) -> SaveOutcome:
        """Validate every change, write the settings file (off the loop) and apply what can change live."""
        run = self._require()
        outcome, live_values = await save_changes(self._settings, changes)
        if live_values:
            self._apply_live(run, live_values)
        return outcome

    def _apply_live(self, run: _Run, values: Mapping[str, Any]) -> None:
        # One holder for the run: the desk reads preview_ttl from it on every place, the session follows it.
        self._settings = run.context.settings_holder.apply(dict(values))
        if "live_trading" in values:
            try:
                self.set_live_trading(bool(values["live_trading"]), source="settings")
            except TradingHalted:  # saved as the start value; live stays off until the halt is lifted
                log.warning("Live trading stays off: trading is halted (resume first)")
        log.info("Settings applied without a restart: %s", ", ".join(sorted(values)))
        self._emit(ServiceChange.SETTINGS)

    async def regenerate_api_key(self) -> str | None:
        """Replace the API key and restart so only the new key opens the service; return what ``restart`` returns.

        Raise ``Conflict`` when ``FTSERVICE_API_KEY`` fixes the key.
        """
        await self._require().runtime.regenerate_api_key()
        return await self.restart()

    # --- the order journal and the data dir ------------------------------------------------------------------

    async def journal_entries(self, limit: int) -> list[JournalEntry]:
        """Return the newest order-journal entries (none while the service is not running)."""
        run = self._run
        if run is None:
            return []
        return await run.context.orders.entries(limit=limit, start=None, end=None)

    async def is_first_start(self) -> bool:
        """Say whether ftdesk starts in this data dir for the first time; ask before the service starts."""
        return await asyncio.to_thread(is_first_start, self._settings.data_dir)

    async def record_welcome_shown(self) -> None:
        """Remember in the data dir that the welcome window was shown; raise ``OSError`` if it cannot."""
        await asyncio.to_thread(record_welcome_shown, self._settings.data_dir)


def _call_all(callables: tuple[Callable[[], None], ...]) -> None:
    for call in callables:
        call()


def _remove(listeners: list[Any], listener: Any) -> None:
    with contextlib.suppress(ValueError):  # unsubscribing twice is harmless
        listeners.remove(listener)
