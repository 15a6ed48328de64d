"""The session state machine through the API: login, TOTP, expiry, keep-alive, auto re-auth, credentials."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pyotp
import pytest

from ftdesk.domain.errors import SessionExpired
from ftdesk.service.routes.common import in_accounts
from ftdesk.service.web.routing import Call, RouteTable
from tests.fakes.clock import ManualClock

TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"

session_routes = RouteTable(tag="testing")


@session_routes.get("/_test/accounts", summary="A call that needs the session")
async def count_accounts(call: Call[None, None]) -> int:
    """Return how many accounts the broker has."""
    return len(await in_accounts(call, lambda accounts: accounts.get_accounts()))


async def status_of(service) -> dict[str, Any]:
    code, body = await service.call("GET", "/api/v1/auth/status")
    assert code == 200
    return body["data"]


async def settle(service, state: str) -> None:
    """Wait (bounded) until the session reaches a state; re-auth loads credentials in a worker thread."""
    session = service.context.session
    if session.state.value == state:
        return
    reached = asyncio.get_running_loop().create_future()

    def listener(new_state) -> None:
        if new_state.value == state and not reached.done():
            reached.set_result(None)

    remove = session.add_listener(listener)
    try:
        if session.state.value != state:
            await asyncio.wait_for(reached, 5)
    finally:
        remove()


async def needs_session(service) -> tuple[int, dict]:
    return await service.call("GET", "/api/v1/_test/accounts")


async def test_login_status_and_logout(start_service) -> None:
    service = await start_service(extra_tables=[session_routes])
    assert (await status_of(service))["state"] == "logged_out"
    code, body = await needs_session(service)
    assert code == 401 and body["error"]["code"] == "AUTH_REQUIRED"

    data = await service.login(username="alice.trader", password="pw")
    assert data["state"] == "logged_in" and data["username"] == "al***er" and data["broker"] == "paper"
    assert data["live_trading"] is False and data["logged_in_since"]
    assert (await needs_session(service))[0] == 200

    code, body = await service.call("POST", "/api/v1/auth/logout")
    assert code == 200 and body["data"]["state"] == "logged_out"
    assert (await needs_session(service))[1]["error"]["code"] == "AUTH_REQUIRED"
    assert (await service.call("POST", "/api/v1/auth/logout"))[0] == 200  # idempotent


async def test_wrong_password_is_401_and_never_leaves_a_stale_session(start_service) -> None:
    service = await start_service(extra_tables=[session_routes], paper_password="right-password")
    await service.login(password="right-password")
    code, body = await service.call("POST", "/api/v1/auth/login", json={"username": "trader", "password": "wrong"})
    assert code == 401 and body["error"]["code"] == "LOGIN_FAILED"
    status = await status_of(service)
    assert status["state"] == "logged_out" and "Authentication failed" in status["last_error"]
    assert (await needs_session(service))[1]["error"]["code"] == "AUTH_REQUIRED"


async def test_login_body_is_validated(start_service) -> None:
    service = await start_service()
    code, body = await service.call("POST", "/api/v1/auth/login", json={"username": "", "totp_code": "12"})
    assert code == 422
    assert {d["field"] for d in body["error"]["details"]} == {"username", "password", "totp_code"}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, "TOTP_REQUIRED"),
        ({"totp_code": "000000"}, "TOTP_REQUIRED"),
        ({"totp_secret": "KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU"}, "TOTP_REQUIRED"),
        ({"totp_code": "NOW"}, None),
        ({"totp_secret": TOTP_SECRET}, None),
    ],
)
async def test_two_factor_accounts(start_service, extra: dict[str, str], expected: str | None) -> None:
    clock = ManualClock()
    service = await start_service(paper_totp_secret=TOTP_SECRET, clock=clock)
    if extra.get("totp_code") == "NOW":
        extra = {"totp_code": pyotp.TOTP(TOTP_SECRET).at(clock.now())}
    code, body = await service.call("POST", "/api/v1/auth/login", json={"username": "u", "password": "p", **extra})
    if expected is None:
        assert code == 200 and body["data"]["state"] == "logged_in"
    else:
        assert code == 401 and body["error"]["code"] == expected
        assert (await status_of(service))["state"] == "logged_out"


async def test_expiry_without_auto_reauth_answers_session_expired(start_service) -> None:
    clock = ManualClock()
    service = await start_service(
        extra_tables=[session_routes], clock=clock, paper_session_lifetime="60", auto_reauth="false"
    )
    await service.login()
    await clock.advance(61)
    code, body = await needs_session(service)
    assert code == 401 and body["error"]["code"] == "SESSION_EXPIRED"
    assert "auto re-auth is off" in body["error"]["message"]
    assert (await status_of(service))["state"] == "expired"
    await service.login()
    assert (await needs_session(service))[0] == 200


async def test_expiry_with_auto_reauth_and_stored_credentials_is_transparent(start_service) -> None:
    clock = ManualClock()
    service = await start_service(extra_tables=[session_routes], clock=clock, paper_session_lifetime="60")
    await service.login(remember=True)
    await clock.advance(61)
    code, body = await needs_session(service)
    assert code == 200 and body["data"] >= 3, "the call that hit the expiry was retried after re-auth"
    status = await status_of(service)
    assert status["state"] == "logged_in" and status["reauth_count"] == 1


async def test_expiry_with_auto_reauth_but_nothing_stored(start_service) -> None:
    clock = ManualClock()
    service = await start_service(extra_tables=[session_routes], clock=clock, paper_session_lifetime="60")
    await service.login()
    await clock.advance(61)
    code, body = await needs_session(service)
    assert code == 401 and body["error"]["code"] == "SESSION_EXPIRED"
    assert "no credentials are stored" in body["error"]["message"]


async def test_keep_alive_holds_the_session_open(start_service) -> None:
    clock = ManualClock()
    service = await start_service(
        extra_tables=[session_routes],
        clock=clock,
        paper_session_lifetime="60",
        session_keepalive_interval="30",
        auto_reauth="false",
    )
    first = (await service.login())["last_keep_alive"]
    for _ in range(10):
        await clock.advance(30)
    status = await status_of(service)
    assert status["state"] == "logged_in" and status["last_keep_alive"] > first
    assert (await needs_session(service))[0] == 200


async def test_keep_alive_detects_expiry_and_re_authenticates(start_service) -> None:
    clock = ManualClock()
    service = await start_service(clock=clock, paper_session_lifetime="60", session_keepalive_interval="90")
    await service.login(remember=True)
    await clock.advance(90)
    await settle(service, "logged_in")  # expiry found, then re-auth (its credential load runs in a thread)
    status = await status_of(service)
    assert status["state"] == "logged_in" and status["reauth_count"] == 1


async def test_keep_alive_detects_expiry_without_auto_reauth(start_service) -> None:
    clock = ManualClock()
    service = await start_service(
        clock=clock, paper_session_lifetime="60", session_keepalive_interval="90", auto_reauth="false"
    )
    await service.login()
    await clock.advance(90)
    await settle(service, "expired")
    assert (await status_of(service))["state"] == "expired"


async def test_a_place_is_never_retried_after_an_expiry(start_service) -> None:
    clock = ManualClock()
    service = await start_service(clock=clock, paper_session_lifetime="60")
    await service.login(remember=True)
    await clock.advance(61)
    attempts = []

    async def place(broker):
        attempts.append(1)
        await broker.accounts.get_accounts()  # stands in for a place: the broker says the session is gone
        return "sent"

    with pytest.raises(SessionExpired):
        await service.context.session.run(place, retry_on_expiry=False)
    assert len(attempts) == 1
    assert (await status_of(service))["state"] == "logged_in", "re-authenticated for the next call"


async def test_credentials_round_trip_encrypted_and_never_returned(start_service, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    service = await start_service()
    secret_password = "pw-Secret-7731-xyz"
    code, body = await service.call(
        "POST",
        "/api/v1/auth/credentials",
        json={"username": "trader", "password": secret_password, "totp_secret": TOTP_SECRET},
    )
    assert code == 200 and body["data"]["credentials_stored"] is True
    stored = (service.context.settings.data_dir / "credentials.enc").read_bytes()
    assert secret_password.encode() not in stored and TOTP_SECRET.encode() not in stored and b"trader" not in stored
    loaded = service.context.credentials.load()
    assert loaded is not None and loaded.password.get_secret_value() == secret_password
    assert (await status_of(service))["credentials_stored"] is True
    code, body = await service.call("DELETE", "/api/v1/auth/credentials")
    assert code == 200 and body["data"] == {"credentials_stored": False, "removed": True}
    assert (await service.call("DELETE", "/api/v1/auth/credentials"))[1]["data"]["removed"] is False
    assert secret_password not in caplog.text and TOTP_SECRET not in caplog.text


async def test_credentials_use_the_configured_encryption_key(start_service, memory_keyring) -> None:
    from cryptography.fernet import Fernet

    key = Fernet.generate_key().decode()
    service = await start_service(encryption_key=key)
    assert (await service.call("POST", "/api/v1/auth/credentials", json={"username": "u", "password": "p"}))[0] == 200
    blob = (service.context.settings.data_dir / "credentials.enc").read_bytes()
    assert b'"password": "p"' in Fernet(key.encode()).decrypt(blob)
    assert not any("credentials-key" in name for _, name in memory_keyring.entries)


async def test_without_keychain_or_key_credentials_are_refused_with_the_fix(start_service, memory_keyring) -> None:
    memory_keyring.broken = True
    service = await start_service()
    code, body = await service.call("POST", "/api/v1/auth/credentials", json={"username": "u", "password": "p"})
    assert code == 503 and body["error"]["code"] == "CREDENTIAL_STORE_UNAVAILABLE"
    assert "FTSERVICE_ENCRYPTION_KEY" in body["error"]["message"]
    assert not (service.context.settings.data_dir / "credentials.enc").exists()


async def test_login_at_startup_uses_stored_credentials(start_service) -> None:
    first = await start_service()
    await first.login(remember=True)
    second = await start_service(login_at_startup="true")
    assert (await status_of(second))["state"] == "logged_in"


async def test_secrets_never_appear_in_responses_or_logs(start_service, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    service = await start_service(paper_totp_secret=TOTP_SECRET)
    password = "hunter2-Very-Secret"
    code, body = await service.call(
        "POST", "/api/v1/auth/login", json={"username": "u", "password": password, "totp_secret": TOTP_SECRET}
    )
    assert code == 200
    for text in (str(body), str(await status_of(service)), caplog.text):
        assert password not in text and TOTP_SECRET not in text
