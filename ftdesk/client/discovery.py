"""Where a script on the same machine finds the service: its URL and its API key, read-only.

The service keeps its API key in the OS keychain (service ``ftdesk``, entry ``api-key``) or, on a machine
without one, in ``<data dir>/api-key`` (mode 0600); ``FTSERVICE_API_KEY`` overrides both. This module reads
the same places in the same order and never writes: unlike the service, it does not create a key, and it does
not probe the keychain with a test entry.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from ftdesk.client.errors import ApiKeyNotFound
from ftdesk.config import DATA_DIR_ENV, ENV_PREFIX, ConfigError, default_data_dir, load_settings

KEYCHAIN_SERVICE = "ftdesk"
"""The keychain service name the service stores its API key under."""
API_KEY_ENTRY = "api-key"
"""The keychain entry, and the file name in the data dir, of the API key."""
API_KEY_ENV = ENV_PREFIX + "API_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8787"


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the service's data dir: ``FTSERVICE_DATA_DIR``, else the platform's per-user data dir."""
    env = os.environ if environ is None else environ
    raw = env.get(DATA_DIR_ENV, "").strip()
    return Path(raw).expanduser() if raw else default_data_dir()


def _keychain_key() -> str | None:
    try:
        import keyring

        value = keyring.get_password(KEYCHAIN_SERVICE, API_KEY_ENTRY)
    except Exception:  # no keychain, a locked one or a broken backend: the file is the next place to look
        return None
    return value or None


def find_api_key(environ: Mapping[str, str] | None = None) -> str:
    """Return the API key the local service uses: env, keychain, then the data dir's file.

    Raise ``ApiKeyNotFound`` (saying where it looked) when none is there.
    """
    env = os.environ if environ is None else environ
    if env.get(API_KEY_ENV, "").strip():
        return env[API_KEY_ENV].strip()
    from_keychain = _keychain_key()
    if from_keychain:
        return from_keychain
    key_file = data_dir(env) / API_KEY_ENTRY
    with contextlib.suppress(OSError, UnicodeDecodeError):
        stored = key_file.read_text(encoding="utf-8").strip()
        if stored:
            return stored
    raise ApiKeyNotFound(
        f"No API key: none given, {API_KEY_ENV} is not set, and neither the OS keychain (service "
        f"{KEYCHAIN_SERVICE!r}, entry {API_KEY_ENTRY!r}) nor {key_file} holds one. Start ftdesk once (it creates "
        "the key), pass api_key=..., or run `ftdesk --print-api-key`."
    )


def find_base_url(environ: Mapping[str, str] | None = None) -> str:
    """Return the URL of the local service from its settings (``FTSERVICE_PORT``, ``settings.json``).

    A wildcard bind address (0.0.0.0, ::) is reached on loopback; unreadable settings fall back to the default.
    """
    try:
        settings = load_settings(environ)
    except ConfigError:
        return DEFAULT_BASE_URL
    if settings.port == 0:
        return DEFAULT_BASE_URL
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.port}"
