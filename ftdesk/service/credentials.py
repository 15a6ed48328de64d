"""Stored brokerage credentials, encrypted with Fernet.

The encryption key is ``FTSERVICE_ENCRYPTION_KEY`` when set; otherwise a key generated once and kept in
the OS keychain. With neither, credentials are not stored at all (never in plaintext) and the error
says how to fix it. The ciphertext lives in ``<data dir>/credentials.enc`` (mode 0600). Every method
can block on the keychain or the disk: callers run them in a worker thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from ftdesk.domain.errors import CredentialStoreUnavailable
from ftdesk.domain.session import Credentials
from ftdesk.service.keys import SecretVault, write_private_file

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

CREDENTIALS_FILE_NAME = "credentials.enc"
KEY_ENTRY = "credentials-key"


class CredentialStore:
    """Saves, loads and deletes one set of brokerage credentials."""

    def __init__(self, vault: SecretVault, data_dir: Path, encryption_key: str | None) -> None:
        self._vault = vault
        self._file = data_dir / CREDENTIALS_FILE_NAME
        self._configured_key = encryption_key

    def _fernet(self, *, create: bool) -> Fernet | None:
        # Imported when credentials are first saved or read: cryptography costs a start about 7 MiB of memory and
        # 20 ms, and a start without stored credentials never needs it.
        from cryptography.fernet import Fernet

        if self._configured_key:
            return Fernet(self._configured_key.encode())
        if not self._vault.available:
            if create:
                raise CredentialStoreUnavailable(
                    "Credentials cannot be stored: this machine has no OS keychain. Set FTSERVICE_ENCRYPTION_KEY "
                    'to a Fernet key (python -c "from cryptography.fernet import Fernet; '
                    'print(Fernet.generate_key().decode())") and restart ftdesk.'
                )
            return None
        key = self._vault.get(KEY_ENTRY)
        if key is None:
            if not create:
                return None
            key = Fernet.generate_key().decode()
            self._vault.set(KEY_ENTRY, key)
        return Fernet(key.encode())

    @property
    def stored(self) -> bool:
        """Say whether credentials are stored."""
        return self._file.exists()

    def save(self, credentials: Credentials) -> None:
        """Encrypt and store credentials, replacing any stored ones."""
        fernet = self._fernet(create=True)
        assert fernet is not None
        payload = {
            "username": credentials.username,
            "password": credentials.password.get_secret_value(),
            "totp_secret": credentials.totp_secret.get_secret_value() if credentials.totp_secret else None,
        }
        write_private_file(self._file, fernet.encrypt(json.dumps(payload).encode()).decode())

    def load(self) -> Credentials | None:
        """Return the stored credentials, or None when there are none or they cannot be decrypted."""
        if not self._file.exists():
            return None
        fernet = self._fernet(create=False)
        if fernet is None:
            return None
        from cryptography.fernet import InvalidToken  # loaded by _fernet already

        try:
            payload = json.loads(fernet.decrypt(self._file.read_bytes()))
        except (InvalidToken, ValueError):
            return None  # encrypted under another key: treated as absent, never as an error with contents
        return Credentials(
            username=payload["username"],
            password=SecretStr(payload["password"]),
            totp_secret=SecretStr(payload["totp_secret"]) if payload.get("totp_secret") else None,
        )

    def delete(self) -> bool:
        """Remove stored credentials; return whether there were any."""
        existed = self._file.exists()
        self._file.unlink(missing_ok=True)
        return existed
