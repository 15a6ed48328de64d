"""The paper brokerage's login session: passwords, an optional second factor, and expiry.

A paper login behaves like a real brokerage login so the service's session handling (status, keep-alive,
expiry, auto re-auth, TOTP prompts) can be exercised without an upstream. Secrets never appear in an
exception message or a log line.
"""

from __future__ import annotations

import hmac
import logging
from datetime import datetime, timedelta

import pyotp

from ftdesk.brokers.paper.config import PaperConfig
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import AuthRequired, BrokerError, LoginFailed, SessionExpired, TotpRequired
from ftdesk.domain.session import BrokerSession, Credentials, SessionState
from ftdesk.logs import logged_username

log = logging.getLogger(__name__)

_BAD_LOGIN = "Authentication failed: wrong username or password"


def _normalize_secret(secret: str) -> str:
    """Return a base32 secret without the spaces and lower case authenticator apps display it with."""
    return "".join(secret.split()).upper()


def _describe_seconds(seconds: float) -> str:
    """Return a duration as a trader reads it ("30 minutes", "45 seconds")."""
    if seconds >= 120:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} seconds"


class PaperSession:
    """The simulated brokerage session: who is logged in and whether the session is still alive."""

    def __init__(self, config: PaperConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        self._username: str | None = None
        self._logged_in_at: datetime | None = None
        self._last_activity = 0.0  # clock.monotonic() of the last keep-alive or authenticated call

    # --- state -----------------------------------------------------------------------------

    @property
    def is_logged_in(self) -> bool:
        """Return True when a session exists and has not lapsed."""
        return self.state is SessionState.LOGGED_IN

    @property
    def username(self) -> str | None:
        """Return the logged-in username (also while expired), or None when logged out."""
        return self._username

    @property
    def state(self) -> SessionState:
        """Return logged_out, logged_in or expired."""
        if self._username is None:
            return SessionState.LOGGED_OUT
        return SessionState.EXPIRED if self._lapsed() else SessionState.LOGGED_IN

    def current(self) -> BrokerSession | None:
        """Return the session as a broker reports it (expires_at moves with activity), or None when logged out."""
        if self._username is None or self._logged_in_at is None:
            return None
        return BrokerSession(username=self._username, logged_in_at=self._logged_in_at, expires_at=self._expires_at())

    # --- transitions -----------------------------------------------------------------------

    def login(self, credentials: Credentials) -> BrokerSession:
        """Check the credentials (and second factor) and start a fresh session."""
        username = credentials.username.strip()
        password = credentials.password.get_secret_value()
        if not username or not password:
            raise LoginFailed(_BAD_LOGIN)
        required = self._config.required_password
        if required is not None and not hmac.compare_digest(password.encode(), required.encode()):
            log.info("Paper login refused for user %s: wrong password", logged_username(username))
            raise LoginFailed(_BAD_LOGIN)
        if self._config.totp_secret:
            self._check_second_factor(username, credentials, self._config.totp_secret)
        self._username = username
        self._logged_in_at = self._clock.now()
        self._last_activity = self._clock.monotonic()
        log.info("Paper login for user %s", logged_username(username))
        return BrokerSession(username=username, logged_in_at=self._logged_in_at, expires_at=self._expires_at())

    def logout(self) -> None:
        """End the session; idempotent."""
        if self._username is not None:
            log.info("Paper logout for user %s", logged_username(self._username))
        self._username = None
        self._logged_in_at = None

    def require_active(self) -> None:
        """Raise unless a live session exists; otherwise count this call as activity."""
        if self._username is None:
            raise AuthRequired("Not logged in: log in to the brokerage first")
        if self._lapsed():
            raise SessionExpired(
                f"The brokerage session expired after {_describe_seconds(self._config.session_lifetime)} "
                "without activity; log in again"
            )
        self._last_activity = self._clock.monotonic()

    def keep_alive(self) -> None:
        """Extend the session; raise ``SessionExpired`` when it has already lapsed."""
        self.require_active()

    # --- internals -------------------------------------------------------------------------

    def _lapsed(self) -> bool:
        lifetime = self._config.session_lifetime
        return lifetime > 0 and self._clock.monotonic() - self._last_activity >= lifetime

    def _expires_at(self) -> datetime | None:
        lifetime = self._config.session_lifetime
        if lifetime <= 0:
            return None
        remaining = lifetime - (self._clock.monotonic() - self._last_activity)
        return self._clock.now() + timedelta(seconds=remaining)

    def _code_matches(self, code: str, secret: str) -> bool:
        try:
            return pyotp.TOTP(_normalize_secret(secret)).verify(code, for_time=self._clock.now(), valid_window=1)
        except ValueError:  # binascii.Error is a ValueError too; the message could hold the secret
            log.error("The paper account's TOTP secret is not valid base32 of at least 112 bits")
            raise BrokerError(
                "The paper account's TOTP secret is misconfigured (it must be base32 of at least 112 bits)"
            ) from None

    def _check_second_factor(self, username: str, credentials: Credentials, secret: str) -> None:
        code = (credentials.totp_code or "").strip()
        given_secret = credentials.totp_secret.get_secret_value() if credentials.totp_secret else ""
        if not code and not given_secret:
            raise TotpRequired("This account requires a TOTP code")
        if code and self._code_matches(code, secret):
            return
        if given_secret and hmac.compare_digest(
            _normalize_secret(given_secret).encode(), _normalize_secret(secret).encode()
        ):
            return
        log.info("Paper login refused for user %s: second factor not accepted", logged_username(username))
        raise TotpRequired(
            "The TOTP code was not accepted: enter the current code from your authenticator app "
            "(and check that this computer's clock is right)"
        )
