"""The service's start and stop on real parts (loopback port, SQLite, in-memory keychain).

A start that fails at any stage, and every stop, leaves no task, socket or open file behind: the process
can start the service again (the tray's restart does) without leaking.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from keyring.errors import KeyringLocked
from pydantic import SecretStr

from ftdesk.app import ServiceRuntime
from ftdesk.brokers.paper.broker import paper_db_path
from ftdesk.config import Settings
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.logs import SecretRedactor
from ftdesk.service.credentials import CredentialStore
from ftdesk.service.keys import API_KEY_FILE_NAME, KeySource, SecretVault
from ftdesk.service.orders.journal import JOURNAL_FILE_NAME
from ftdesk.service.web.server import PortInUseError
from tests.component.processes import port_is_free
from tests.conftest import TEST_API_KEY
from tests.fakes.keyring import InMemoryKeyring

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files in /proc/self/fd")


def open_files() -> dict[int, str]:
    """Return this process's open file descriptors and what each one is (a path, a socket, a pipe)."""
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir itself used, closed by now
            continue
    return found


@dataclass
class Before:
    """What the process had open before a start."""

    tasks: set[asyncio.Task[object]]
    files: dict[int, str]

    def leftovers(self) -> list[str]:
        """Name every task still running and every file still open that was not there before."""
        tasks = asyncio.all_tasks() - self.tasks - {asyncio.current_task()}
        files = {fd: what for fd, what in open_files().items() if self.files.get(fd) != what}
        return [f"task {task.get_name()}" for task in tasks] + [f"fd {fd} -> {what}" for fd, what in files.items()]


def before() -> Before:
    """Note what is open now."""
    return Before(tasks=set(asyncio.all_tasks()), files=open_files())


@pytest.fixture
async def warm(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    """Start and stop one service first, so what a process opens once (imports, worker threads) is not counted."""
    settings = make_settings(FTSERVICE_DATA_DIR=str(tmp_path / "warm-up"), FTSERVICE_API_KEY=TEST_API_KEY)
    runtime = ServiceRuntime(settings, keyring_backend=InMemoryKeyring(), redactor=SecretRedactor())
    await runtime.start()
    await runtime.stop()


def runtime_for(settings: Settings, keyring: InMemoryKeyring) -> ServiceRuntime:
    return ServiceRuntime(settings, keyring_backend=keyring, redactor=SecretRedactor())


async def start_fails(runtime: ServiceRuntime, error: type[BaseException]) -> BaseException:
    """Start the runtime, expecting it to fail with ``error``; a stop afterwards is harmless."""
    with pytest.raises(error) as failure:
        await runtime.start()
    await runtime.stop()
    return failure.value


async def test_a_start_and_a_stop_leave_nothing_open_and_stop_twice_is_harmless(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    runtime = runtime_for(make_settings(FTSERVICE_API_KEY=TEST_API_KEY), memory_keyring)
    was = before()
    await runtime.start()
    port = int(runtime.url.rsplit(":", 1)[1])
    async with aiohttp.ClientSession() as http, http.get(f"{runtime.url}/api/v1/health") as response:
        assert response.status == 200
    assert was.leftovers() != [], "a running service holds its socket, files and tasks"
    await runtime.stop()
    assert was.leftovers() == []
    assert port_is_free(port)
    await runtime.stop()
    assert was.leftovers() == []


async def test_a_journal_that_cannot_be_written_fails_the_start_and_leaves_nothing_open(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    settings = make_settings(FTSERVICE_API_KEY=TEST_API_KEY)
    (settings.data_dir / JOURNAL_FILE_NAME).mkdir(parents=True)  # a folder where the journal file belongs
    was = before()
    await start_fails(runtime_for(settings, memory_keyring), OSError)
    assert was.leftovers() == []


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root writes into a read-only folder")
async def test_a_read_only_data_dir_fails_the_start_and_leaves_nothing_open(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    settings = make_settings(FTSERVICE_API_KEY=TEST_API_KEY)
    settings.data_dir.mkdir(parents=True)
    settings.data_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        was = before()
        await start_fails(runtime_for(settings, memory_keyring), (OSError, sqlite3.Error))  # type: ignore[arg-type]
        assert was.leftovers() == []
    finally:
        settings.data_dir.chmod(stat.S_IRWXU)


async def test_a_broker_that_cannot_open_its_world_fails_the_start_and_the_journal_is_closed_again(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    settings = make_settings(FTSERVICE_API_KEY=TEST_API_KEY)
    # A folder where the world's file belongs: it cannot be opened. (A damaged world file is moved aside and a
    # fresh world started instead: test_fault_processes.)
    paper_db_path(settings.data_dir).mkdir(parents=True)
    was = before()
    await start_fails(runtime_for(settings, memory_keyring), (OSError, sqlite3.Error))  # type: ignore[arg-type]
    assert (settings.data_dir / JOURNAL_FILE_NAME).exists(), "the journal opened before the broker failed"
    assert was.leftovers() == []


@pytest.fixture
def taken_port() -> Iterator[int]:
    """Hold a loopback port with a listening socket, as another program would."""
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        yield int(blocker.getsockname()[1])


async def test_a_taken_port_fails_the_start_after_everything_else_started_and_releases_all_of_it(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring, taken_port: int
) -> None:
    settings = make_settings(FTSERVICE_API_KEY=TEST_API_KEY, FTSERVICE_PORT=str(taken_port))
    was = before()
    error = await start_fails(runtime_for(settings, memory_keyring), PortInUseError)
    assert f"port {taken_port}" in str(error)
    assert was.leftovers() == []


async def test_a_refused_login_at_startup_does_not_stop_the_start_and_the_status_says_why(
    warm: None, make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    settings = make_settings(
        FTSERVICE_API_KEY=TEST_API_KEY, FTSERVICE_LOGIN_AT_STARTUP="true", FTSERVICE_PAPER_PASSWORD="the-right-one"
    )
    stored = Credentials(username="trader", password=SecretStr("an-old-password"))
    CredentialStore(SecretVault(memory_keyring), settings.data_dir, None).save(stored)
    runtime = runtime_for(settings, memory_keyring)
    was = before()
    context = await runtime.start()
    try:
        headers = {"Authorization": f"Bearer {TEST_API_KEY}"}
        async with aiohttp.ClientSession() as http, http.get(f"{runtime.url}/api/v1/auth/status", headers=headers) as r:
            status = (await r.json())["data"]
        assert context.session.state is SessionState.LOGGED_OUT
        assert status["state"] == "logged_out" and status["credentials_stored"] is True
        assert status["last_error"] and "an-old-password" not in status["last_error"]
    finally:
        await runtime.stop()
    assert was.leftovers() == []


async def test_without_a_keychain_the_key_goes_to_a_private_file_and_stop_leaves_nothing(
    warm: None, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings()  # no FTSERVICE_API_KEY: the key must be stored somewhere
    runtime = runtime_for(settings, InMemoryKeyring(broken=True))
    was = before()
    context = await runtime.start()
    await runtime.stop()
    assert context.key_source is KeySource.FILE
    key_file = settings.data_dir / API_KEY_FILE_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text().strip() == context.api_key
    assert was.leftovers() == []


class LockedAfterTheProbe(InMemoryKeyring):
    """A keychain that answered the start-up probe, then was locked before the API key was read."""

    def get_password(self, service: str, username: str) -> str | None:
        """Refuse to read the API key."""
        if username == "api-key":
            raise KeyringLocked("the keychain was locked")
        return super().get_password(service, username)


async def test_a_keychain_locked_while_the_key_is_read_fails_the_start_before_anything_opens(
    warm: None, make_settings: Callable[..., Settings]
) -> None:
    runtime = runtime_for(make_settings(), LockedAfterTheProbe())
    was = before()
    await start_fails(runtime, KeyringLocked)
    assert was.leftovers() == []
