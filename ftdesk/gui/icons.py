"""The tray's seven looks and the app icon, loaded from resources/icons/ with every rendered size."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from PySide6.QtGui import QIcon

from ftdesk.gui.resources import icon_path

TRAY_SIZES: tuple[int, ...] = (16, 22, 24, 32, 48, 64)
APP_SIZES: tuple[int, ...] = (16, 22, 24, 32, 48, 64, 128, 256, 512)


class TrayLook(StrEnum):
    """What the tray icon says at a glance; the value names the artwork (tray-<value>.svg)."""

    LOGGED_OUT = "logged-out"  # grey thin ring
    PAPER = "paper"  # logged in on the paper broker: green sheet with a folded corner
    PAPER_FIDELITY = "paper-fidelity"  # paper on Fidelity's market: the same sheet marked with a blue disc
    DRY_RUN = "dry-run"  # logged in on Fidelity, live trading off: blue dashed ring
    LIVE = "live"  # logged in on Fidelity, LIVE trading: solid red disc
    ERROR = "error"  # upstream trouble (expired session, stream reconnecting, service down): amber "!" badge
    HALTED = "halted"  # trading halted by the kill switch: purple octagon (a stop sign's shape) with a white bar


class IconSet:
    """Build each icon once from the artwork and hand out the same QIcon afterwards.

    Every pre-rendered PNG size is added, so the platform picks pixels drawn for 16-22 px tray slots
    instead of scaling a large image down (and needs no SVG plugin at run time).
    """

    def __init__(self, locate: Callable[[str], Path] = icon_path) -> None:
        self._locate = locate
        self._tray: dict[TrayLook, QIcon] = {}
        self._app: QIcon | None = None

    def tray_icon(self, look: TrayLook) -> QIcon:
        """Return the tray icon for a look."""
        icon = self._tray.get(look)
        if icon is None:
            icon = self._tray[look] = self._load(f"tray-{look.value}", TRAY_SIZES)
        return icon

    def app_icon(self) -> QIcon:
        """Return the application icon (windows, dialogs, task switcher)."""
        if self._app is None:
            self._app = self._load("ftdesk", APP_SIZES)
        return self._app

    def _load(self, stem: str, sizes: tuple[int, ...]) -> QIcon:
        icon = QIcon()
        for size in sizes:
            icon.addFile(str(self._locate(f"png/{stem}-{size}.png")))
        return icon
