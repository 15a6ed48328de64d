"""Start at login: the platform's own autostart entry, written and read back by the app and the installers.

- Linux and other XDG desktops: ``$XDG_CONFIG_HOME/autostart/ftdesk.desktop`` (the XDG Autostart spec).
- Windows: the ``ftdesk`` value under ``HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run`` (the Inno
  Setup installer writes the same value, so its "start at login" task and the settings dialog agree).
- macOS: the LaunchAgent ``~/Library/LaunchAgents/io.ftdesk.app.plist``, loaded by launchd at login.

The entry itself is the only record: there is no setting to drift from it. An entry the desktop marked as
disabled (``Hidden=true``, GNOME's ``X-GNOME-Autostart-enabled=false``, or Task Manager's "Disabled" on
Windows) counts as off, and turning the option on clears that mark.
"""

from __future__ import annotations

import configparser
import os
import plistlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

APP_ID = "ftdesk"
LAUNCH_AGENT_LABEL = "io.ftdesk.app"
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
# Task Manager's Startup tab records "Disabled" here without touching the Run value.
STARTUP_APPROVED_KEY = r"Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run"

# The Desktop Entry spec's reserved characters: an argument holding any of them must be quoted.
_RESERVED = frozenset(" \t\n\"'\\><~|&;$*?#()`")


class LoginItem(Protocol):
    """The app's entry in what the platform starts at login."""

    @property
    def location(self) -> str:
        """Say where the entry lives (a path or a registry key), for the trader to find it."""

    def is_enabled(self) -> bool:
        """Say whether the platform starts ftdesk at login."""

    def enable(self) -> None:
        """Make the platform start ftdesk at login; raise OSError when the entry cannot be written."""

    def disable(self) -> None:
        """Stop the platform starting ftdesk at login; nothing happens when there is no entry."""


def launch_command() -> list[str]:
    """Return the command that starts this ftdesk: the frozen executable, or this Python running the package."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "ftdesk"]


def desktop_exec(command: Sequence[str]) -> str:
    """Return ``command`` as the Exec value of a desktop entry, quoted as the Desktop Entry spec asks."""
    parts = []
    for argument in command:
        if argument and not (_RESERVED & set(argument)):
            parts.append(argument)
            continue
        escaped = "".join("\\" + char if char in '"`$\\' else char for char in argument)
        parts.append(f'"{escaped}"')
    # The value is then a string: backslashes are escaped once more, and a literal % is written %%.
    return " ".join(parts).replace("\\", "\\\\").replace("%", "%%")


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


class XdgAutostart:
    """``ftdesk.desktop`` in the XDG autostart folder."""

    def __init__(self, config_home: Path, command: Sequence[str], icon: str = APP_ID) -> None:
        self.path = config_home / "autostart" / f"{APP_ID}.desktop"
        self._command = list(command)
        self._icon = icon

    @property
    def location(self) -> str:
        """Say where the entry lives."""
        return str(self.path)

    def is_enabled(self) -> bool:
        """Say whether the entry exists and the desktop has not marked it disabled."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # absent, or nothing the desktop could start either
            return False
        entry = configparser.ConfigParser(interpolation=None, strict=False)
        entry.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
        try:
            entry.read_string(text)
            section = entry["Desktop Entry"]
        except (configparser.Error, KeyError):
            return False
        hidden = section.get("Hidden", "false").strip().lower() == "true"
        gnome_off = section.get("X-GNOME-Autostart-enabled", "true").strip().lower() == "false"
        return not (hidden or gnome_off)

    def enable(self) -> None:
        """Write the entry (replacing one the desktop disabled)."""
        text = "\n".join(
            (
                "[Desktop Entry]",
                "Type=Application",
                "Version=1.4",
                "Name=ftdesk",
                "Comment=Start ftdesk in the system tray at login",
                f"Exec={desktop_exec(self._command)}",
                f"Icon={self._icon}",
                "Terminal=false",
                "X-GNOME-Autostart-enabled=true",
                "",
            )
        )
        _write_atomically(self.path, text.encode("utf-8"))

    def disable(self) -> None:
        """Remove the entry."""
        self.path.unlink(missing_ok=True)


class WindowsRunKey:
    """The ``ftdesk`` value of the current user's Run key (``registry`` is the ``winreg`` module)."""

    def __init__(self, command: Sequence[str], registry: ModuleType | Any) -> None:
        self._value = subprocess.list2cmdline(list(command))
        self._registry = registry

    @property
    def location(self) -> str:
        """Say where the entry lives."""
        return f"HKEY_CURRENT_USER\\{RUN_KEY}\\{APP_ID}"

    def is_enabled(self) -> bool:
        """Say whether the Run value exists and Task Manager has not disabled it."""
        reg = self._registry
        try:
            with reg.OpenKey(reg.HKEY_CURRENT_USER, RUN_KEY) as key:
                reg.QueryValueEx(key, APP_ID)
        except FileNotFoundError:
            return False
        try:
            with reg.OpenKey(reg.HKEY_CURRENT_USER, STARTUP_APPROVED_KEY) as key:
                approval, _kind = reg.QueryValueEx(key, APP_ID)
        except FileNotFoundError:
            return True
        # The first byte is even (02, 06) when enabled and odd (03, 07) when disabled in Task Manager.
        return not (isinstance(approval, bytes) and approval[:1] and approval[0] & 1)

    def enable(self) -> None:
        """Write the Run value and clear a Task Manager "Disabled" mark."""
        reg = self._registry
        with reg.CreateKeyEx(reg.HKEY_CURRENT_USER, RUN_KEY, 0, reg.KEY_SET_VALUE) as key:
            reg.SetValueEx(key, APP_ID, 0, reg.REG_SZ, self._value)
        self._delete(STARTUP_APPROVED_KEY)

    def disable(self) -> None:
        """Delete the Run value."""
        self._delete(RUN_KEY)

    def _delete(self, key_path: str) -> None:
        reg = self._registry
        try:
            with reg.OpenKey(reg.HKEY_CURRENT_USER, key_path, 0, reg.KEY_SET_VALUE) as key:
                reg.DeleteValue(key, APP_ID)
        except FileNotFoundError:
            pass


class MacLaunchAgent:
    """A LaunchAgent that launchd runs once at login."""

    def __init__(self, home: Path, command: Sequence[str]) -> None:
        self.path = home / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT_LABEL}.plist"
        self._command = list(command)

    @property
    def location(self) -> str:
        """Say where the entry lives."""
        return str(self.path)

    def is_enabled(self) -> bool:
        """Say whether the agent exists and is not marked disabled."""
        try:
            agent = plistlib.loads(self.path.read_bytes())
        except (OSError, plistlib.InvalidFileException, ValueError):
            return False
        return isinstance(agent, dict) and not agent.get("Disabled", False) and bool(agent.get("RunAtLoad"))

    def enable(self) -> None:
        """Write the agent."""
        agent = {
            "Label": LAUNCH_AGENT_LABEL,
            "ProgramArguments": self._command,
            "RunAtLoad": True,
            "ProcessType": "Interactive",
            "LimitLoadToSessionType": "Aqua",  # the graphical session only, never an ssh login
        }
        _write_atomically(self.path, plistlib.dumps(agent))

    def disable(self) -> None:
        """Remove the agent."""
        self.path.unlink(missing_ok=True)


def login_item_for_platform(
    platform: str | None = None,
    *,
    home: Path | None = None,
    environ: dict[str, str] | None = None,
    command: Sequence[str] | None = None,
) -> LoginItem | None:
    """Return this platform's login item for the running ftdesk, or None where there is none."""
    platform = sys.platform if platform is None else platform
    home = Path.home() if home is None else home
    environ = dict(os.environ) if environ is None else environ
    command = launch_command() if command is None else list(command)
    if platform == "win32":
        import winreg

        return WindowsRunKey(command, winreg)
    if platform == "darwin":
        return MacLaunchAgent(home, command)
    if platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        config_home = environ.get("XDG_CONFIG_HOME", "").strip()
        # The spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
        base = Path(config_home) if config_home and Path(config_home).is_absolute() else home / ".config"
        return XdgAutostart(base, command)
    return None
