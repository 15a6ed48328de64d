"""The one place where service state becomes Qt signals and Qt actions become service calls.

``ServiceBridge`` holds the running service (a ``ServiceRuntimeHandle``, built by the composition root) and
re-emits everything the tray shows as one ``status_changed(AppStatus)`` signal: on every session change
(listener) and on a 1 Hz poll for what has no listener (the stream hubs, client counts). It implements what
the dialogs ask for (``LoginSubmit``, ``SettingsActions``) and the menu actions, and it turns notable
changes into ``notify(title, message)``: session expired, re-authenticated, an upstream stream lost and
back, and order fills read from the account-event stream. Everything that can block (keychain, files)
runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import SecretStr
from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication

from ftdesk.config import SETTINGS_BY_NAME, ConfigError, Settings, save_settings_file, validate_setting
from ftdesk.domain.errors import FtdeskError, StreamingUnavailable, TotpRequired
from ftdesk.domain.events import AccountEvent, EventType
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.gui.contracts import LoginOutcome, LoginRequest, LoginResult, SaveOutcome
from ftdesk.logs import log_dir
from ftdesk.service.context import LiveTradingSwitch, ServiceContext
from ftdesk.service.orders_desk import OrderDesk
from ftdesk.service.orders_journal import JournalEntry
from ftdesk.service.routes.app_window import DesktopWindow
from ftdesk.service.session import SessionManager
from ftdesk.streaming.events import AccountEventHub
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import ConsumerClosed, HubState

log = logging.getLogger(__name__)

POLL_INTERVAL_MS = 1000
"""How often the bridge looks at what has no listener (stream hubs, connected clients)."""
JOURNAL_ROWS = 10
"""Journal entries the status window shows."""


class ServiceRuntimeHandle(Protocol):
    """What the bridge needs of the running service (``ftdesk.app.ServiceRuntime`` is one)."""

    settings: Settings
    live: LiveTradingSwitch
    session: SessionManager | None
    quotes: QuoteHub | None
    events: AccountEventHub | None
    orders: OrderDesk | None
    context: ServiceContext | None

    @property
    def url(self) -> str:
        """Return the base URL of the running service."""
        ...

    async def start(self) -> None:
        """Start the service."""

    async def stop(self) -> None:
        """Stop the service (streams closed, server stopped, broker closed)."""

    async def regenerate_api_key(self) -> None:
        """Store a new API key for the next start."""


RuntimeFactory = Callable[[Settings, DesktopWindow], ServiceRuntimeHandle]
"""Builds a runtime from settings; the window lets a second launch bring ours to the front."""


@dataclass(frozen=True)
class AppStatus:
    """Everything the tray and the status window show; a new one is emitted whenever any of it changes."""

    running: bool  # False while the service restarts, or when a restart failed
    session: SessionState
    username: str | None  # masked
    broker: str
    live: bool
    api_url: str
    docs_url: str
    quotes: HubState
    events: HubState
    clients: Mapping[str, int]  # open client streams by kind: "sse" and "ws" quotes, "events"
    last_error: str | None
    reauth_count: int
    auto_reauth: bool
    credentials_stored: bool
    events_why_not: str | None = None  # why account events are not live (None when they are, or unknown)

    @property
    def client_count(self) -> int:
        """Return the number of open client streams."""
        return sum(self.clients.values())

    @property
    def upstream_error(self) -> bool:
        """Say whether a brokerage stream is down while it should be up."""
        return self.session is SessionState.LOGGED_IN and HubState.RECONNECTING in (self.quotes, self.events)


STREAM_NAMES = {"quotes": "Market-data stream", "events": "Account-event stream"}


def fill_message(event: AccountEvent) -> tuple[str, str]:
    """Return the notification title and text of a fill event."""
    desc = event.desc
    partial = bool(desc.get("partial"))
    title = "Order partly filled" if partial else "Order filled"
    price = desc.get("price")
    shown_price = f" at {price:,.2f}" if isinstance(price, int | float) else ""
    qty = desc.get("fill_qty", desc.get("qty", "?"))
    qty_text = f"{qty:g}" if isinstance(qty, float) else str(qty)
    text = f"{desc.get('action', '?')} {qty_text} {desc.get('symbol', '?')}{shown_price}"
    details = [str(v) for v in (desc.get("acct_num"), desc.get("conf_num")) if v]
    if partial and desc.get("remaining_qty") is not None:
        details.append(f"{desc['remaining_qty']} left")
    return title, f"{text} ({', '.join(details)})" if details else text


def expiry_message(status: AppStatus) -> str:
    """Return what an expired session means for the trader: ftdesk logs in again, or they must."""
    if status.auto_reauth and status.credentials_stored:
        return "The brokerage session expired; ftdesk is logging in again with the stored credentials"
    if not status.auto_reauth:
        return "The brokerage session expired and auto re-auth is off: log in again from the menu"
    return (
        "The brokerage session expired and no credentials are stored: log in again from the menu "
        "(tick 'remember' to let ftdesk do it next time)"
    )


class ServiceBridge(QObject):
    """Holds the service runtime and speaks Qt for it (see the module docstring)."""

    status_changed = Signal(object)  # AppStatus
    notify = Signal(str, str)  # title, message
    show_window_requested = Signal()

    def __init__(
        self,
        settings: Settings,
        make_runtime: RuntimeFactory,
        reload_settings: Callable[[], Settings],
        *,
        poll_interval_ms: int = POLL_INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings
        self._make_runtime = make_runtime
        self._reload_settings = reload_settings
        self._window = DesktopWindow(show=self.request_show_window)
        self._runtime: ServiceRuntimeHandle | None = None
        self._running = False
        self._restart_lock = asyncio.Lock()
        self._status: AppStatus | None = None
        self._refresh_scheduled = False
        self._event_reader: asyncio.Task[None] | None = None
        self._event_consumer_id: str | None = None
        self._streams_lost: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._poll = QTimer(self)
        self._poll.setInterval(poll_interval_ms)
        self._poll.timeout.connect(self.refresh)

    # --- lifecycle --------------------------------------------------------------------------------

    @property
    def runtime(self) -> ServiceRuntimeHandle:
        """Return the running service; raise if the bridge has none."""
        if self._runtime is None:
            raise RuntimeError("the service is not running")
        return self._runtime

    @property
    def settings(self) -> Settings:
        """Return the settings the service runs with (or last ran with)."""
        return self._settings

    @property
    def status(self) -> AppStatus:
        """Return the last status (computing it if none was emitted yet)."""
        return self._status or self._compute_status()

    async def start(self) -> None:
        """Build and start the service; raise what ``start`` raises (e.g. ``PortInUseError``)."""
        runtime = self._make_runtime(self._settings, self._window)
        await runtime.start()
        self._bind(runtime)
        self._poll.start()

    async def stop(self) -> None:
        """Stop the service and every task of the bridge; idempotent."""
        self._poll.stop()
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        runtime = self._unbind()
        if runtime is not None:
            await runtime.stop()

    def _bind(self, runtime: ServiceRuntimeHandle) -> None:
        self._runtime = runtime
        self._settings = runtime.settings
        self._running = True
        if runtime.session is not None:
            session = runtime.session
            session.add_listener(lambda _state: self._schedule_refresh(runtime))
        if runtime.events is not None:
            self._event_reader = self.spawn(self._read_account_events(runtime.events))
        self.refresh()

    def _unbind(self) -> ServiceRuntimeHandle | None:
        runtime, self._runtime = self._runtime, None
        self._running = False
        reader, self._event_reader = self._event_reader, None
        if reader is not None:
            reader.cancel()
        return runtime

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a coroutine as a task the bridge owns: its failure is logged and shown, never lost."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        log.error("A desktop action failed", exc_info=exc)
        message = exc.message if isinstance(exc, FtdeskError) else f"{type(exc).__name__}: see the log for details"
        self.notify.emit("ftdesk: an action failed", message)

    # --- status -------------------------------------------------------------------------------------

    def _schedule_refresh(self, runtime: ServiceRuntimeHandle) -> None:
        # Session listeners run inside the session's own state change; look once the change is complete.
        if runtime is self._runtime and not self._refresh_scheduled:
            self._refresh_scheduled = True
            asyncio.get_running_loop().call_soon(self.refresh)

    def refresh(self) -> None:
        """Recompute the status; emit it (and any notification it implies) when something changed."""
        self._refresh_scheduled = False
        status = self._compute_status()
        previous, self._status = self._status, status
        if status == previous:
            return
        if previous is not None:
            self._notify_changes(previous, status)
        self.status_changed.emit(status)

    def _compute_status(self) -> AppStatus:
        runtime = self._runtime
        settings = self._settings
        url = runtime.url if runtime is not None else settings.base_url
        if runtime is None or runtime.session is None:
            return AppStatus(
                running=False,
                session=SessionState.LOGGED_OUT,
                username=None,
                broker=settings.broker,
                live=runtime.live.enabled if runtime is not None else False,
                api_url=f"{url}/api/v1",
                docs_url=f"{url}/docs",
                quotes=HubState.DISABLED,
                events=HubState.DISABLED,
                clients={},
                last_error=None,
                reauth_count=0,
                auto_reauth=settings.auto_reauth,
                credentials_stored=False,
            )
        session = runtime.session.status()
        clients: dict[str, int] = {}
        last_error = session.last_error
        quotes_state = events_state = HubState.DISABLED
        events_why_not: str | None = None
        if runtime.quotes is not None:
            quotes = runtime.quotes.status()
            quotes_state = quotes.state
            clients["sse"] = quotes.consumers_by_kind.get("sse", 0)
            clients["ws"] = quotes.consumers_by_kind.get("ws", 0)
            if quotes_state is HubState.RECONNECTING and quotes.last_error:
                last_error = quotes.last_error
        if runtime.events is not None:
            events = runtime.events.status()
            events_state = events.state
            events_why_not = events.why_not
            clients["events"] = sum(1 for c in events.consumers if c.id != self._event_consumer_id)
            if events_state is HubState.RECONNECTING and events.last_error:
                last_error = events.last_error
        return AppStatus(
            running=self._running,
            session=session.state,
            username=session.username,
            broker=session.broker,
            live=runtime.live.enabled,
            api_url=f"{url}/api/v1",
            docs_url=f"{url}/docs",
            quotes=quotes_state,
            events=events_state,
            clients=clients,
            last_error=last_error,
            reauth_count=session.reauth_count,
            auto_reauth=session.auto_reauth,
            credentials_stored=session.credentials_stored,
            events_why_not=events_why_not,
        )

    def _notify_changes(self, previous: AppStatus, status: AppStatus) -> None:
        if previous.session is SessionState.LOGGED_IN and status.session is SessionState.EXPIRED:
            self.notify.emit("Session expired", expiry_message(status))
        if status.reauth_count > previous.reauth_count and status.session is SessionState.LOGGED_IN:
            self.notify.emit(
                "Re-authenticated", "The brokerage session had expired; ftdesk logged in again with stored credentials"
            )
        for name, title in STREAM_NAMES.items():
            before, now = getattr(previous, name), getattr(status, name)
            if before is HubState.CONNECTED and now is HubState.RECONNECTING:
                self._streams_lost.add(name)
                self.notify.emit(f"{title} lost", f"{status.last_error or 'The connection dropped'}; reconnecting")
            elif now is HubState.CONNECTED and name in self._streams_lost:
                self._streams_lost.discard(name)
                self.notify.emit(f"{title} back", "The upstream connection is open again")
            elif now in (HubState.WAITING_FOR_SESSION, HubState.IDLE, HubState.DISABLED):
                self._streams_lost.discard(name)  # logged out or idle: nothing to come back

    # --- account events -----------------------------------------------------------------------------

    async def _read_account_events(self, hub: AccountEventHub) -> None:
        """Turn fills on the account-event stream into notifications, for as long as this runtime runs."""
        last_id: int | None = None
        while True:
            try:
                consumer, _replay = hub.open_consumer(last_id)
            except StreamingUnavailable:
                return  # not configured (e.g. Fidelity without BEPS) or shut down: no fill notifications
            self._event_consumer_id = consumer.id
            try:
                while True:
                    for item in await consumer.get():
                        last_id = item.id
                        if item.event.event_type == EventType.EXECUTION.value:
                            self.notify.emit(*fill_message(item.event))
            except ConsumerClosed:
                continue  # overflow closes a reader: resume after the last event seen (hub closed: open fails)
            finally:
                consumer.close()
                if self._event_consumer_id == consumer.id:
                    self._event_consumer_id = None

    # --- login (LoginSubmit) ------------------------------------------------------------------------

    async def submit_login(self, request: LoginRequest) -> LoginOutcome:
        """Log in with what the dialog collected; store the credentials when asked."""
        runtime = self.runtime
        session, context = runtime.session, runtime.context
        if session is None or context is None:
            return LoginOutcome(LoginResult.FAILED, "The service is not running")
        credentials = Credentials(
            username=request.username, password=SecretStr(request.password), totp_code=request.totp_code or None
        )
        try:
            await session.login(credentials)
        except TotpRequired as exc:
            return LoginOutcome(LoginResult.TOTP_REQUIRED, exc.message)
        except FtdeskError as exc:  # LoginFailed, BrokerError, ...: the message is for the trader
            return LoginOutcome(LoginResult.FAILED, exc.message)
        except Exception as exc:
            log.exception("Login failed unexpectedly")
            return LoginOutcome(LoginResult.FAILED, f"Login failed: {type(exc).__name__} (see the log)")
        if not request.remember:
            return LoginOutcome(LoginResult.OK)
        # A one-time code is useless later: only the username and password are kept.
        stored = Credentials(username=request.username, password=SecretStr(request.password))
        try:
            await asyncio.to_thread(context.credentials.save, stored)
            await session.refresh_credentials_flag()
        except FtdeskError as exc:  # e.g. no keychain and no FTSERVICE_ENCRYPTION_KEY
            self.notify.emit("Credentials not stored", exc.message)
            return LoginOutcome(LoginResult.OK, f"Logged in, but the credentials were not stored: {exc.message}")
        except OSError as exc:
            self.notify.emit("Credentials not stored", f"Could not write them: {exc.strerror}")
            return LoginOutcome(LoginResult.OK, f"Logged in, but the credentials were not stored: {exc.strerror}")
        return LoginOutcome(LoginResult.OK)

    async def logout(self) -> None:
        """End the brokerage session."""
        session = self.runtime.session
        if session is not None:
            await session.logout()
        self.refresh()

    # --- live trading --------------------------------------------------------------------------------

    def set_live_trading(self, enabled: bool) -> None:
        """Switch live trading on or off for this run (the settings file keeps the start value)."""
        runtime = self.runtime
        if runtime.live.enabled != enabled:
            runtime.live.enabled = enabled
            log.warning("Live trading switched %s from the desktop app", "ON" if enabled else "off")
        self.refresh()

    # --- settings (SettingsActions) ------------------------------------------------------------------

    async def current_settings(self) -> Settings:
        """Return the settings as the file and the environment hold them now (read off the loop)."""
        return await asyncio.to_thread(self._reload_settings)

    async def save_settings(self, changes: Mapping[str, Any]) -> SaveOutcome:
        """Validate, write the settings file (off the loop) and apply what can change live."""
        runtime = self.runtime
        running = runtime.settings
        errors: dict[str, str] = {}
        values: dict[str, Any] = {}
        for name, raw in changes.items():
            spec = SETTINGS_BY_NAME.get(name)
            if spec is None:
                errors[name] = f"{name!r} is not a setting"
            elif not spec.file_allowed:
                errors[name] = f"{name} can only be set with the environment variable {spec.env}"
            elif running.locked_by_env(name):
                errors[name] = f"fixed by the environment variable {spec.env}"
            elif raw is None:
                values[name] = None
            else:
                try:
                    values[name] = validate_setting(name, raw)
                except ConfigError as exc:
                    errors[name] = str(exc)
        if errors:
            return SaveOutcome(errors=errors)
        try:
            await asyncio.to_thread(save_settings_file, running.data_dir, values)
        except (OSError, ConfigError) as exc:
            reason = f"the settings file could not be written: {exc}"
            return SaveOutcome(errors=dict.fromkeys(values, reason))
        applied: list[str] = []
        needs_restart: list[str] = []
        live_values: dict[str, Any] = {}
        for name, value in values.items():
            spec = SETTINGS_BY_NAME[name]
            effective = spec.default if value is None else value
            if effective == getattr(running, name):
                continue
            if spec.restart_required:
                needs_restart.append(name)
            else:
                live_values[name] = effective
                applied.append(name)
        if live_values:
            self._apply_live(runtime, live_values)
        return SaveOutcome(applied=applied, needs_restart=needs_restart)

    def _apply_live(self, runtime: ServiceRuntimeHandle, values: Mapping[str, Any]) -> None:
        settings = dataclasses.replace(runtime.settings, **values)
        runtime.settings = settings
        self._settings = settings
        if runtime.context is not None:
            runtime.context.settings = settings  # handlers read preview_ttl from here on every place
        if "live_trading" in values:
            runtime.live.enabled = bool(values["live_trading"])
        if "auto_reauth" in values and runtime.session is not None:
            runtime.session.auto_reauth = bool(values["auto_reauth"])
        log.info("Settings applied without a restart: %s", ", ".join(sorted(values)))
        self.refresh()

    async def regenerate_api_key(self) -> None:
        """Replace the API key and restart the server so only the new key opens it."""
        try:
            await self.runtime.regenerate_api_key()
        except RuntimeError as exc:  # FTSERVICE_API_KEY fixes the key
            raise ConfigError(str(exc)) from None
        await self.restart_service()
        self.notify.emit("New API key", "Scripts need the new key: copy it from the menu")

    async def restart_service(self) -> None:
        """Stop the service, reload the settings and start it again; keep the old settings if the new fail."""
        async with self._restart_lock:
            old = self._unbind()
            if old is None:
                raise RuntimeError("the service is not running")
            live = old.live.enabled
            had_session = old.session is not None and old.session.state is not SessionState.LOGGED_OUT
            self.refresh()
            await old.stop()
            try:
                settings = await asyncio.to_thread(self._reload_settings)
                runtime = self._make_runtime(settings, self._window)
                await runtime.start()
            except Exception as exc:
                log.exception("Restart with the new settings failed; starting with the previous ones")
                self.notify.emit(
                    "Restart failed", f"{exc}. ftdesk runs with the previous settings: correct the saved ones"
                )
                runtime = self._make_runtime(old.settings, self._window)
                await runtime.start()
            # A restart never changes the trading mode, in either direction, behind the trader's back.
            runtime.live.enabled = live
            self._bind(runtime)
            if had_session and runtime.session is not None and runtime.session.state is SessionState.LOGGED_OUT:
                await runtime.session.login_with_stored_credentials()
            self.refresh()
            log.info("Service restarted at %s", runtime.url)

    # --- menu actions --------------------------------------------------------------------------------

    def copy_api_key(self) -> None:
        """Put the API key on the clipboard (it is never shown or logged)."""
        context = self.runtime.context
        if context is None:
            return
        QGuiApplication.clipboard().setText(context.api_key)
        self.notify.emit("API key copied", "Paste it into your script's Authorization: Bearer header")

    def copy_with_api_key(self, template: str, placeholder: str, what: str) -> None:
        """Put a text on the clipboard with the API key in place of the placeholder (the key is never shown)."""
        context = self.runtime.context
        if context is None:
            return
        QGuiApplication.clipboard().setText(template.replace(placeholder, context.api_key))
        self.notify.emit(f"{what} copied", "Paste and run it; it holds your API key, so keep it to yourself")

    def open_docs(self) -> None:
        """Open the API documentation page in the browser."""
        url = self.status.docs_url
        if not QDesktopServices.openUrl(QUrl(url)):
            self.notify.emit("Could not open the browser", f"Open {url} yourself")

    @property
    def log_folder(self) -> Path:
        """Return the folder of the log files."""
        return log_dir(self._settings.data_dir)

    def open_log_folder(self) -> None:
        """Open the folder of the log files in the file manager."""
        folder = self.log_folder
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
            self.notify.emit("Could not open the log folder", str(folder))

    async def journal_entries(self, limit: int = JOURNAL_ROWS) -> list[JournalEntry]:
        """Return the newest order-journal entries (read off the loop)."""
        runtime = self._runtime
        if runtime is None or runtime.orders is None:
            return []
        return await runtime.orders.entries(limit=limit, start=None, end=None)

    def request_show_window(self) -> None:
        """Ask the app to bring its window to the front (called by the API hand-off; no widget work here)."""
        # Queued with the bridge as context: Qt drops the call if the bridge is gone by then.
        QTimer.singleShot(0, self, self.show_window_requested.emit)
