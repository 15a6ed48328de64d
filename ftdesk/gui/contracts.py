"""What the dialogs ask of the bridge and what it answers: plain records, no Qt.

The dialogs (login, settings, live-trading confirmation) never touch the service. They are given async
callables that the bridge provides, so each dialog can be tested with a small fake and the bridge is the
one place where Qt actions become service calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from ftdesk.service.control import SaveOutcome


@dataclass(frozen=True)
class LoginRequest:
    """What the trader typed into the login dialog."""

    username: str
    password: str
    totp_code: str | None
    remember: bool

    def __repr__(self) -> str:
        return f"LoginRequest(username={self.username!r}, password='***', totp_code=..., remember={self.remember})"


class LoginResult(StrEnum):
    """How a login attempt ended."""

    OK = "ok"
    TOTP_REQUIRED = "totp_required"  # the account needs a 6-digit code: show the field and ask again
    FAILED = "failed"


@dataclass(frozen=True)
class LoginOutcome:
    """The answer to a ``LoginRequest``; ``message`` is shown inline in the dialog."""

    result: LoginResult
    message: str = ""


LoginSubmit = Callable[[LoginRequest], Awaitable[LoginOutcome]]


class SettingsActions(Protocol):
    """What the settings dialog may ask of the service (the bridge implements it)."""

    async def save_settings(self, changes: Mapping[str, Any]) -> SaveOutcome:
        """Validate, write the settings file (off the loop) and apply what can change live."""

    async def regenerate_api_key(self) -> None:
        """Replace the API key; scripts need the new one."""

    async def restart_service(self) -> None:
        """Stop and start the embedded server so saved settings take effect."""
