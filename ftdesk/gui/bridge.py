"""The one place where service state becomes Qt signals and Qt actions become service calls.

``ServiceBridge`` talks to the service only through its ``ServiceControl`` (built by the composition
root) and re-emits everything the tray shows as one ``status_changed(AppStatus)`` signal: on every state
change the control reports (session, live trading, settings, start and stop) and on a 1 Hz poll for what
has none (the stream hubs, client counts). It implements what the dialogs ask for (``LoginSubmit``,
``SettingsActions``) and the menu actions, and it turns notable changes into ``notify(title, message)``:
session expired, re-authenticated, an upstream stream lost and back, and order fills from the account
events. Everything that can block (keychain, files) runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import SecretStr
from PySide6.QtCore import QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication

from ftdesk.domain.errors import FtdeskError, TotpRequired
from ftdesk.domain.event_names import FILL_NAMES, EventName
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.safety import TradingHalted
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.gui.contracts import LoginOutcome, LoginRequest, LoginResult
from ftdesk.service.control import HubState, JournalEntry, SaveOutcome, ServiceChange, ServiceControl, Settings

log = logging.getLogger(__name__)

POLL_INTERVAL_MS = 1000
"""How often the bridge looks at what has no listener (stream hubs, connected clients)."""
JOURNAL_ROWS = 10
"""Journal entries the status window shows."""


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
    problems: tuple[str, ...] = ()  # damaged files moved aside, a full disk, a halt that could not be saved
    paper_market: str = "simulated"  # the paper broker's market: "simulated" or "fidelity" (no real order possible)

    @property
    def paper_on_fidelity(self) -> bool:
        """Return True for paper trading on Fidelity's market: a Fidelity login, paper money, no real order."""
        return self.broker == "paper" and self.paper_market == "fidelity"

    @property
    def client_count(self) -> int:
        """Return the number of open client streams."""
        return sum(self.clients.values())

    @property
    def upstream_error(self) -> bool:
        """Say whether a brokerage stream is down while it should be up."""
        return self.session is SessionState.LOGGED_IN and HubState.RECONNECTING in (self.quotes, self.events)


STREAM_NAMES = MappingProxyType({"quotes": "Market-data stream", "events": "Account-event stream"})


def fill_message(event: AccountEvent) -> tuple[str, str]:
    """Return the notification title and text of a fill event."""
    desc = event.desc
    partial = event.event_type is EventName.ORDER_PARTIAL_FILL
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
    """Speaks Qt for the service's control surface (see the module docstring)."""

    status_changed = Signal(object)  # AppStatus
    notify = Signal(str, str)  # title, message
    show_window_requested = Signal()

    def __init__(
        self,
        control: ServiceControl,
        *,
        poll_interval_ms: int = POLL_INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._control = control
        control.show_window_with(self.request_show_window)
        self._subscriptions: list[Callable[[], None]] = []
        self._status: AppStatus | None = None
        self._refresh_scheduled = False
        self._streams_lost: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._poll = QTimer(self)
        self._poll.setInterval(poll_interval_ms)
        self._poll.timeout.connect(self.refresh)

    # --- lifecycle --------------------------------------------------------------------------------

    @property
    def control(self) -> ServiceControl:
        """Return the service's control surface."""
        return self._control

    @property
    def settings(self) -> Settings:
        """Return the settings the service runs with (or last ran with)."""
        return self._control.settings

    @property
    def status(self) -> AppStatus:
        """Return the last status (computing it if none was emitted yet)."""
        return self._status or self._compute_status()

    async def start(self) -> None:
        """Start the service; raise what its start raises (e.g. ``PortInUseError``)."""
        if not self._subscriptions:
            self._subscriptions = [
                self._control.subscribe(self._on_change),
                self._control.subscribe_account_events(self._on_account_event),
            ]
        await self._control.start()
        self._poll.start()
        self.refresh()

    async def stop(self) -> None:
        """Stop the service and every task of the bridge; idempotent."""
        self._poll.stop()
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        subscriptions, self._subscriptions = self._subscriptions, []
        for unsubscribe in subscriptions:
            unsubscribe()
        await self._control.stop()

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

    def _on_change(self, _change: ServiceChange) -> None:
        # Listeners run inside the change (a session's own state change); look once the change is complete.
        if not self._refresh_scheduled:
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
        service = self._control.status()
        streams = service.streams
        last_error = service.last_error
        if streams.quotes is HubState.RECONNECTING and streams.quotes_error:
            last_error = streams.quotes_error
        if streams.events is HubState.RECONNECTING and streams.events_error:
            last_error = streams.events_error
        return AppStatus(
            running=service.running,
            session=service.session,
            username=service.username,
            broker=service.broker,
            live=service.live,
            api_url=f"{service.url}/api/v1",
            docs_url=f"{service.url}/docs",
            quotes=streams.quotes,
            events=streams.events,
            clients=dict(streams.clients),
            last_error=last_error,
            reauth_count=service.reauth_count,
            auto_reauth=service.auto_reauth,
            credentials_stored=service.credentials_stored,
            events_why_not=streams.events_why_not,
            problems=service.problems,
            paper_market=service.paper_market,
        )

    def _notify_changes(self, previous: AppStatus, status: AppStatus) -> None:
        for problem in status.problems:
            if problem not in previous.problems:
                self.notify.emit("ftdesk needs your attention", problem)
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

    def _on_account_event(self, event: AccountEvent) -> None:
        if event.event_type in FILL_NAMES:
            self.notify.emit(*fill_message(event))

    # --- login (LoginSubmit) ------------------------------------------------------------------------

    async def submit_login(self, request: LoginRequest) -> LoginOutcome:
        """Log in with what the dialog collected; store the credentials when asked."""
        credentials = Credentials(
            username=request.username, password=SecretStr(request.password), totp_code=request.totp_code or None
        )
        try:
            await self._control.log_in(credentials)
        except TotpRequired as exc:
            return LoginOutcome(LoginResult.TOTP_REQUIRED, exc.message)
        except FtdeskError as exc:  # LoginFailed, BrokerError, ServiceNotRunning...: the message is for the trader
            return LoginOutcome(LoginResult.FAILED, exc.message)
        except Exception as exc:
            log.exception("Login failed unexpectedly")
            return LoginOutcome(LoginResult.FAILED, f"Login failed: {type(exc).__name__} (see the log)")
        if not request.remember:
            return LoginOutcome(LoginResult.OK)
        # A one-time code is useless later: only the username and password are kept.
        stored = Credentials(username=request.username, password=SecretStr(request.password))
        try:
            await self._control.store_credentials(stored)
        except FtdeskError as exc:  # e.g. no keychain and no FTSERVICE_ENCRYPTION_KEY
            self.notify.emit("Credentials not stored", exc.message)
            return LoginOutcome(LoginResult.OK, f"Logged in, but the credentials were not stored: {exc.message}")
        except OSError as exc:
            self.notify.emit("Credentials not stored", f"Could not write them: {exc.strerror}")
            return LoginOutcome(LoginResult.OK, f"Logged in, but the credentials were not stored: {exc.strerror}")
        return LoginOutcome(LoginResult.OK)

    async def logout(self) -> None:
        """End the brokerage session."""
        await self._control.log_out()
        self.refresh()

    # --- live trading --------------------------------------------------------------------------------

    def set_live_trading(self, enabled: bool) -> None:
        """Switch live trading on or off for this run (the settings file keeps the start value)."""
        try:
            self._control.set_live_trading(enabled, source="from the desktop app")
        except TradingHalted:  # halted (from a script, say) while the confirmation was open
            self.notify.emit("Trading is halted", "Live trading stays off: resume trading first (Resume trading…)")
        self.refresh()

    # --- settings (SettingsActions) ------------------------------------------------------------------

    async def current_settings(self) -> Settings:
        """Return the settings as the file and the environment hold them now (read off the loop)."""
        return await self._control.saved_settings()

    async def save_settings(self, changes: Mapping[str, Any]) -> SaveOutcome:
        """Validate, write the settings file (off the loop) and apply what can change live."""
        outcome = await self._control.save_settings(changes)
        if outcome.applied:
            self.refresh()
        return outcome

    async def regenerate_api_key(self) -> None:
        """Replace the API key and restart the server so only the new key opens it."""
        self._restarted(await self._control.regenerate_api_key())
        self.notify.emit("New API key", "Scripts need the new key: copy it from the menu")

    async def restart_service(self) -> None:
        """Stop the service, reload the settings and start it again; keep the old settings if the new fail."""
        self._restarted(await self._control.restart())

    def _restarted(self, failure: str | None) -> None:
        if failure is not None:
            self.notify.emit(
                "Restart failed", f"{failure}. ftdesk runs with the previous settings: correct the saved ones"
            )
        self.refresh()

    # --- menu actions --------------------------------------------------------------------------------

    def copy_api_key(self) -> None:
        """Put the API key on the clipboard (it is never shown or logged)."""
        QGuiApplication.clipboard().setText(self._control.api_key)
        self.notify.emit("API key copied", "Paste it into your script's Authorization: Bearer header")

    def copy_with_api_key(self, template: str, placeholder: str, what: str) -> None:
        """Put a text on the clipboard with the API key in place of the placeholder (the key is never shown)."""
        QGuiApplication.clipboard().setText(template.replace(placeholder, self._control.api_key))
        self.notify.emit(f"{what} copied", "Paste and run it; it holds your API key, so keep it to yourself")

    def open_docs(self) -> None:
        """Open the API documentation page in the browser."""
        url = self.status.docs_url
        if not QDesktopServices.openUrl(QUrl(url)):
            self.notify.emit("Could not open the browser", f"Open {url} yourself")

    @property
    def log_folder(self) -> Path:
        """Return the folder of the log files."""
        return self._control.log_folder

    def open_log_folder(self) -> None:
        """Open the folder of the log files in the file manager."""
        folder = self.log_folder
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
            self.notify.emit("Could not open the log folder", str(folder))

    async def journal_entries(self, limit: int = JOURNAL_ROWS) -> list[JournalEntry]:
        """Return the newest order-journal entries (read off the loop)."""
        return await self._control.journal_entries(limit)

    def request_show_window(self) -> None:
        """Ask the app to bring its window to the front (called by the API hand-off; no widget work here)."""
        # Queued with the bridge as context: Qt drops the call if the bridge is gone by then.
        QTimer.singleShot(0, self, self.show_window_requested.emit)
