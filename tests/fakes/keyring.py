"""An in-memory keyring backend: the real keyring API without touching the machine's keychain."""

from __future__ import annotations

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class InMemoryKeyring(KeyringBackend):
    """Stores secrets in a dict; ``broken=True`` makes every call fail like a locked keyring."""

    priority = 1  # type: ignore[assignment]

    def __init__(self, *, broken: bool = False) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}
        self.broken = broken

    def _check(self) -> None:
        if self.broken:
            raise RuntimeError("keyring is locked")

    def get_password(self, service: str, username: str) -> str | None:
        """Return a stored secret."""
        self._check()
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        """Store a secret."""
        self._check()
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        """Remove a secret."""
        self._check()
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError(username)
