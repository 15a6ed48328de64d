"""ServiceControl on a real service (paper broker, loopback port, in-memory keychain): what the tray relies on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from pydantic import SecretStr

from ftdesk.app import ServiceRuntime
from ftdesk.config import Settings
from ftdesk.domain.errors import FtdeskError, LoginFailed
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.logs import SecretRedactor
from ftdesk.service.control import (
    ConfigError,
    ServiceChange,
    ServiceControl,
    ServiceNotRunning,
    validate_setting,
)
from ftdesk.service.routes.app_window import DesktopWindow
from tests.conftest import TEST_API_KEY
from tests.fakes.keyring import InMemoryKeyring
from tests.fakes.waiting import wait_until

TRADER = Credentials(username="trader", password=SecretStr("paper-pass"))


@pytest.fixture
async def control(
    make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> AsyncIterator[ServiceControl]:
    """A started control over a paper service."""

    def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(settings, keyring_backend=memory_keyring, redactor=SecretRedactor(), window=window)

    service = ServiceControl(make_settings(FTSERVICE_API_KEY=TEST_API_KEY), make_runtime)
    await service.start()
    yield service
    await service.stop()


async def health(control: ServiceControl) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {TEST_API_KEY}"}
    async with aiohttp.ClientSession() as http, http.get(f"{control.url}/api/v1/health", headers=headers) as r:
        data: dict[str, object] = (await r.json())["data"]
        return data


async def test_a_listener_hears_each_change_until_it_unsubscribes(control: ServiceControl) -> None:
    heard: list[ServiceChange] = []
    unsubscribe = control.subscribe(heard.append)
    await control.log_in(TRADER)
    control.set_live_trading(True, source="a test")
    assert heard == [ServiceChange.SESSION, ServiceChange.LIVE_TRADING]
    unsubscribe()
    await control.log_out()
    control.set_live_trading(False, source="a test")
    assert heard == [ServiceChange.SESSION, ServiceChange.LIVE_TRADING], "nothing after unsubscribing"
    unsubscribe()  # twice is harmless


async def test_live_trading_switched_through_the_control_is_what_the_api_reports(control: ServiceControl) -> None:
    assert (await health(control))["live_trading"] is False
    control.set_live_trading(True, source="a test")
    assert (await health(control))["live_trading"] is True and control.status().live
    control.set_live_trading(False, source="a test")
    assert (await health(control))["live_trading"] is False


async def test_a_refused_login_is_a_domain_error_and_the_status_says_why(
    make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(settings, keyring_backend=memory_keyring, redactor=SecretRedactor(), window=window)

    control = ServiceControl(
        make_settings(FTSERVICE_API_KEY=TEST_API_KEY, FTSERVICE_PAPER_PASSWORD="right"), make_runtime
    )
    await control.start()
    try:
        with pytest.raises(LoginFailed):
            await control.log_in(TRADER)
        status = control.status()
        assert status.session is SessionState.LOGGED_OUT and status.last_error
    finally:
        await control.stop()


async def test_a_stopped_service_answers_with_a_typed_error_not_a_runtime_error(control: ServiceControl) -> None:
    await control.stop()
    assert not control.running and not control.status().running
    with pytest.raises(ServiceNotRunning) as refused:
        await control.log_in(TRADER)
    assert isinstance(refused.value, FtdeskError) and refused.value.message == "The service is not running"
    with pytest.raises(ServiceNotRunning):
        control.set_live_trading(True, source="a test")
    with pytest.raises(ServiceNotRunning):
        await control.restart()
    assert await control.journal_entries(10) == []
    await control.stop()  # idempotent


async def test_the_control_s_own_account_event_reader_is_not_counted_as_a_client(
    make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    runtimes: list[ServiceRuntime] = []

    def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        runtimes.append(ServiceRuntime(settings, keyring_backend=memory_keyring, redactor=SecretRedactor()))
        return runtimes[-1]

    control = ServiceControl(make_settings(FTSERVICE_API_KEY=TEST_API_KEY), make_runtime)
    await control.start()
    unsubscribe = control.subscribe_account_events(lambda _event: None)
    try:
        context = runtimes[-1].context
        assert context is not None
        await wait_until(lambda: len(context.events.status().consumers) == 1)  # the control's reader
        assert control.streams().clients["events"] == 0
        client, _replay = context.events.open_consumer()
        assert control.streams().clients["events"] == 1
        client.close()
    finally:
        unsubscribe()
        await control.stop()


async def test_a_stopped_control_leaves_no_task_running(
    make_settings: Callable[..., Settings], memory_keyring: InMemoryKeyring
) -> None:
    def make_runtime(settings: Settings, window: DesktopWindow | None) -> ServiceRuntime:
        return ServiceRuntime(settings, keyring_backend=memory_keyring, redactor=SecretRedactor())

    tasks_before = asyncio.all_tasks()
    control = ServiceControl(make_settings(FTSERVICE_API_KEY=TEST_API_KEY), make_runtime)
    control.subscribe_account_events(lambda _event: None)  # the control then runs a reader task of its own
    await control.start()
    await control.log_in(TRADER)  # the session's keep-alive and the hubs' upstream connections run too
    assert asyncio.all_tasks() - tasks_before
    await control.stop()
    assert asyncio.all_tasks() - tasks_before == set()


def test_one_check_refuses_unknown_env_only_and_env_fixed_settings_and_bad_values(
    make_settings: Callable[..., Settings],
) -> None:
    running = make_settings(FTSERVICE_LOG_LEVEL="DEBUG")
    with pytest.raises(ConfigError, match="is not a setting"):
        validate_setting("no_such_setting", 1, running)
    with pytest.raises(ConfigError, match="only be set with the environment variable FTSERVICE_ENCRYPTION_KEY"):
        validate_setting("encryption_key", "a-key", running)
    with pytest.raises(ConfigError, match="FTSERVICE_LOG_LEVEL"):
        validate_setting("log_level", "INFO", running)
    with pytest.raises(ConfigError, match="at least 0"):
        validate_setting("unsubscribe_delay", -1, running)
    assert validate_setting("unsubscribe_delay", "2.5", running) == 2.5
    assert validate_setting("unsubscribe_delay", None, running) is None  # back to the default
    assert validate_setting("log_level", "INFO") == "INFO", "without running settings: the value alone is checked"
