"""A second launch: find the ftdesk already serving the configured port and ask it to show its window.

The launch only reads the API key where the running instance keeps it (the same user, the same data dir): it
writes nothing. When the ftdesk on the port refuses that key (another data dir, or another FTSERVICE_API_KEY),
or when this data dir has no key at all, the launch says so in words and the exit code says nothing happened.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from keyring.backend import KeyringBackend

from ftdesk.config import Settings
from ftdesk.service.keys import ApiKeyStore, SecretVault


async def instance_running(settings: Settings) -> bool:
    """Say whether an ftdesk answers GET /health on the configured port."""
    import aiohttp

    try:
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as http, http.get(f"{settings.base_url}/api/v1/health") as r:
            body = await r.json()
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return False
    return isinstance(body, dict) and (body.get("data") or {}).get("service") == "ftdesk"


@dataclass(frozen=True)
class HandOff:
    """What a launch that found ftdesk already serving its port did: the line to print, and whether it worked."""

    message: str
    ok: bool  # False when nothing happened: the exit code is then non-zero


async def hand_off_to_running_instance(settings: Settings, keyring_backend: KeyringBackend | None) -> HandOff | None:
    """Ask an ftdesk already serving the configured port to show its window; None when none serves it."""
    if settings.port == 0 or not await instance_running(settings):
        return None
    import aiohttp

    running = f"ftdesk is already running at {settings.base_url}"
    store = ApiKeyStore(SecretVault(keyring_backend), settings.data_dir, settings.api_key)
    # It is the same user: the running instance keeps its key where this launch finds it. Only read: a launch
    # that hands over writes nothing, and a data dir without a key cannot be the running one's.
    found = await asyncio.to_thread(store.load)
    if found is None:
        return HandOff(_another_data_dir(settings), ok=False)
    key, _source = found
    try:
        timeout = aiohttp.ClientTimeout(total=3)
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.post(f"{settings.base_url}/api/v1/app/window", headers={"Authorization": f"Bearer {key}"}) as r,
        ):
            body = await r.json()
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return HandOff(f"{running}; could not ask it to show its window ({type(exc).__name__})", ok=False)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        error = (body.get("error") or {}) if isinstance(body, dict) else {}
        code = error.get("code", f"HTTP {r.status}")
        if code == "API_KEY_INVALID":  # its key is another data dir's (or FTSERVICE_API_KEY differs)
            return HandOff(_another_data_dir(settings), ok=False)
        return HandOff(f"{running}; it did not show its window ({code})", ok=False)
    if data.get("shown"):
        return HandOff(f"{running}; its window is now in front", ok=True)
    return HandOff(f"{running}; {data.get('reason') or 'it has no window to show'}", ok=True)


def _another_data_dir(settings: Settings) -> str:
    return (
        f"another ftdesk, with another data dir, is already serving on {settings.port} (this launch's data dir is "
        f"{settings.data_dir}). Quit that one, or start this one on another port (FTSERVICE_PORT)"
    )
