"""What can change while the service runs: the live-trading switch and the settings, each observable.

Both are built once by the composition root and handed to the parts that read them; a part that must follow a
change (the safety guard's audit of the live switch, the session's auto re-auth, the desktop app) subscribes
instead of being told by whoever made the change.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from ftdesk.config import Settings

log = logging.getLogger(__name__)

LiveListener = Callable[[bool, str], None]
"""Hears a change of the live switch: enabled, who changed it."""
SettingsListener = Callable[[Settings], None]


def _unsubscriber(listeners: list[Any], listener: Any) -> Callable[[], None]:
    def remove() -> None:
        if listener in listeners:
            listeners.remove(listener)

    return remove


class LiveTradingSwitch:
    """Whether place operations may reach the broker; off (dry-run) unless configured or switched on."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._listeners: list[LiveListener] = []

    @property
    def enabled(self) -> bool:
        """Say whether live trading is on now (read at the moment of use: it can flip during a request)."""
        return self._enabled

    def add_listener(self, listener: LiveListener) -> Callable[[], None]:
        """Call ``listener(enabled, source)`` after every change; return the unsubscriber."""
        self._listeners.append(listener)
        return _unsubscriber(self._listeners, listener)

    def set(self, enabled: bool, source: str) -> bool:
        """Switch live trading (logged with who did it) and tell the listeners; return whether it changed."""
        if self._enabled == enabled:
            return False
        self._enabled = enabled
        log.warning("Live trading switched %s (%s)", "ON" if enabled else "off", source)
        for listener in list(self._listeners):
            try:
                listener(enabled, source)
            except Exception:  # a listener must never keep the switch from switching
                log.exception("Live-switch listener failed")
        return True


class SettingsHolder:
    """The settings of the running service: replaced whole when settings change live, never edited in place."""

    def __init__(self, settings: Settings) -> None:
        self._current = settings
        self._listeners: list[SettingsListener] = []

    @property
    def current(self) -> Settings:
        """Return the settings in force now."""
        return self._current

    def add_listener(self, listener: SettingsListener) -> Callable[[], None]:
        """Call ``listener(settings)`` after every change; return the unsubscriber."""
        self._listeners.append(listener)
        return _unsubscriber(self._listeners, listener)

    def apply(self, values: dict[str, Any]) -> Settings:
        """Put new values in force and tell the listeners; return the new settings."""
        self._current = dataclasses.replace(self._current, **values)
        for listener in list(self._listeners):
            try:
                listener(self._current)
            except Exception:  # a listener must never keep the settings from applying
                log.exception("Settings listener failed")
        return self._current
