"""The status window: ftdesk's face where the platform has no tray, and reachable from the tray menu.

It shows what the menu shows (status lines, the API URL) with the same actions as buttons, the trader's
cockpit (positions and P&L per account, open orders with Cancel and Cancel all, today's fills, stream
health; ``cockpit.py``), the newest order-journal entries (read off the loop) and the notifications.
Closing it only hides it: Quit stops ftdesk, and launching ftdesk again brings the window back. The
cockpit polls the P&L only while the window is visible.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent, QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QPushButton,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ftdesk.domain.session import SessionState
from ftdesk.gui.actions import UserActions
from ftdesk.gui.bridge import AppStatus, ServiceBridge
from ftdesk.gui.cockpit import CockpitPanel
from ftdesk.gui.cockpit_rows import DeskSnapshot
from ftdesk.gui.desk_feed import DeskFeed
from ftdesk.gui.journal_rows import JOURNAL_COLUMNS, journal_row
from ftdesk.gui.notifications import Notification, Notifier
from ftdesk.gui.safety_watch import SafetyWatch, halt_text
from ftdesk.gui.status_text import halt_line, status_lines

JOURNAL_REFRESH_MS = 5000
"""How often the journal table is re-read while the window is visible (order events also re-read it)."""
NO_TRAY_NOTE = (
    "This desktop has no system tray, so this window is ftdesk's face. Closing it keeps ftdesk running "
    "(start ftdesk again to bring it back); Quit stops it."
)
TRAY_NOTE = "Closing this window keeps ftdesk running in the tray."
HALT_HINT = "Cancels every open order on every account, switches live trading off and refuses new orders."
HALT_STYLE = "QPushButton { background: #b3261e; color: white; font-weight: bold; padding: 6px 18px; }"
BANNER_STYLE = "QLabel { background: #b3261e; color: white; font-weight: bold; padding: 6px; }"
HALT_LINE_STYLE = "QLabel { color: #8e24aa; font-weight: bold; }"  # the halted tray icon's purple


class StatusWindow(QWidget):
    """Status lines, actions, the cockpit, the journal and the notifications (see the module docstring)."""

    def __init__(
        self,
        bridge: ServiceBridge,
        actions: UserActions,
        notifier: Notifier,
        feed: DeskFeed,
        safety: SafetyWatch | None = None,
        *,
        has_tray: bool,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._actions = actions
        self._feed = feed
        self._safety = safety
        self.setWindowTitle("ftdesk")
        self.setMinimumWidth(640)
        self.resize(980, 860)
        self._journal_loading = False
        self._orders_seen: object = None

        self.halt_line_label = QLabel()  # first, and only while halted
        self.halt_line_label.setObjectName("halt_line")
        self.halt_line_label.setStyleSheet(HALT_LINE_STYLE)
        self.line_labels = [QLabel() for _ in range(5)]
        self.api_label = QLabel()
        self.api_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        status_box = QGroupBox("Status")
        status_layout = QVBoxLayout(status_box)
        for label in [self.halt_line_label, *self.line_labels, self.api_label]:
            status_layout.addWidget(label)

        self.login_button = self._button("Log in…", actions.log_in)
        self.logout_button = self._button("Log out", actions.log_out)
        self.live_check = QCheckBox("Live trading")
        self.live_check.clicked.connect(self._live_clicked)
        self.settings_button = self._button("Settings…", actions.open_settings)
        self.copy_key_button = self._button("Copy API key", actions.copy_api_key)
        self.docs_button = self._button("Open API docs", actions.open_docs)
        self.logs_button = self._button("Open log folder", actions.open_log_folder)
        self.quit_button = self._button("Quit", actions.quit)
        buttons = QGridLayout()
        row_one = [self.login_button, self.logout_button, self.live_check, self.settings_button]
        row_two = [self.copy_key_button, self.docs_button, self.logs_button, self.quit_button]
        for column, widget in enumerate(row_one):
            buttons.addWidget(widget, 0, column)
        for column, widget in enumerate(row_two):
            buttons.addWidget(widget, 1, column)

        self.halt_button = QPushButton("Halt trading")
        self.halt_button.setObjectName("halt_button")
        self.halt_button.setStyleSheet(HALT_STYLE)
        self.halt_button.setToolTip(HALT_HINT)
        self.halt_button.clicked.connect(actions.halt)
        self.halt_hint = QLabel(HALT_HINT)
        self.halt_hint.setWordWrap(True)
        self.halt_banner = QLabel()
        self.halt_banner.setObjectName("halt_banner")
        self.halt_banner.setStyleSheet(BANNER_STYLE)
        self.halt_banner.setWordWrap(True)
        self.resume_button = self._button("Resume trading…", actions.resume)
        halt_bar = QHBoxLayout()
        halt_bar.addWidget(self.halt_button)
        halt_bar.addWidget(self.halt_hint, 1)
        halt_bar.addWidget(self.halt_banner, 1)
        halt_bar.addWidget(self.resume_button)

        self.cockpit = CockpitPanel(feed)

        self.journal = QTableWidget(0, len(JOURNAL_COLUMNS))
        self.journal.setHorizontalHeaderLabels(list(JOURNAL_COLUMNS))
        self.journal.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.journal.verticalHeader().setVisible(False)
        journal_header = self.journal.horizontalHeader()
        journal_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        journal_header.setSectionResizeMode(len(JOURNAL_COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)  # the width

        self.messages = QListWidget()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.cockpit.fills_box, "Today's fills")
        self.tabs.addTab(self.journal, "Latest order journal entries")
        self.tabs.addTab(self.messages, "Notifications")

        note = QLabel(TRAY_NOTE if has_tray else NO_TRAY_NOTE)
        note.setWordWrap(True)
        note.setObjectName("note")

        layout = QVBoxLayout(self)
        layout.addWidget(status_box)
        layout.addLayout(buttons)
        layout.addLayout(halt_bar)
        layout.addWidget(self.cockpit, 1)  # the positions take the height
        layout.addWidget(self.tabs, 0)
        self.tabs.currentChanged.connect(self._fit_tabs)
        self._fit_tabs(self.tabs.currentIndex())
        self.welcome_button = self._button("Getting started…", actions.show_welcome)
        footer = QHBoxLayout()
        footer.addWidget(note, 1)
        footer.addWidget(self.welcome_button)
        layout.addLayout(footer)

        self._journal_timer = QTimer(self)
        self._journal_timer.setInterval(JOURNAL_REFRESH_MS)
        self._journal_timer.timeout.connect(self.reload_journal)
        for notification in notifier.history:
            self._add_message(notification)
        notifier.posted.connect(self._add_message)
        bridge.status_changed.connect(self.show_status)
        feed.changed.connect(self._feed_changed)
        if safety is not None:
            safety.changed.connect(self._safety_changed)
        self.show_status(bridge.status)

    def _button(self, text: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(slot)
        return button

    # --- status -------------------------------------------------------------------------------------

    def show_status(self, status: AppStatus) -> None:
        """Make the labels and buttons say what the status says."""
        for label, line in zip(self.line_labels, status_lines(status).as_list(), strict=True):
            label.setText(line)
        self.api_label.setText(f"API: {status.api_url}   Docs: {status.docs_url}")
        self.login_button.setVisible(status.session is not SessionState.LOGGED_IN)
        self.logout_button.setVisible(status.session is not SessionState.LOGGED_OUT)
        for widget in (
            self.login_button,
            self.logout_button,
            self.live_check,
            self.copy_key_button,
            self.welcome_button,
        ):
            widget.setEnabled(status.running)
        self.live_check.setChecked(status.live)
        self.cockpit.show_status(status)
        self._show_halt(status)

    def _safety_changed(self, _state: object) -> None:
        # A bound method, not a lambda: Qt drops the connection when the window is deleted.
        self.show_status(self._bridge.status)

    def _show_halt(self, status: AppStatus) -> None:
        state = self._safety.state if self._safety is not None else None
        halted = state is not None and state.halt.halted
        self.halt_button.setVisible(self._safety is not None and not halted)
        self.halt_hint.setVisible(self._safety is not None and not halted)
        self.halt_button.setEnabled(status.running)
        self.halt_banner.setVisible(halted)
        self.resume_button.setVisible(halted)
        self.resume_button.setEnabled(status.running)
        line = halt_line(state.halt) if state is not None and status.running else None
        self.halt_line_label.setText(line or "")
        self.halt_line_label.setVisible(line is not None)
        if state is not None and halted:
            self.halt_banner.setText(halt_text(state.halt))

    def _live_clicked(self, checked: bool) -> None:
        self._actions.set_live_trading(checked)
        # The box follows the switch: it stays clear until the confirmation says yes.
        self.live_check.setChecked(self._bridge.status.live)

    def _add_message(self, notification: Notification) -> None:
        stamp = notification.time.strftime("%H:%M:%S")
        self.messages.insertItem(0, f"{stamp}  {notification.title}: {notification.message}")
        while self.messages.count() > 50:
            self.messages.takeItem(self.messages.count() - 1)

    def _fit_tabs(self, current: int) -> None:
        # A tab widget asks for the height of its tallest page, whatever the policies: cap it at the page shown,
        # so an empty "Today's fills" is a line and the positions get the height.
        page = self.tabs.widget(current)
        if page is None:
            return
        frame = self.tabs.style().pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth) * 2
        self.tabs.setMaximumHeight(self.tabs.tabBar().sizeHint().height() + page.sizeHint().height() + frame + 2)

    # --- journal ------------------------------------------------------------------------------------

    def _feed_changed(self, snapshot: DeskSnapshot) -> None:
        self._fit_tabs(self.tabs.currentIndex())  # the fills' rows changed the page's height
        # An order changed (an event, a cancel): the journal has news too.
        if snapshot.orders_as_of != self._orders_seen:
            self._orders_seen = snapshot.orders_as_of
            if self.isVisible():
                self.reload_journal()

    def reload_journal(self) -> None:
        """Re-read the newest journal entries in the background."""
        if not self._journal_loading:
            self._journal_loading = True
            self._bridge.spawn(self._load_journal())

    async def _load_journal(self) -> None:
        try:
            entries = await self._bridge.journal_entries()
        finally:
            self._journal_loading = False
        self.journal.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            for column, text in enumerate(journal_row(entry)):
                self.journal.setItem(row, column, QTableWidgetItem(text))

    # --- window -------------------------------------------------------------------------------------

    def bring_to_front(self) -> None:
        """Show the window above the others."""
        self.show()
        self.raise_()
        self.activateWindow()

    def showEvent(self, event: QShowEvent) -> None:
        """Start reading the journal while the window is visible."""
        super().showEvent(event)
        self.reload_journal()
        self._journal_timer.start()
        self._feed.set_watching(True)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Hide instead of closing: Quit is what stops ftdesk."""
        event.ignore()
        self.hide()

    def hideEvent(self, event: QHideEvent) -> None:
        """Stop every poll while the window is hidden (account events still update the cockpit)."""
        super().hideEvent(event)
        self._journal_timer.stop()
        self._feed.set_watching(False)

    def stop(self) -> None:
        """Stop the window's timers for good (the app is shutting down)."""
        self._journal_timer.stop()
        self._feed.set_watching(False)
