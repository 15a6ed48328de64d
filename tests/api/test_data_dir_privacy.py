"""The data dir through the real `ftdesk --headless` command: other local users cannot read a trader's orders,
credentials, keys or logs, older installs are tightened at start, and request text cannot forge log lines."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import aiohttp
import pytest
from cryptography.fernet import Fernet

from tests.component.processes import ServiceProcess, free_port, main_py, service_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX; elsewhere the profile folder is private"),
]


def modes(data_dir: Path) -> dict[str, int]:
    """Return the permission bits of the data dir and everything in it, by path relative to it."""
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for path in data_dir.rglob("*"):
        found[path.relative_to(data_dir).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return found


def not_private(data_dir: Path) -> dict[str, str]:
    return {
        name: oct(mode)
        for name, mode in modes(data_dir).items()
        if mode != (0o700 if (data_dir / name).is_dir() else 0o600)
    }


async def use_everything(base_url: str, api_key: str) -> None:
    """Log in remembering the credentials, preview an order (journal), change preferences (paper database)."""
    headers = {"Authorization": f"Bearer {api_key}"}
    async with aiohttp.ClientSession(base_url, headers=headers) as http:

        async def call(method: str, path: str, body: object = None) -> dict:
            async with http.request(method, path, json=body) as response:
                answer = await response.json()
                assert response.status == 200, answer
                return answer["data"]

        await call("POST", "/api/v1/auth/login", {"username": "trader", "password": "paper-pass", "remember": True})
        accounts = await call("GET", "/api/v1/accounts")
        order = {
            "acctNum": accounts[0]["acct_num"],
            "symbol": "AAPL",
            "orderActionCode": "B",
            "qty": 1,
            "priceTypeCode": "M",
            "tifCode": "D",
        }
        await call("POST", "/api/v1/orders/equity/preview", order)
        await call("PUT", "/api/v1/preferences", {"values": {"layout": "compact"}})
        async with http.get("/api/v1/x%0a2026-01-01%2000:00:00,000%20INFO%20ftdesk:%20forged") as response:
            assert response.status == 404


async def run_once(data_dir: Path) -> str:
    """Start ftdesk on the data dir, use it, check every entry is private while it runs; return its log."""
    port = free_port()
    env = service_env(data_dir, port, FTSERVICE_ENCRYPTION_KEY=Fernet.generate_key().decode())
    service = await ServiceProcess.start([*main_py(), "--headless"], env, port)
    try:
        # No keychain here: the API key lives in the fallback file the service creates.
        api_key = (data_dir / "api-key").read_text().strip()
        await use_everything(service.base_url, api_key)
        running = modes(data_dir)
        assert {"journal.sqlite3", "paper/paper.sqlite3", "credentials.enc", "api-key", "logs/ftdesk.log"} <= set(
            running
        )
        assert any(name.endswith("-wal") for name in running) and any(name.endswith("-shm") for name in running)
        assert not_private(data_dir) == {}
        assert await service.stop() == 0
        return await service.stderr_text()
    finally:
        await service.kill()


async def test_every_file_is_the_users_alone_and_an_older_install_is_tightened_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "ftdesk-data"
    log = await run_once(data_dir)
    assert "readable by this user only" not in log, "a fresh data dir has nothing to tighten"
    assert not_private(data_dir) == {}

    # What an older version left behind: the umask's modes, a rotated log and a settings file.
    (data_dir / "settings.json").write_text("{}\n")
    (data_dir / "logs" / "ftdesk.log.2").write_text("old lines\n")
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    loose = set(modes(data_dir))

    log = await run_once(data_dir)
    lines = [line for line in log.splitlines() if "readable by this user only" in line]
    assert len(lines) == 1 and " INFO " in lines[0], log
    assert f"made {len(loose)} entries" in lines[0] and "settings.json" in lines[0] and "journal.sqlite3" in lines[0]
    assert not_private(data_dir) == {}

    # The forged request line stayed inside its access-log record, in the file as on stderr.
    file_log = (data_dir / "logs" / "ftdesk.log").read_text()
    for text in (log, file_log):
        assert "/api/v1/x%0a2026-01-01" in text.replace("%0A", "%0a")  # as sent (the client upper-cases escapes)
        assert not any(line.startswith("2026-01-01 00:00:00,000 INFO ftdesk: forged") for line in text.splitlines())
