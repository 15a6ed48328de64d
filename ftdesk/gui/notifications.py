"""Notifications: tray messages where the platform has a tray, the status window's list everywhere.

Every notification is kept (the last ``HISTORY`` of them) and announced with ``posted``; the status window
lists them, which is the only place they appear when there is no system tray (offscreen, stock GNOME).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QSystemTrayIcon

log = logging.getLogger(__name__)

HISTORY = 50
"""Notifications kept for the status window."""
TRAY_MESSAGE_MS = 8000
"""How long a tray message stays up."""


@dataclass(frozen=True)
class Notification:
    """One message for the trader."""

    title: str
    message: str
    time: datetime = field(default_factory=lambda: datetime.now().astimezone())


class Notifier(QObject):
    """Shows notifications as tray messages when a tray is up, and keeps them for the status window."""

    posted = Signal(object)  # Notification

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._history: deque[Notification] = deque(maxlen=HISTORY)
        self._tray: QSystemTrayIcon | None = None

    def attach_tray(self, tray: QSystemTrayIcon | None) -> None:
        """Send future notifications to this tray icon as well (None: no tray)."""
        self._tray = tray

    @property
    def history(self) -> list[Notification]:
        """Return the kept notifications, oldest first."""
        return list(self._history)

    @property
    def uses_tray(self) -> bool:
        """Say whether notifications appear as tray messages."""
        return self._tray is not None and self._tray.isVisible() and QSystemTrayIcon.isSystemTrayAvailable()

    def show(self, title: str, message: str) -> None:
        """Show a notification."""
        notification = Notification(title, message)
        self._history.append(notification)
        log.info("Notification: %s: %s", title, message)
        if self._tray is not None and self.uses_tray:
            self._tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, TRAY_MESSAGE_MS)
        self.posted.emit(notification)
