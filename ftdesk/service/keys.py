"""Secrets at rest: the OS keychain through keyring, with a 0600 file where no keychain exists.

The API key is generated once on first start and kept in the keychain (or ``<data dir>/api-key`` with
mode 0600 when the machine has none, as on a headless Linux box); ``FTSERVICE_API_KEY`` overrides both.
Every call here can block (D-Bus, disk), so the service calls it from a worker thread.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import tempfile
from enum import StrEnum
from pathlib import Path

from keyring.backend import KeyringBackend

from ftdesk.data_dir import DATA_DIR_MODE, DATA_FILE_MODE, move_aside
from ftdesk.domain.errors import Conflict, CredentialStoreUnavailable

log = logging.getLogger(__name__)

KEYCHAIN_SERVICE = "ftdesk"
API_KEY_ENTRY = "api-key"
API_KEY_FILE_NAME = "api-key"
_PROBE_ENTRY = "ftdesk-keychain-probe"


class KeySource(StrEnum):
    """Where the effective API key lives."""

    ENVIRONMENT = "environment"
    KEYCHAIN = "keychain"
    FILE = "file"


class SecretVault:
    """The OS keychain, probed once with a canary write so a broken backend is never trusted."""

    def __init__(self, backend: KeyringBackend | None) -> None:
        self._backend = backend
        self._available: bool | None = None
        self.why_unavailable: str | None = None  # the backend's failure, said once where a secret goes to a file

    @property
    def available(self) -> bool:
        """Say whether secrets can be stored in the keychain (probed on first use)."""
        if self._available is None:
            self._available = self._probe()
        return self._available

    def _probe(self) -> bool:
        if self._backend is None:
            return False
        canary = secrets.token_hex(8)
        try:
            self._backend.set_password(KEYCHAIN_SERVICE, _PROBE_ENTRY, canary)
            ok = self._backend.get_password(KEYCHAIN_SERVICE, _PROBE_ENTRY) == canary
            with contextlib.suppress(Exception):
                self._backend.delete_password(KEYCHAIN_SERVICE, _PROBE_ENTRY)
        except Exception as exc:  # any backend failure (no D-Bus, locked keyring) means "no keychain"
            # Said where it matters (a secret written to a file), not on every launch: the debug log keeps it.
            self.why_unavailable = type(exc).__name__
            log.debug("No usable OS keychain (%s); secrets fall back to files in the data dir", type(exc).__name__)
            return False
        return ok

    def get(self, entry: str) -> str | None:
        """Return a stored secret or None."""
        if not self.available or self._backend is None:
            return None
        value: str | None = self._backend.get_password(KEYCHAIN_SERVICE, entry)
        return value

    def set(self, entry: str, value: str) -> None:
        """Store a secret."""
        if not self.available or self._backend is None:
            raise CredentialStoreUnavailable("No OS keychain is available to store the secret in")
        self._backend.set_password(KEYCHAIN_SERVICE, entry, value)

    def delete(self, entry: str) -> None:
        """Remove a secret; missing entries are fine."""
        if not self.available or self._backend is None:
            return
        with contextlib.suppress(Exception):
            self._backend.delete_password(KEYCHAIN_SERVICE, entry)


def write_private_file(path: Path, text: str) -> None:
    """Write a file only the user can read (mode 0600), atomically."""
    path.parent.mkdir(mode=DATA_DIR_MODE, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        os.chmod(tmp, DATA_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def new_api_key() -> str:
    """Return a fresh random API key (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class ApiKeyStore:
    """Finds, creates and regenerates the API key."""

    def __init__(self, vault: SecretVault, data_dir: Path, override: str | None) -> None:
        self._vault = vault
        self._file = data_dir / API_KEY_FILE_NAME
        self._override = override
        self.notices: list[str] = []  # one line each: a damaged key file this store moved aside

    def load_or_create(self) -> tuple[str, KeySource]:
        """Return the API key and where it lives, generating and storing one on first start."""
        return self.load() or self._store(new_api_key())

    def load(self) -> tuple[str, KeySource] | None:
        """Return the API key and where it lives, or None when none was made yet (nothing is written)."""
        if self._override:
            return self._override, KeySource.ENVIRONMENT
        if self._vault.available:
            stored = self._vault.get(API_KEY_ENTRY)
            if stored:
                return stored, KeySource.KEYCHAIN
        elif self._file.exists():
            stored = self._read_file()
            if stored:
                return stored, KeySource.FILE
        return None

    def _read_file(self) -> str | None:
        """Return the key the fallback file keeps; a damaged file is moved aside (None: make a new key)."""
        try:
            stored = self._file.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            why = "its bytes are not text"
        else:
            if not stored or (stored.isprintable() and " " not in stored):
                return stored or None
            why = "it holds characters no API key has"
        moved = move_aside(self._file)
        notice = (
            f"The API key file {self._file} was damaged ({why}); moved to {moved.name}. A new API key was made: "
            "scripts need it (ftdesk --print-api-key)"
        )
        log.error("%s", notice)
        self.notices.append(notice)
        return None

    def regenerate(self) -> tuple[str, KeySource]:
        """Replace the stored API key with a new one (not possible while FTSERVICE_API_KEY is set)."""
        if self._override:
            raise Conflict("FTSERVICE_API_KEY fixes the API key; unset it to regenerate")
        return self._store(new_api_key())

    def _store(self, key: str) -> tuple[str, KeySource]:
        if self._vault.available:
            self._vault.set(API_KEY_ENTRY, key)
            return key, KeySource.KEYCHAIN
        write_private_file(self._file, key + "\n")
        why = f" ({self._vault.why_unavailable})" if self._vault.why_unavailable else ""
        log.info("No usable OS keychain%s: the API key is kept in %s, readable by you alone", why, self._file)
        return key, KeySource.FILE


def keys_match(presented: str, expected: str) -> bool:
    """Compare two keys in constant time (a header's bytes that are not UTF-8 come as surrogates: no match)."""
    escaped = "surrogateescape"
    return hmac.compare_digest(presented.encode("utf-8", escaped), expected.encode("utf-8", escaped))
