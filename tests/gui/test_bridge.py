"""The bridge: login outcomes, settings saved and applied, restart, a new API key, the journal, on a real service."""

from __future__ import annotations

import asyncio
import json
import socket
import stat

import aiohttp
import pyotp
import pytest

from ftdesk.domain.session import SessionState
from ftdesk.gui.contracts import LoginRequest, LoginResult
from tests.component.processes import free_port
from tests.fakes.waiting import wait_until
from tests.gui.test_tray import log_in

TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def request(password: str = "paper-pass", *, totp: str | None = None, remember: bool = False) -> LoginRequest:
    return LoginRequest(username="trader", password=password, totp_code=totp, remember=remember)


# --- login ---------------------------------------------------------------------------------------------


async def test_a_2fa_account_asks_for_the_code_then_logs_in_with_it(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_PAPER_TOTP_SECRET=TOTP_SECRET)
    first = await desktop.bridge.submit_login(request())
    assert first.result is LoginResult.TOTP_REQUIRED and first.message
    assert desktop.bridge.status.session is SessionState.LOGGED_OUT
    second = await desktop.bridge.submit_login(request(totp=pyotp.TOTP(TOTP_SECRET).now()))
    assert second.result is LoginResult.OK
    await wait_until(lambda: desktop.bridge.status.session is SessionState.LOGGED_IN)


async def test_a_wrong_password_fails_with_the_brokers_message(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_PAPER_PASSWORD="right-password")
    outcome = await desktop.bridge.submit_login(request("wrong-password"))
    assert outcome.result is LoginResult.FAILED and outcome.message
    assert "wrong-password" not in outcome.message
    assert desktop.bridge.status.session is SessionState.LOGGED_OUT


async def test_remember_stores_the_credentials_encrypted(make_desktop) -> None:
    desktop = await make_desktop()
    outcome = await desktop.bridge.submit_login(request("remember-me-pass", remember=True))
    assert outcome.result is LoginResult.OK and not outcome.message
    stored = desktop.settings().data_dir / "credentials.enc"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert b"remember-me-pass" not in stored.read_bytes()
    await wait_until(lambda: desktop.bridge.status.credentials_stored)
    assert desktop.runtime.context.credentials.load().username == "trader"  # type: ignore[union-attr]


async def test_remember_without_a_keychain_or_key_logs_in_and_says_why_nothing_was_stored(
    make_desktop, memory_keyring
) -> None:
    memory_keyring.broken = True  # no usable keychain, and no FTSERVICE_ENCRYPTION_KEY
    desktop = await make_desktop()
    outcome = await desktop.bridge.submit_login(request(remember=True))
    assert outcome.result is LoginResult.OK and "FTSERVICE_ENCRYPTION_KEY" in outcome.message
    assert desktop.app.notifier.history[-1].title == "Credentials not stored"
    assert not (desktop.settings().data_dir / "credentials.enc").exists()
    await wait_until(lambda: desktop.bridge.status.session is SessionState.LOGGED_IN)


# --- settings ------------------------------------------------------------------------------------------


async def test_invalid_and_env_fixed_settings_are_refused_and_nothing_is_saved(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_LOG_LEVEL="DEBUG")
    outcome = await desktop.bridge.save_settings({"unsubscribe_delay": -1, "log_level": "INFO", "auto_reauth": False})
    assert set(outcome.errors) == {"unsubscribe_delay", "log_level"}
    assert "at least 0" in outcome.errors["unsubscribe_delay"]
    assert "FTSERVICE_LOG_LEVEL" in outcome.errors["log_level"]
    assert not (desktop.settings().data_dir / "settings.json").exists()
    assert desktop.runtime.context.session.auto_reauth is True  # type: ignore[union-attr]


async def test_live_settings_apply_at_once_and_the_rest_wait_for_a_restart(make_desktop) -> None:
    desktop = await make_desktop()
    outcome = await desktop.bridge.save_settings(
        {"auto_reauth": False, "preview_ttl": 30, "unsubscribe_delay": 2, "log_level": "WARNING"}
    )
    assert not outcome.errors
    assert sorted(outcome.applied) == ["auto_reauth", "preview_ttl"]
    assert sorted(outcome.needs_restart) == ["log_level", "unsubscribe_delay"]
    saved = json.loads((desktop.settings().data_dir / "settings.json").read_text())
    assert saved == {"auto_reauth": False, "log_level": "WARNING", "preview_ttl": 30.0, "unsubscribe_delay": 2.0}
    assert desktop.runtime.context.session.auto_reauth is False  # type: ignore[union-attr]
    assert desktop.runtime.context.settings.preview_ttl == 30.0  # type: ignore[union-attr]
    _status, body = await desktop.call("GET", "/api/v1/auth/status")
    assert body["data"]["auto_reauth"] is False
    again = await desktop.bridge.save_settings({"unsubscribe_delay": 10})
    assert again.needs_restart == [], "back to the running value: nothing waits for a restart"


async def test_restart_applies_a_new_port_keeps_the_mode_and_logs_in_again(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_PORT="", settings_file={"port": free_port()})
    await log_in(desktop, remember=True)
    desktop.bridge.set_live_trading(True)
    old_url = desktop.runtime.url
    port = free_port()
    outcome = await desktop.bridge.save_settings({"port": port})
    assert outcome.needs_restart == ["port"]
    await desktop.bridge.restart_service()
    assert desktop.runtime.url == f"http://127.0.0.1:{port}" != old_url
    _status, health = await desktop.call("GET", "/api/v1/health")
    assert health["data"]["live_trading"] is True, "a restart never changes the trading mode"
    status = desktop.bridge.status
    assert status.api_url == f"http://127.0.0.1:{port}/api/v1" and status.session is SessionState.LOGGED_IN
    with pytest.raises(aiohttp.ClientConnectionError):
        async with desktop.http.get(f"{old_url}/api/v1/health"):
            pass


async def test_a_restart_that_cannot_start_the_new_settings_keeps_the_old_ones(make_desktop) -> None:
    port = free_port()
    desktop = await make_desktop(FTSERVICE_PORT="", settings_file={"port": port})
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        assert (await desktop.bridge.save_settings({"port": taken})).needs_restart == ["port"]
        await desktop.bridge.restart_service()
    last = desktop.app.notifier.history[-1]
    assert last.title == "Restart failed" and f"port {taken}" in last.message
    assert desktop.runtime.url == f"http://127.0.0.1:{port}"
    status, body = await desktop.call("GET", "/api/v1/health")
    assert status == 200 and body["data"]["service"] == "ftdesk"
    assert desktop.bridge.status.running


async def test_a_new_api_key_replaces_the_old_one_at_once(make_desktop) -> None:
    desktop = await make_desktop(FTSERVICE_API_KEY="")
    old_key = desktop.api_key
    await desktop.bridge.regenerate_api_key()
    new_key = desktop.api_key
    assert new_key != old_key
    status, body = await desktop.call("GET", "/api/v1/auth/status", key=old_key)
    assert status == 403 and body["error"]["code"] == "API_KEY_INVALID"
    assert (await desktop.call("GET", "/api/v1/auth/status", key=new_key))[0] == 200
    assert desktop.app.notifier.history[-1].title == "New API key"
    assert new_key not in desktop.app.notifier.history[-1].message


async def test_a_key_fixed_by_the_environment_cannot_be_regenerated(make_desktop) -> None:
    desktop = await make_desktop()
    with pytest.raises(Exception, match="FTSERVICE_API_KEY"):
        await desktop.bridge.regenerate_api_key()
    assert (await desktop.call("GET", "/api/v1/health"))[0] == 200


# --- journal -------------------------------------------------------------------------------------------


async def startup_rows_written(desktop) -> None:
    """Wait for the live switch's startup row (journaled off the loop) so that rows written next come after it."""
    async with asyncio.timeout(10):
        while not any(e.action.value == "live_switch" for e in await desktop.bridge.journal_entries()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_the_journal_lists_the_newest_order_actions(make_desktop) -> None:
    desktop = await make_desktop()
    await log_in(desktop)
    await startup_rows_written(desktop)
    accounts = await desktop.runtime.broker.accounts.get_accounts()
    order = {"acctNum": accounts[0].acct_num, "symbol": "KO", "orderActionCode": "B", "qty": 2, "priceTypeCode": "M"}
    status, _body = await desktop.call("POST", "/api/v1/orders/equity/preview", json=order)
    assert status == 200
    entries = await desktop.bridge.journal_entries()
    # Newest first; the live switch's value at startup is journaled too.
    assert [(e.action.value, e.symbol, e.qty) for e in entries] == [("preview", "KO", 2.0), ("live_switch", None, None)]
