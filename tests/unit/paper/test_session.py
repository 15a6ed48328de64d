"""The paper login session: passwords, TOTP second factor, expiry and keep-alive."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pyotp
import pytest
from pydantic import SecretStr

from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.brokers.paper.session import PaperSession
from ftdesk.domain.errors import AuthRequired, BrokerError, LoginFailed, SessionExpired, TotpRequired
from ftdesk.domain.session import Credentials, SessionState
from tests.fakes.clock import ManualClock

SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def make_session(clock: ManualClock, **settings: object) -> PaperSession:
    return PaperSession(PaperConfig(db_path=Path("unused.db"), **settings), clock)  # type: ignore[arg-type]


def creds(username: str = "trader", password: str = "pw", **extra: str) -> Credentials:
    secret = extra.pop("totp_secret", None)
    return Credentials(
        username=username,
        password=SecretStr(password),
        totp_secret=SecretStr(secret) if secret is not None else None,
        **extra,
    )


def code_at(clock: ManualClock, offset_seconds: float = 0) -> str:
    return pyotp.TOTP(SECRET).at(clock.now() + timedelta(seconds=offset_seconds))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


# --- passwords ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("username", "password"), [("alice", "x"), ("Z123456", "correct horse battery")])
def test_any_username_and_password_log_in(clock: ManualClock, username: str, password: str) -> None:
    session = make_session(clock)
    result = session.login(creds(username, password))
    assert result.username == username
    assert result.logged_in_at == clock.now()
    assert result.expires_at is None  # no lifetime configured: never expires
    assert session.is_logged_in
    assert session.username == username
    session.require_active()


def test_empty_password_is_refused(clock: ManualClock) -> None:
    session = make_session(clock)
    with pytest.raises(LoginFailed, match="wrong username or password"):
        session.login(creds(password=""))
    assert not session.is_logged_in


def test_required_password_must_match_exactly(clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    session = make_session(clock, required_password="s3cret!")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LoginFailed, match="Authentication failed: wrong username or password") as err:
        session.login(creds(password="s3cret"))
    assert "s3cret" not in str(err.value)
    assert "s3cret" not in caplog.text
    assert session.state is SessionState.LOGGED_OUT
    assert session.login(creds(password="s3cret!")).username == "trader"
    assert session.is_logged_in


# --- second factor -----------------------------------------------------------------------------


def test_totp_account_without_code_asks_for_one(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret=SECRET)
    with pytest.raises(TotpRequired, match="This account requires a TOTP code"):
        session.login(creds())
    assert not session.is_logged_in


def test_totp_current_code_logs_in(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret=SECRET)
    session.login(creds(totp_code=code_at(clock)))
    assert session.is_logged_in


def test_totp_code_of_previous_window_is_accepted(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret=SECRET)
    previous = code_at(clock, -30)
    assert previous != code_at(clock)
    session.login(creds(totp_code=previous))
    assert session.is_logged_in


def test_totp_wrong_or_stale_code_is_refused_without_echoing_it(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    session = make_session(clock, totp_secret=SECRET)
    caplog.set_level(logging.DEBUG)
    accepted = {code_at(clock, offset) for offset in (-30, 0, 30)}
    wrong = next(c for c in ("123456", "654321", "000000") if c not in accepted)
    for code in (code_at(clock, -120), wrong):
        with pytest.raises(TotpRequired, match="not accepted") as err:
            session.login(creds(totp_code=code))
        assert code not in str(err.value)
        assert code not in caplog.text
    assert not session.is_logged_in


def test_totp_secret_instead_of_code(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret=SECRET)
    # Authenticator apps show the secret grouped and in lower case; both forms are the same secret.
    session.login(creds(totp_secret="jbsw y3dp ehpk 3pxp jbsw y3dp ehpk 3pxp"))
    assert session.is_logged_in


def test_wrong_totp_secret_is_refused_without_echoing_it(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret=SECRET)
    with pytest.raises(TotpRequired, match="not accepted") as err:
        session.login(creds(totp_secret="KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU"))
    assert SECRET not in str(err.value)
    assert "KRSXG5CTMVRXEZLUKRSXG5CTMVRXEZLU" not in str(err.value)


def test_password_is_checked_before_the_second_factor(clock: ManualClock) -> None:
    session = make_session(clock, required_password="pw2", totp_secret=SECRET)
    with pytest.raises(LoginFailed):
        session.login(creds(password="nope", totp_code=code_at(clock)))


# --- lifetime ----------------------------------------------------------------------------------


def test_calls_before_login_need_auth(clock: ManualClock) -> None:
    session = make_session(clock, session_lifetime=60)
    with pytest.raises(AuthRequired):
        session.require_active()
    with pytest.raises(AuthRequired):
        session.keep_alive()


async def test_session_lapses_without_activity(clock: ManualClock) -> None:
    session = make_session(clock, session_lifetime=60)
    result = session.login(creds())
    assert result.expires_at == clock.now() + timedelta(seconds=60)
    await clock.advance(59)
    assert session.is_logged_in
    await clock.advance(1)
    assert session.state is SessionState.EXPIRED
    assert not session.is_logged_in
    assert session.username == "trader"
    with pytest.raises(SessionExpired, match="expired"):
        session.require_active()
    with pytest.raises(SessionExpired):
        session.keep_alive()


async def test_keep_alive_extends_the_session(clock: ManualClock) -> None:
    session = make_session(clock, session_lifetime=60)
    session.login(creds())
    for _ in range(5):
        await clock.advance(50)
        session.keep_alive()
    assert session.is_logged_in  # 250 s in, never 60 s idle
    current = session.current()
    assert current is not None
    assert current.expires_at == clock.now() + timedelta(seconds=60)
    await clock.advance(60)
    with pytest.raises(SessionExpired):
        session.keep_alive()


async def test_authenticated_calls_count_as_activity(clock: ManualClock) -> None:
    session = make_session(clock, session_lifetime=60)
    session.login(creds())
    await clock.advance(45)
    session.require_active()
    await clock.advance(45)
    session.require_active()  # 90 s after login but only 45 s idle
    await clock.advance(60)
    with pytest.raises(SessionExpired):
        session.require_active()


async def test_zero_lifetime_never_expires(clock: ManualClock) -> None:
    session = make_session(clock)
    session.login(creds())
    await clock.advance(10 * 24 * 3600)
    session.require_active()


async def test_login_again_after_expiry_starts_a_fresh_session(clock: ManualClock) -> None:
    session = make_session(clock, session_lifetime=60)
    session.login(creds())
    await clock.advance(61)
    assert session.state is SessionState.EXPIRED
    session.login(creds("someone-else"))
    assert session.is_logged_in
    assert session.username == "someone-else"


def test_logout_is_idempotent_and_ends_the_session(clock: ManualClock) -> None:
    session = make_session(clock)
    session.logout()
    session.login(creds())
    session.logout()
    session.logout()
    assert session.state is SessionState.LOGGED_OUT
    assert session.username is None
    assert session.current() is None
    with pytest.raises(AuthRequired):
        session.require_active()


def test_misconfigured_secret_is_a_broker_error_that_does_not_leak_it(clock: ManualClock) -> None:
    session = make_session(clock, totp_secret="SHORTSECRET2345")
    with pytest.raises(BrokerError, match="misconfigured") as err:
        session.login(creds(totp_code="123456"))
    assert "SHORTSECRET2345" not in str(err.value)
