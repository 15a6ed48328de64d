"""The Fidelity session group: login, logout and keep-alive, and the logged-in HTTP client the other groups use.

A login builds a fresh ``FidelityHttp`` (fresh cookie jar) and runs the login handshake; the session
lives in that client's cookies, which the MDDS and BEPS feeds also read through ``cookies()``. Every other
group asks ``require()`` for the client at each call, so a logout or a new login is seen at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ftdesk.brokers.fidelity.answer_reuse import EventWatch
from ftdesk.brokers.fidelity.auth import SecurityContext, extend_session, log_in, log_out
from ftdesk.brokers.fidelity.config import FidelityConfig
from ftdesk.brokers.fidelity.http import FidelityHttp
from ftdesk.brokers.fidelity.politeness import Politeness
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import AuthRequired
from ftdesk.domain.freshness import unreported
from ftdesk.domain.session import BrokerSession, Credentials

log = logging.getLogger(__name__)


class FidelitySession:
    """The login session (see the module docstring); the politeness budgets outlive it."""

    def __init__(
        self,
        config: FidelityConfig,
        router: UpstreamRouter,
        clock: Clock,
        politeness: Politeness,
        watch: EventWatch | None = None,
    ) -> None:
        self._config = config
        self._router = router
        self._clock = clock
        # One set of budgets for the broker, not per login: a re-login loop must not reset them.
        self._politeness = politeness
        # Whether account events are live (answer_reuse): it outlives logins, as the event stream does.
        self._watch = watch or EventWatch()
        self._http: FidelityHttp | None = None
        self._login_lock = asyncio.Lock()
        self.security = SecurityContext()

    async def login(self, credentials: Credentials) -> BrokerSession:
        """Log in from scratch with a fresh cookie jar; raise ``LoginFailed``/``TotpRequired``/``BrokerError``."""
        async with self._login_lock:
            self._politeness.logins.take()  # refused at once when over budget: never a hang
            await self.close()
            http = FidelityHttp(self._config, self._router, self._clock, self._politeness, self._watch)
            try:
                # A re-login inside a read is not what the reader asked for: its cached security context
                # must not label the read's answer as cached.
                with unreported():
                    self.security = await log_in(http, credentials, self._clock)
            except BaseException:
                # A half-finished login is thrown away, as the app does: the next try starts clean.
                await http.close()
                raise
            self._http = http
            log.info("Logged in to Fidelity (security context %s)", "loaded" if self.security.raw else "unavailable")
            return BrokerSession(
                username=credentials.username, logged_in_at=self._clock.now(), member_id=self.security.member_id
            )

    async def logout(self) -> None:
        """End the upstream session and drop the cookies; idempotent, and never fails on upstream errors."""
        async with self._login_lock:
            http = self._http
            if http is not None and not http.closed:
                with contextlib.suppress(Exception):
                    await log_out(http)
            await self.close()

    async def keep_alive(self) -> None:
        """Extend the session; raise ``SessionExpired`` when Fidelity refuses, ``AuthRequired`` when logged out."""
        await extend_session(self.require())

    def require(self) -> FidelityHttp:
        """Return the logged-in HTTP client; raise ``AuthRequired`` when logged out."""
        http = self._http
        if http is None or http.closed:
            raise AuthRequired("Not logged in to Fidelity: log in first")
        return http

    def cookies(self) -> dict[str, str]:
        """Return the session cookies by name (empty when logged out): what MDDS and BEPS authenticate with."""
        http = self._http
        return {} if http is None or http.closed else http.cookies()

    @property
    def upstream_calls(self) -> int:
        """Return how many HTTP calls the current login session has sent (for diagnostics and tests)."""
        return 0 if self._http is None else self._http.upstream_calls

    async def close(self) -> None:
        """Drop the session (without logging out upstream): close its HTTP client, forget its security context."""
        http, self._http = self._http, None
        self.security = SecurityContext()
        if http is not None:
            await http.close()
