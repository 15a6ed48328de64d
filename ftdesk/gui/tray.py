"""The tray icon and its menu: the look tells the state at a glance; the menu holds status lines and actions.

Menu: while halted a first line TRADING HALTED since ... by ...; status lines (session, broker, mode,
streaming, clients; disabled items), Log in... / Log out, Live trading (checkable; switching on asks first),
Halt trading (at once, no question: cancels every open order, live off, previews and places refused) or, while
halted, Resume trading... (asks first), Settings..., Status window..., Copy API key, Open API docs, Open log
folder, Getting started... (the welcome window), Quit. The tooltip carries the day's P&L and says when trading
is halted; the icon has a look of its own while halted.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from ftdesk.domain.session import SessionState
from ftdesk.gui.actions import UserActions
from ftdesk.gui.bridge import AppStatus, ServiceBridge
from ftdesk.gui.cockpit_rows import DeskSnapshot, day_pnl_line
from ftdesk.gui.desk_feed import DeskFeed
from ftdesk.gui.icons import IconSet, TrayLook
from ftdesk.gui.safety_watch import SafetyWatch
from ftdesk.gui.status_text import halt_line, status_lines, tooltip, tray_look


class TrayIcon(QObject):
    """The system-tray icon, its tooltip and its menu, kept in step with the bridge's status."""

    def __init__(
        self,
        bridge: ServiceBridge,
        actions: UserActions,
        icons: IconSet,
        feed: DeskFeed | None = None,
        safety: SafetyWatch | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._pnl_line: str | None = None
        self._safety = safety
        self._actions = actions
        self._icons = icons
        self.look = TrayLook.LOGGED_OUT
        self.icon = QSystemTrayIcon(icons.tray_icon(self.look), self)
        self.menu = QMenu()
        # First, and only while halted: bold and not greyed out like the other status lines, so it cannot be missed;
        # it opens the status window, where the halt is explained and can be lifted.
        self.halt_line_action = self._action("", actions.show_window)
        bold = QFont(self.halt_line_action.font())
        bold.setBold(True)
        self.halt_line_action.setFont(bold)
        self.status_actions = [self._status_line() for _ in range(5)]
        self.menu.addSeparator()
        self.login_action = self._action("Log in…", actions.log_in)
        self.logout_action = self._action("Log out", actions.log_out)
        self.live_action = QAction("Live trading", self.menu)
        self.live_action.setCheckable(True)
        self.live_action.triggered.connect(self._live_clicked)
        self.menu.addAction(self.live_action)
        self.halt_action = self._action("Halt trading", actions.halt)
        self.halt_action.setToolTip("Cancel every open order, switch live trading off and refuse new orders")
        self.resume_action = self._action("Resume trading…", actions.resume)
        self.menu.addSeparator()
        self.settings_action = self._action("Settings…", actions.open_settings)
        self.window_action = self._action("Status window…", actions.show_window)
        self.copy_key_action = self._action("Copy API key", actions.copy_api_key)
        self.docs_action = self._action("Open API docs", actions.open_docs)
        self.logs_action = self._action("Open log folder", actions.open_log_folder)
        self.welcome_action = self._action("Getting started…", actions.show_welcome)
        self.menu.addSeparator()
        self.quit_action = self._action("Quit", actions.quit)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        bridge.status_changed.connect(self.show_status)
        if feed is not None:
            feed.changed.connect(self._show_pnl)
        if safety is not None:
            safety.changed.connect(self._safety_changed)
        self.show_status(bridge.status)

    def _status_line(self) -> QAction:
        action = self.menu.addAction("")
        action.setEnabled(False)
        return action

    def _action(self, text: str, slot: Callable[[], None]) -> QAction:
        action = self.menu.addAction(text)
        action.triggered.connect(slot)
        return action

    def show(self) -> None:
        """Put the icon in the tray."""
        self.icon.show()

    def hide(self) -> None:
        """Take the icon out of the tray."""
        self.icon.hide()

    def show_status(self, status: AppStatus) -> None:
        """Make the icon, tooltip and menu say what the status says."""
        halt = self._safety.state.halt if self._safety is not None and self._safety.state is not None else None
        self.look = tray_look(status, halt)
        line = halt_line(halt) if status.running else None
        self.halt_line_action.setText(line or "")
        self.halt_line_action.setVisible(line is not None)
        self.icon.setIcon(self._icons.tray_icon(self.look))
        self.icon.setToolTip(self._tooltip(status))
        for action, line in zip(self.status_actions, status_lines(status).as_list(), strict=True):
            action.setText(line)
        self.login_action.setVisible(status.session is not SessionState.LOGGED_IN)
        self.logout_action.setVisible(status.session is not SessionState.LOGGED_OUT)
        for action in (
            self.login_action,
            self.logout_action,
            self.live_action,
            self.copy_key_action,
            self.welcome_action,
        ):
            action.setEnabled(status.running)
        self.live_action.setChecked(status.live)
        self.halt_action.setVisible(not self._halted)
        self.resume_action.setVisible(self._halted)
        self.halt_action.setEnabled(status.running)
        self.resume_action.setEnabled(status.running)

    def _safety_changed(self, _state: object) -> None:
        self.show_status(self._bridge.status)

    def _show_pnl(self, snapshot: DeskSnapshot) -> None:
        line = day_pnl_line(snapshot)
        if line != self._pnl_line:
            self._pnl_line = line
            self.icon.setToolTip(self._tooltip(self._bridge.status))

    def _tooltip(self, status: AppStatus) -> str:
        text = tooltip(status, self._pnl_line)
        return f"TRADING HALTED\n{text}" if self._halted else text

    @property
    def _halted(self) -> bool:
        return self._safety is not None and self._safety.halted

    def _live_clicked(self, checked: bool) -> None:
        self._actions.set_live_trading(checked)
        # The check follows the switch, not the click: it stays off until the confirmation says yes.
        self.live_action.setChecked(self._bridge.status.live)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A left click opens the window; the context menu already opens on a right click.
        if reason is QSystemTrayIcon.ActivationReason.Trigger:
            self._actions.show_window()
