"""An in-memory stand-in for the parts of Windows' ``winreg`` module that ftdesk's login item uses.

It behaves as the registry does for one user hive: keys are created by ``CreateKeyEx`` only, opening or
reading what is not there raises ``FileNotFoundError``, and writing through a key opened without
``KEY_SET_VALUE`` raises ``PermissionError``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

HKEY_CURRENT_USER = "HKEY_CURRENT_USER"
KEY_READ = 0x20019
KEY_SET_VALUE = 0x0002
REG_SZ = 1
REG_BINARY = 3


class _Key:
    def __init__(self, values: dict[str, tuple[Any, int]], writable: bool) -> None:
        self.values = values
        self.writable = writable

    def __enter__(self) -> _Key:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None


class FakeRegistry:
    """One user's registry: ``{(hive, key path): {value name: (data, type)}}``."""

    HKEY_CURRENT_USER = HKEY_CURRENT_USER
    KEY_READ = KEY_READ
    KEY_SET_VALUE = KEY_SET_VALUE
    REG_SZ = REG_SZ
    REG_BINARY = REG_BINARY

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], dict[str, tuple[Any, int]]] = {}

    def OpenKey(self, hive: str, path: str, reserved: int = 0, access: int = KEY_READ) -> _Key:
        values = self.keys.get((hive, path.lower()))
        if values is None:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return _Key(values, writable=bool(access & KEY_SET_VALUE))

    def CreateKeyEx(self, hive: str, path: str, reserved: int = 0, access: int = KEY_READ) -> _Key:
        values = self.keys.setdefault((hive, path.lower()), {})
        return _Key(values, writable=bool(access & KEY_SET_VALUE))

    def QueryValueEx(self, key: _Key, name: str) -> tuple[Any, int]:
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return key.values[name]

    def SetValueEx(self, key: _Key, name: str, reserved: int, kind: int, data: Any) -> None:
        if not key.writable:
            raise PermissionError(5, "Access is denied")
        key.values[name] = (data, kind)

    def DeleteValue(self, key: _Key, name: str) -> None:
        if not key.writable:
            raise PermissionError(5, "Access is denied")
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        del key.values[name]

    def value(self, path: str, name: str) -> Any:
        """Return a value's data as a test reads it, or None."""
        entry = self.keys.get((HKEY_CURRENT_USER, path.lower()), {}).get(name)
        return None if entry is None else entry[0]
