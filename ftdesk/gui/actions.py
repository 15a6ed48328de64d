"""What the trader can do from the tray menu and the status window, in one place both call.

Dialogs are shown without a nested event loop (``show()`` / ``open()`` plus signals; never ``exec()``),
and at most one of each kind is open: asking again brings the open one to the front.
"""

from __future__ import annotations

import logging
from typing import Generic, TypeVar

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog

from ftdesk.gui.bridge import ServiceBridge
from ftdesk.gui.desk_feed import DeskFeed
from ftdesk.gui.live_confirm import LiveTradingConfirmDialog
from ftdesk.gui.login_dialog import LoginDialog
from ftdesk.gui.resume_confirm import ResumeConfirmDialog
from ftdesk.gui.safety_watch import DESKTOP_SOURCE, SafetyWatch, halt_outcome_text, limit_lines
from ftdesk.gui.settings_dialog import SettingsDialog
from ftdesk.gui.welcome import WelcomeDialog
from ftdesk.service.control import LoginItem

log = logging.getLogger(__name__)

D = TypeVar("D", bound=QDialog)


def _to_front(dialog: QDialog) -> None:
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()


class _DialogSlot(Generic[D]):
    """The one open dialog of a kind; once closed, it is deleted on the GUI thread.

    A dialog without a parent belongs to its Python wrapper. If the last reference went away before Qt
    processed ``deleteLater``, a garbage collection started by an ``asyncio.to_thread`` worker could
    delete the widget on that thread. The slot keeps the wrapper until Qt has deleted the dialog.
    """

    def __init__(self) -> None:
        self.dialog: D | None = None
        self._closing: set[QDialog] = set()

    def to_front(self) -> bool:
        """Bring the open dialog to the front; return False when none is open."""
        if self.dialog is None:
            return False
        _to_front(self.dialog)
        return True

    def hold(self, dialog: D) -> D:
        """Make this the open dialog until it finishes."""
        self.dialog = dialog
        dialog.finished.connect(lambda _result: self._closed(dialog))
        return dialog

    def _closed(self, dialog: D) -> None:
        if self.dialog is dialog:
            self.dialog = None
        self._closing.add(dialog)
        dialog.destroyed.connect(lambda: self._closing.discard(dialog))
        dialog.deleteLater()


class UserActions(QObject):
    """The menu's actions; the tray and the status window both call these."""

    quit_requested = Signal()
    window_requested = Signal()

    def __init__(
        self,
        bridge: ServiceBridge,
        parent: QObject | None = None,
        *,
        login_item: LoginItem | None = None,
        feed: DeskFeed | None = None,
        safety: SafetyWatch | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._login_item = login_item
        self._feed = feed
        self._safety = safety
        self._resume: _DialogSlot[ResumeConfirmDialog] = _DialogSlot()
        self._login: _DialogSlot[LoginDialog] = _DialogSlot()
        self._settings: _DialogSlot[SettingsDialog] = _DialogSlot()
        self._live: _DialogSlot[LiveTradingConfirmDialog] = _DialogSlot()
        self._welcome: _DialogSlot[WelcomeDialog] = _DialogSlot()

    @property
    def login_dialog(self) -> LoginDialog | None:
        """Return the open login dialog, if any."""
        return self._login.dialog

    @property
    def settings_dialog(self) -> SettingsDialog | None:
        """Return the open settings dialog, if any."""
        return self._settings.dialog

    @property
    def live_dialog(self) -> LiveTradingConfirmDialog | None:
        """Return the open live-trading confirmation, if any."""
        return self._live.dialog

    @property
    def resume_dialog(self) -> ResumeConfirmDialog | None:
        """Return the open resume confirmation, if any."""
        return self._resume.dialog

    @property
    def welcome_dialog(self) -> WelcomeDialog | None:
        """Return the open welcome window, if any."""
        return self._welcome.dialog

    # --- session ------------------------------------------------------------------------------------

    def log_in(self) -> None:
        """Open the login dialog (or bring the open one to the front)."""
        if not self._login.to_front():
            status = self._bridge.status
            broker = "paper-fidelity" if status.paper_on_fidelity else status.broker
            _to_front(self._login.hold(LoginDialog(self._bridge.submit_login, broker=broker)))

    def log_out(self) -> None:
        """End the brokerage session."""
        self._bridge.spawn(self._bridge.logout())

    # --- live trading -------------------------------------------------------------------------------

    def set_live_trading(self, wanted: bool) -> None:
        """Switch live trading off at once; switching it on asks first, and only an explicit yes does it."""
        if not wanted:
            if self._live.dialog is not None:
                self._live.dialog.reject()
            self._bridge.set_live_trading(False)
            return
        if self._bridge.status.live or self._live.to_front():
            return
        if self._safety is not None and self._safety.halted:
            self._bridge.notify.emit("Trading is halted", "Resume trading first (menu: Resume trading…)")
            return
        accounts = [f"{a.name} {a.acct_num}" for a in self._feed.snapshot.accounts] if self._feed else []
        state = self._safety.state if self._safety is not None else None
        limits = limit_lines(state.limits) if state is not None else None
        status = self._bridge.status
        dialog = self._live.hold(
            LiveTradingConfirmDialog(status.broker, accounts=accounts, limits=limits, paper_market=status.paper_market)
        )
        dialog.accepted.connect(lambda: self._bridge.set_live_trading(True))
        dialog.open()

    # --- the kill switch ----------------------------------------------------------------------------

    def halt(self) -> None:
        """Halt trading at once, without a question (stopping is always safe): see ``ServiceControl.halt``."""
        if self._live.dialog is not None:
            self._live.dialog.reject()
        if self._resume.dialog is not None:
            self._resume.dialog.reject()
        self._bridge.spawn(self._halt())

    async def _halt(self) -> None:
        outcome = await self._bridge.control.halt(DESKTOP_SOURCE)
        if self._safety is not None:
            self._safety.refresh()
        self._bridge.refresh()
        self._bridge.notify.emit("Trading halted", halt_outcome_text(outcome))

    def resume(self) -> None:
        """Ask before lifting the halt; only an explicit yes lifts it (live trading stays off)."""
        if self._resume.to_front():
            return
        state = self._safety.state if self._safety is not None else None
        dialog = self._resume.hold(ResumeConfirmDialog(state.halt if state is not None else None))
        dialog.accepted.connect(lambda: self._bridge.spawn(self._resume_now()))
        dialog.open()

    async def _resume_now(self) -> None:
        if self._safety is not None:
            self._safety.resuming_here()
        await self._bridge.control.resume(DESKTOP_SOURCE)
        if self._safety is not None:
            self._safety.refresh()
        self._bridge.notify.emit("Trading resumed", "Previews work again; live trading is off until you switch it on")

    # --- settings -----------------------------------------------------------------------------------

    def open_settings(self) -> None:
        """Open the settings dialog on the settings as saved now (read off the loop)."""
        if not self._settings.to_front():
            self._bridge.spawn(self._open_settings())

    async def _open_settings(self) -> None:
        settings = await self._bridge.current_settings()
        if self._settings.dialog is None:  # not opened by a second click while the file was read
            _to_front(self._settings.hold(SettingsDialog(settings, self._bridge, login_item=self._login_item)))

    # --- getting started ----------------------------------------------------------------------------

    def show_welcome(self) -> None:
        """Open the welcome window (or bring it to the front) and remember, in the data dir, that it was shown."""
        if self._welcome.to_front():
            return
        locked = self._bridge.settings.locked_by_env("broker")
        welcome = self._welcome.hold(WelcomeDialog(self._bridge, broker_locked=locked))
        welcome.fidelity_requested.connect(self.use_fidelity)
        _to_front(welcome)
        self._bridge.spawn(self._record_welcome_shown())

    async def _record_welcome_shown(self) -> None:
        data_dir = self._bridge.settings.data_dir
        try:
            await self._bridge.control.record_welcome_shown()
        except OSError as exc:  # a read-only data dir must not stop the app; the welcome returns next time
            log.warning("Could not record that the welcome window was shown in %s: %s", data_dir, exc.strerror)

    def use_fidelity(self) -> None:
        """Switch the broker to Fidelity (saved setting, service restart), then open the login dialog."""
        welcome = self._welcome.dialog
        if welcome is not None:
            welcome.set_busy("Switching to Fidelity: saving the setting and restarting the service…")
        self._bridge.spawn(self._use_fidelity())

    async def _use_fidelity(self) -> None:
        error = await self._switch_to_fidelity()
        welcome = self._welcome.dialog  # the trader may have closed it meanwhile
        if error:
            if welcome is not None:
                welcome.show_error(error)
            else:
                self._bridge.notify.emit("Not switched to Fidelity", error)
            return
        if welcome is not None:
            welcome.accept()
        self.log_in()

    async def _switch_to_fidelity(self) -> str | None:
        """Make Fidelity the broker the service runs; return why not, or None once it does."""
        if self._bridge.status.broker == "fidelity":
            return None
        outcome = await self._bridge.save_settings({"broker": "fidelity"})
        if outcome.errors:
            return f"Could not switch to Fidelity: {outcome.errors.get('broker', 'the settings were refused')}"
        if self._bridge.status.live:
            # Live on paper moves play money; carried over (a restart keeps the mode) it would move real money.
            self._bridge.set_live_trading(False)
            self._bridge.notify.emit(
                "Live trading switched off",
                "Fidelity starts in dry-run: switch live trading on from the menu when you are ready",
            )
        if outcome.needs_restart:
            try:
                await self._bridge.restart_service()
            except Exception:
                log.exception("Restarting the service on Fidelity failed")
                return "Fidelity is saved as the broker, but the service could not restart; details are in the log"
        if self._bridge.status.broker != "fidelity":  # the restart fell back to the previous settings
            return "ftdesk could not start on Fidelity and carries on with paper; details are in the log"
        return None

    # --- the rest of the menu -----------------------------------------------------------------------

    def copy_api_key(self) -> None:
        """Copy the API key to the clipboard."""
        self._bridge.copy_api_key()

    def open_docs(self) -> None:
        """Open the API documentation in the browser."""
        self._bridge.open_docs()

    def open_log_folder(self) -> None:
        """Open the log folder in the file manager."""
        self._bridge.open_log_folder()

    def show_window(self) -> None:
        """Bring the status window to the front."""
        self.window_requested.emit()

    def quit(self) -> None:
        """Stop ftdesk (the same path as SIGINT and SIGTERM)."""
        self.quit_requested.emit()
