"""The tray app's lifecycle: one QApplication, one qasync loop, one way to stop.

``run_gui`` runs Qt and the aiohttp service on one qasync loop (``asyncio.Runner`` with a loop factory,
no global policy). Quit, SIGINT and SIGTERM all set one ``asyncio.Event``; the single shutdown path then
stops the service (streams closed, server stopped, broker closed) and returns 0. An unexpected exception
(a Qt slot, a callback, a task nobody awaited) is logged and shown as one notification instead of
ending the app.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from ftdesk.gui.actions import UserActions
from ftdesk.gui.approval_window import ApprovalWindows
from ftdesk.gui.bridge import POLL_INTERVAL_MS, ServiceBridge
from ftdesk.gui.desk_feed import PNL_REFRESH_MS, DeskFeed
from ftdesk.gui.event_loop import DesktopEventLoop
from ftdesk.gui.icons import IconSet
from ftdesk.gui.notifications import Notifier
from ftdesk.gui.safety_watch import SafetyWatch
from ftdesk.gui.status_window import StatusWindow
from ftdesk.gui.tray import TrayIcon
from ftdesk.service.control import ConfigError, DataDirDamaged, LoginItem, PortInUseError, ServiceControl

log = logging.getLogger(__name__)

ERROR_NOTICE_INTERVAL = 60.0
"""Seconds between two notifications about unexpected errors (each one is logged regardless)."""

StopSignalInstaller = Callable[[asyncio.AbstractEventLoop, asyncio.Event], None]


class UnexpectedErrors:
    """Log every unexpected exception and tell the trader once (per minute) instead of crashing."""

    def __init__(self, notifier: Notifier, scrub: Callable[[str], str], log_folder: str) -> None:
        self._notifier = notifier
        self._scrub = scrub
        self._log_folder = log_folder
        self._last_notice: float | None = None

    def excepthook(self, exc_type: type[BaseException], exc: BaseException, traceback: TracebackType | None) -> None:
        """Handle an exception nothing caught (PySide6 reports exceptions in slots here)."""
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, traceback)
            return
        log.critical("Unexpected error", exc_info=(exc_type, exc, traceback))
        self._notice(exc)

    def loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Handle an exception the event loop caught (a callback, a task nobody awaited)."""
        loop.default_exception_handler(context)
        exc = context.get("exception")
        if isinstance(exc, Exception) and not isinstance(exc, ConnectionError):
            self._notice(exc)

    def _notice(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self._last_notice is not None and now - self._last_notice < ERROR_NOTICE_INTERVAL:
            return
        self._last_notice = now
        text = self._scrub(f"{type(exc).__name__}: {exc}")[:200]
        self._notifier.show(
            "ftdesk hit an unexpected error", f"{text}. ftdesk keeps running; details are in {self._log_folder}"
        )


class DesktopApp:
    """The bridge, the notifier, the tray (where there is one) and the status window, with one stop event."""

    def __init__(
        self,
        control: ServiceControl,
        *,
        icons: IconSet | None = None,
        has_tray: bool | None = None,
        poll_interval_ms: int = POLL_INTERVAL_MS,
        pnl_refresh_ms: int = PNL_REFRESH_MS,
        login_item: LoginItem | None = None,
    ) -> None:
        self.stop_requested = asyncio.Event()
        self.icons = icons or IconSet()
        self.has_tray = QSystemTrayIcon.isSystemTrayAvailable() if has_tray is None else has_tray
        QApplication.setWindowIcon(self.icons.app_icon())  # the window and every dialog
        self.bridge = ServiceBridge(control, poll_interval_ms=poll_interval_ms)
        self.notifier = Notifier()
        self.bridge.notify.connect(self.notifier.show)
        self.feed = DeskFeed(self.bridge, pnl_refresh_ms=pnl_refresh_ms)
        self.safety = SafetyWatch(control)
        self.safety.notify.connect(self.notifier.show)
        self.approvals = ApprovalWindows(control)  # places held for the trader (ftdesk mcp, require_approval)
        self._detach_approvals = control.attach_approver(self.approvals)
        self.actions = UserActions(self.bridge, login_item=login_item, feed=self.feed, safety=self.safety)
        self.actions.quit_requested.connect(self.stop_requested.set)
        self.window = StatusWindow(
            self.bridge, self.actions, self.notifier, self.feed, self.safety, has_tray=self.has_tray
        )
        self.actions.window_requested.connect(self.window.bring_to_front)
        self.bridge.show_window_requested.connect(self.window.bring_to_front)
        self.tray = TrayIcon(self.bridge, self.actions, self.icons, self.feed, self.safety) if self.has_tray else None

    async def start(self) -> None:
        """Start the service, then show the tray icon, or the window where there is no tray; welcome a new trader."""
        # Before the service starts: starting it creates the order journal, one of the traces of an earlier run.
        first_start = await self.bridge.control.is_first_start()
        await self.bridge.start()
        self.feed.start()
        self.safety.start()
        if self.tray is not None:
            self.tray.show()
            self.notifier.attach_tray(self.tray.icon)
        else:
            self.window.bring_to_front()
        if first_start:
            self.actions.show_welcome()

    async def shutdown(self) -> None:
        """Close the windows and stop the service; the one shutdown path of Quit, SIGINT and SIGTERM."""
        log.info("Shutting down")
        self.notifier.attach_tray(None)
        dialogs = (
            self.actions.login_dialog,
            self.actions.settings_dialog,
            self.actions.live_dialog,
            self.actions.resume_dialog,
            self.actions.welcome_dialog,
        )
        for dialog in dialogs:
            if dialog is not None:
                dialog.reject()
        self._detach_approvals()
        self.approvals.close_all()
        if self.tray is not None:
            self.tray.hide()
        self.window.hide()
        self.window.stop()
        self.feed.stop()
        self.safety.stop()
        await self.bridge.stop()


async def serve_with_tray(
    control: ServiceControl,
    install_stop_signals: StopSignalInstaller,
    login_item: LoginItem | None = None,
) -> int:
    """Run the tray app until Quit, SIGINT or SIGTERM; return the exit code."""
    loop = asyncio.get_running_loop()
    desktop = DesktopApp(control, login_item=login_item)
    install_stop_signals(loop, desktop.stop_requested)
    errors = UnexpectedErrors(desktop.notifier, control.scrub, str(desktop.bridge.log_folder))
    previous_hook = sys.excepthook
    sys.excepthook = errors.excepthook
    loop.set_exception_handler(errors.loop_exception)
    try:
        try:
            await desktop.start()
        except PortInUseError as exc:
            print(f"ftdesk: {exc}", file=sys.stderr, flush=True)
            return 1
        except ConfigError as exc:
            print(f"ftdesk: configuration error: {exc}", file=sys.stderr, flush=True)
            return 2
        except DataDirDamaged as exc:  # one line, to stderr and the log file
            log.error("%s", exc)
            return 3
        status = desktop.bridge.status
        mode = "LIVE TRADING" if status.live else "dry-run"
        face = "tray icon" if desktop.has_tray else "status window (no system tray)"
        print(
            f"ftdesk {control.version} serving {status.api_url} (broker: {status.broker}, {mode}); "
            f"docs: {status.docs_url}; {face}",
            flush=True,
        )
        try:
            await desktop.stop_requested.wait()
        finally:
            await desktop.shutdown()
        return 0
    finally:
        sys.excepthook = previous_hook


def run_gui(
    control: ServiceControl,
    *,
    install_stop_signals: StopSignalInstaller,
    login_item: LoginItem | None = None,
) -> int:
    """Run the tray app and the service on one qasync loop until stopped; return the exit code."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("ftdesk")
    app.setApplicationDisplayName("ftdesk")
    app.setQuitOnLastWindowClosed(False)  # the tray app lives on with every window closed
    with asyncio.Runner(loop_factory=lambda: DesktopEventLoop(app)) as runner:
        return runner.run(serve_with_tray(control, install_stop_signals, login_item))
