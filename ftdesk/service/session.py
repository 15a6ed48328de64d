"""The brokerage session as the service sees it: one state machine between every caller and the broker.

States: ``logged_out`` -> ``logged_in`` (login) -> ``expired`` (keep-alive or any broker call found the
upstream session gone, and auto re-auth is off or failed) -> ``logged_in`` (login or re-auth).
Logins are serialised; a failed login leaves ``logged_out``, never a stale ``logged_in``. With auto
re-auth on and credentials stored, an expiry is repaired by logging in again and the call that hit it
is retried once, except place operations, which are never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, Field

from ftdesk.brokers.base import Broker
from ftdesk.config import Settings
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import AuthRequired, LoginFailed, SessionExpired, TotpRequired
from ftdesk.domain.session import Credentials, SessionState
from ftdesk.logs import logged_username, mask_username
from ftdesk.service.credentials import CredentialStore

log = logging.getLogger(__name__)

T = TypeVar("T")


class SessionStatus(BaseModel):
    """What GET /auth/status reports."""

    state: SessionState = Field(description="logged_out, logged_in or expired.")
    broker: str = Field(description="paper or fidelity.")
    username: str | None = Field(description="The logged-in (or last) username, masked: 'tr***er'.")
    logged_in_since: datetime | None
    last_keep_alive: datetime | None
    keepalive_interval_seconds: float = Field(description="Seconds between two keep-alives of the broker session.")
    auto_reauth: bool
    reauth_count: int = Field(description="How often the service logged in again by itself since start.")
    live_trading: bool = Field(description="False in dry-run mode: place operations are refused.")
    credentials_stored: bool
    last_error: str | None = Field(description="Why the last login, keep-alive or re-auth failed, if it did.")


class SessionManager:
    """Owns login state, keep-alive and re-authentication for one broker."""

    def __init__(
        self,
        broker: Broker,
        clock: Clock,
        credentials: CredentialStore,
        *,
        keepalive_interval: float,
        auto_reauth: bool,
        live_trading: Callable[[], bool],
    ) -> None:
        self.broker = broker
        self._clock = clock
        self._credentials = credentials
        self.keepalive_interval = keepalive_interval
        self.auto_reauth = auto_reauth
        self._live_trading = live_trading
        self._lock = asyncio.Lock()
        self.state = SessionState.LOGGED_OUT
        self._username: str | None = None
        self._logged_in_since: datetime | None = None
        self._last_keep_alive: datetime | None = None
        self._last_error: str | None = None
        self._keepalive_task: asyncio.Task[None] | None = None
        self._credentials_stored = False
        self.reauth_count = 0
        self._listeners: list[Callable[[SessionState], None]] = []

    def follow_settings(self, settings: Settings) -> None:
        """Take the settings that change live (auto re-auth) when they are applied."""
        self.auto_reauth = settings.auto_reauth

    # --- observation ------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[SessionState], None]) -> Callable[[], None]:
        """Call ``listener(state)`` whenever the state changes; return the callable that stops the calls."""
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):  # removing twice is harmless
                self._listeners.remove(listener)

        return remove

    def _set_state(self, state: SessionState) -> None:
        if state is self.state:
            return
        self.state = state
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:  # a listener must never break the session
                log.exception("Session listener failed")

    async def refresh_credentials_flag(self) -> None:
        """Re-read whether credentials are stored (the check touches the disk)."""
        self._credentials_stored = await asyncio.to_thread(lambda: self._credentials.stored)

    def status(self) -> SessionStatus:
        """Return the session status."""
        return SessionStatus(
            state=self.state,
            broker=self.broker.name,
            username=mask_username(self._username),
            logged_in_since=self._logged_in_since,
            last_keep_alive=self._last_keep_alive,
            keepalive_interval_seconds=self.keepalive_interval,
            auto_reauth=self.auto_reauth,
            reauth_count=self.reauth_count,
            live_trading=self._live_trading(),
            credentials_stored=self._credentials_stored,
            last_error=self._last_error,
        )

    # --- login and logout -------------------------------------------------------------------

    async def login(self, credentials: Credentials) -> SessionStatus:
        """Log in (serialised with every other login); a failure leaves the session logged out."""
        async with self._lock:
            await self._login_locked(credentials)
        return self.status()

    async def _login_locked(self, credentials: Credentials) -> None:
        try:
            session = await self.broker.session.login(credentials)
        except Exception as exc:
            reason = (
                exc.message if isinstance(exc, LoginFailed | TotpRequired) else f"Login failed: {type(exc).__name__}"
            )
            self._fail_login(reason)
            # Whatever the upstream kept from an earlier login must not outlive a failed one.
            with contextlib.suppress(Exception):
                await self.broker.session.logout()
            raise
        now = self._clock.now()
        self._username = session.username
        self._logged_in_since = session.logged_in_at
        self._last_keep_alive = now
        self._last_error = None
        self._set_state(SessionState.LOGGED_IN)
        self._start_keepalive()
        log.info("Logged in to %s as %s", self.broker.name, logged_username(session.username))

    def _fail_login(self, reason: str) -> None:
        self._stop_keepalive()
        self._last_error = reason
        self._logged_in_since = None
        self._set_state(SessionState.LOGGED_OUT)

    async def logout(self) -> SessionStatus:
        """End the session; idempotent."""
        async with self._lock:
            self._stop_keepalive()
            with contextlib.suppress(Exception):
                await self.broker.session.logout()
            self._logged_in_since = None
            self._last_error = None
            self._set_state(SessionState.LOGGED_OUT)
        log.info("Logged out of %s", self.broker.name)
        return self.status()

    async def login_with_stored_credentials(self) -> bool:
        """Log in with the stored credentials, if any; return whether it worked."""
        credentials = await asyncio.to_thread(self._credentials.load)
        if credentials is None:
            return False
        try:
            await self.login(credentials)
        except Exception as exc:
            log.warning("Login with stored credentials failed: %s", getattr(exc, "message", type(exc).__name__))
            return False
        return True

    # --- calls --------------------------------------------------------------------------------

    async def run(self, operation: Callable[[Broker], Awaitable[T]], *, retry_on_expiry: bool = True) -> T:
        """Run a broker operation that needs a session, repairing an expiry once when allowed.

        ``retry_on_expiry=False`` (place operations) still re-authenticates after an expiry, so the next
        call works, but reports the expiry instead of sending the order a second time.
        """
        if self.state is SessionState.LOGGED_OUT:
            raise AuthRequired("Not logged in to the brokerage: POST /api/v1/auth/login first")
        if self.state is SessionState.EXPIRED and not await self._reauthenticate():
            raise SessionExpired(self._expired_message())
        try:
            return await operation(self.broker)
        except (SessionExpired, AuthRequired):
            if self._logged_out():  # a logout raced this call: report that, not an expiry
                raise AuthRequired("Not logged in to the brokerage: POST /api/v1/auth/login first") from None
            self._mark_expired("The brokerage session expired")
            if not await self._reauthenticate() or not retry_on_expiry:
                raise SessionExpired(self._expired_message()) from None
        return await operation(self.broker)

    def _logged_out(self) -> bool:
        # A method, not an inline check: the state can change while a call awaits the broker.
        return self.state is SessionState.LOGGED_OUT

    def _expired_message(self) -> str:
        if not self.auto_reauth:
            return "The brokerage session expired and auto re-auth is off: log in again"
        if not self._credentials_stored:
            return "The brokerage session expired and no credentials are stored for auto re-auth: log in again"
        return f"The brokerage session expired and re-authentication failed ({self._last_error}): log in again"

    def _mark_expired(self, reason: str) -> None:
        if self.state is SessionState.LOGGED_IN:
            log.warning("%s", reason)
            self._last_error = reason
            self._set_state(SessionState.EXPIRED)

    async def _reauthenticate(self) -> bool:
        """Log in again with stored credentials when auto re-auth allows; return whether the session is up."""
        if not self.auto_reauth:
            return False
        async with self._lock:
            if self.state is SessionState.LOGGED_IN:
                return True  # another caller repaired it while we waited
            if self.state is SessionState.LOGGED_OUT:
                return False
            credentials = await asyncio.to_thread(self._credentials.load)
            if credentials is None:
                self._credentials_stored = False
                return False
            try:
                await self._login_locked(credentials)
            except Exception as exc:
                # _login_locked moved us to logged_out; an expiry that could not be repaired stays "expired".
                self._last_error = getattr(exc, "message", type(exc).__name__)
                self._set_state(SessionState.EXPIRED)
                return False
            self.reauth_count += 1
            log.info("Re-authenticated with stored credentials")
            return True

    # --- keep-alive -------------------------------------------------------------------------

    def _start_keepalive(self) -> None:
        self._stop_keepalive()
        self._keepalive_task = asyncio.get_running_loop().create_task(self._keepalive_loop(), name="keep-alive")

    def _stop_keepalive(self) -> None:
        task, self._keepalive_task = self._keepalive_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _keepalive_loop(self) -> None:
        while True:
            await self._clock.sleep(self.keepalive_interval)
            if self.state is not SessionState.LOGGED_IN:
                return
            try:
                await self.broker.session.keep_alive()
                self._last_keep_alive = self._clock.now()
            except (SessionExpired, AuthRequired):
                self._mark_expired("The brokerage session expired (keep-alive refused)")
                # A successful re-auth starts a fresh keep-alive task; this one ends either way.
                await self._reauthenticate()
                return
            except Exception as exc:  # a network blip is not an expiry; try again next interval
                self._last_error = f"Keep-alive failed: {type(exc).__name__}"
                log.warning("%s", self._last_error)

    async def close(self) -> None:
        """Stop the keep-alive task."""
        task, self._keepalive_task = self._keepalive_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
