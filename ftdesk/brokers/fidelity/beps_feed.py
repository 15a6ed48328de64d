"""The BEPS feed: configured from the login and the FTSERVICE_BEPS_* overrides, renewing its token.

The protocol itself (one socket, the handshake, the events) lives in ``beps``; where the token, host, URL and
member id come from in ``beps_auth``. See both module docstrings for what is known about BEPS and
how sure it is (docs/fidelity-protocol.md, BEPS).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import aiohttp

from ftdesk.brokers.base import AccountEventConnection
from ftdesk.brokers.fidelity.beps import (
    SUBPROTOCOL,
    SUBSCRIPTION_DOCUMENT,
    SUBSCRIPTION_ID,
    BepsConfig,
    BepsConnection,
    _Scrubber,
    unavailable_reason,
)
from ftdesk.brokers.fidelity.beps_auth import DEFAULT_HOST, DEFAULT_STREAM_URL, DEFAULT_TOKEN_LIFETIME, BepsToken
from ftdesk.brokers.fidelity.routing import UpstreamRouter
from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, StreamingUnavailable
from ftdesk.domain.events import AccountEvent

log = logging.getLogger(__name__)


# --- the feed ----------------------------------------------------------------------------------


class BepsLogin(Protocol):
    """What a self-configuring feed needs from the brokerage login (the Fidelity broker provides it)."""

    def beps_member_id(self) -> str | None:
        """Return the member id (MID) of the security context, or None."""

    async def fetch_beps_token(self) -> BepsToken:
        """Fetch a new BEPS token; raise ``AuthRequired``/``SessionExpired``/``BrokerError`` saying why not."""


class BepsAccountEventFeed:
    """Opens BEPS subscriptions, configured from the login and the FTSERVICE_BEPS_* overrides (module docstring).

    Without ``login`` the feed runs on the overrides alone, and says which are missing.
    """

    def __init__(
        self,
        config: BepsConfig,
        *,
        router: UpstreamRouter,
        clock: Clock,
        login: BepsLogin | None = None,
        connect_timeout: float = 10.0,
        ack_timeout: float = 10.0,
        close_timeout: float = 2.0,
        drain_timeout: float = 5.0,
        renew_retry: float = 30.0,
    ) -> None:
        self._config = config
        self._router = router
        self._clock = clock
        self._login = login
        self._connect_timeout = connect_timeout
        self._ack_timeout = ack_timeout
        self._close_timeout = close_timeout
        self.drain_timeout = drain_timeout  # how long an old socket may finish after a renewal
        self.renew_retry = renew_retry  # seconds before a failed renewal is tried again
        self._token: BepsToken | None = None
        self.token_fetches = 0
        self.renewals = 0
        self.last_renewal_error: str | None = None

    def unavailable_reason(self) -> str | None:
        """Name the FTSERVICE_BEPS_* variables that are missing (only without a login to configure from)."""
        if self._login is not None:
            return None
        return unavailable_reason(self._config)

    def detail(self) -> str:
        """Say where each part of the configuration comes from, and how the token is kept fresh."""
        config = self._config
        if config.token:
            token = "token from FTSERVICE_BEPS_TOKEN (not renewed)"
        elif self._login is None:
            token = "no token"
        else:
            held = self._token
            if held is None:
                token = "token fetched from the token endpoint at connect"
            else:
                lifetime = (
                    f"lifetime from {held.lifetime_source}"
                    if held.expires_at is not None
                    else f"lifetime not stated by the upstream: renewed every {DEFAULT_TOKEN_LIFETIME:g} s"
                )
                token = f"token from the token endpoint ({lifetime}; renewed {self.renewals} times)"
        mid = "member id from FTSERVICE_BEPS_MID" if config.mid else "member id from the security context"
        where = (
            "host and URL from settings"
            if config.host and config.stream_url
            else "host and URL: the default spservice.fidelity.com (inferred parts overridable)"
        )
        return f"{token}; {mid}; {where}"

    async def connect(self) -> AccountEventConnection:
        """Open and subscribe a socket; raise ``StreamingUnavailable``/``BrokerError`` saying why not."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise StreamingUnavailable(reason)
        config, token = await self.resolve(fresh=False)
        try:
            first = await self.open_connection(config)
        except BrokerError:
            self._token = None  # a refused token is not offered again
            raise
        if token is None:
            return first
        return RenewingBepsConnection(self, first, token, self._clock)

    async def resolve(self, *, fresh: bool) -> tuple[BepsConfig, BepsToken | None]:
        """Return the whole configuration (overrides first) and the fetched token it uses, if any."""
        config = self._config
        login = self._login
        if login is None:
            return config, None
        token: BepsToken | None = None
        value = config.token
        if not value:
            token = self._token
            now = self._clock.monotonic()
            if fresh or token is None or token.renew_at(now) <= now:
                token = await login.fetch_beps_token()
                self.token_fetches += 1
                if token.expires_at is None and self.token_fetches == 1:
                    log.warning(
                        "The BEPS token answer does not say how long the token lives: renewing it every %g s",
                        DEFAULT_TOKEN_LIFETIME,
                    )
                self._token = token
            value = token.value
        mid = config.mid or login.beps_member_id()
        if not mid:
            raise BrokerError(
                "BEPS needs the member id (MID), and the security context of this login had none: "
                "set FTSERVICE_BEPS_MID"
            )
        resolved = BepsConfig(
            token=value,
            host=config.host or DEFAULT_HOST,
            stream_url=config.stream_url or DEFAULT_STREAM_URL,
            mid=mid,
            app_id=config.app_id or "ATN",
        )
        return resolved, token

    async def open_connection(self, config: BepsConfig) -> BepsConnection:
        """Open the socket, wait for the ack and start the subscription; raise ``BrokerError`` on failure."""
        scrub = _Scrubber(config.secrets())
        subscription = {
            "data": json.dumps(
                {
                    "query": SUBSCRIPTION_DOCUMENT,
                    "variables": {"subscribeId": config.mid, "consumerAppId": config.app_id},
                }
            ),
            "extensions": {"authorization": config.authorization()},
        }
        http = aiohttp.ClientSession(
            connector=self._router.connector(),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout),
        )
        connection: BepsConnection | None = None
        try:
            ws = await asyncio.wait_for(
                http.ws_connect(
                    self._router.url(config.url()),
                    protocols=(SUBPROTOCOL,),
                    timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=self._close_timeout),
                ),
                self._connect_timeout,
            )
            connection = BepsConnection(http, ws, clock=self._clock, scrub=scrub, ack_timeout=self._ack_timeout)
            if ws.protocol != SUBPROTOCOL:
                raise BrokerError(f"BEPS did not accept the {SUBPROTOCOL} subprotocol")
            await connection.handshake(subscription)
        except BaseException as exc:
            if connection is not None:
                await connection.close()
            else:
                await http.close()
            raise _connect_error(exc, scrub) from None
        log.info("BEPS account-event subscription started (keep-alive timeout %g s)", connection.keepalive_timeout)
        return connection


class RenewingBepsConnection:
    """A BEPS subscription that outlives its tokens: renewed make-before-break (see the module docstring)."""

    _SEEN_LIMIT = 1000

    def __init__(self, feed: BepsAccountEventFeed, first: BepsConnection, token: BepsToken, clock: Clock) -> None:
        self._feed = feed
        self._current = first
        self._token = token
        self._clock = clock
        self._renew_at = token.renew_at(clock.monotonic())
        self._seen: dict[str, None] = {}  # eventIds passed on, oldest first
        self._closed = False

    async def events(self) -> AsyncIterator[AccountEvent]:
        """Yield events across token renewals until the socket closes; raise ``BrokerError`` on failure."""
        while not self._closed:
            async for event in self._current.events(stop_at=self._renew_at):
                if self._fresh(event):
                    yield event
            if self._closed or self._clock.monotonic() < self._renew_at:
                return  # the socket closed (not a renewal): the hub reconnects
            old = await self._renew()
            if old is not None:
                async for event in self._drain(old):
                    yield event

    async def close(self) -> None:
        """Close the current socket; idempotent."""
        self._closed = True
        await self._current.close()

    async def _renew(self) -> BepsConnection | None:
        """Switch to a socket on a new token; return the old socket, or None (retry later) on failure."""
        feed = self._feed
        try:
            config, token = await feed.resolve(fresh=True)
            new = await feed.open_connection(config)
        except Exception as exc:
            now = self._clock.monotonic()
            expires = self._token.expires_at
            reason = getattr(exc, "message", None) or type(exc).__name__
            feed.last_renewal_error = f"Could not renew the BEPS token: {reason}"
            if expires is not None and expires - now <= 1.0:
                raise BrokerError(f"The BEPS token expired and no new one could be had: {reason}") from None
            wait = feed.renew_retry if expires is None else min(feed.renew_retry, (expires - now) / 2)
            log.warning("%s; trying again in %g s", feed.last_renewal_error, wait)
            self._renew_at = now + wait
            return None
        assert token is not None  # a fetched token: this connection exists only for those
        old, self._current, self._token = self._current, new, token
        self._renew_at = token.renew_at(self._clock.monotonic())
        feed.renewals += 1
        feed.last_renewal_error = None
        log.info("BEPS token renewed; the subscription moved to a new connection")
        return old

    async def _drain(self, old: BepsConnection) -> AsyncIterator[AccountEvent]:
        """Stop the old subscription and pass on what it still delivers until BEPS completes it."""
        try:
            with contextlib.suppress(Exception):
                await old.send({"id": SUBSCRIPTION_ID, "type": "stop"})
            async for event in old.events(stop_at=self._clock.monotonic() + self._feed.drain_timeout):
                if self._fresh(event):
                    yield event
        except BrokerError:
            pass  # "complete" (the expected end), or the old socket failing: the new one carries on
        finally:
            await old.close()

    def _fresh(self, event: AccountEvent) -> bool:
        """Say whether an event was not passed on yet (the two sockets of a renewal may both carry it)."""
        event_id = event.desc.get("event_id")
        if not isinstance(event_id, str) or not event_id:
            return True
        if event_id in self._seen:
            return False
        self._seen[event_id] = None
        if len(self._seen) > self._SEEN_LIMIT:
            del self._seen[next(iter(self._seen))]
        return True


def _connect_error(exc: BaseException, scrub: _Scrubber) -> BaseException:
    """Return the error to raise for a failed connect, never carrying the URL (it holds the token)."""
    if isinstance(exc, aiohttp.WSServerHandshakeError):
        if exc.status in (401, 403):
            return BrokerError(
                f"BEPS refused the token (HTTP {exc.status}): it may have expired or be for another host "
                "(FTSERVICE_BEPS_TOKEN, FTSERVICE_BEPS_HOST override them)"
            )
        return BrokerError(f"BEPS refused the connection (HTTP {exc.status})")
    if isinstance(exc, BrokerError):
        return BrokerError(scrub(exc.message))
    if isinstance(exc, TimeoutError):
        return BrokerError("Cannot reach BEPS: the connection timed out")
    if isinstance(exc, aiohttp.ClientError | OSError):
        # Connector errors name host and port only, but scrub anyway: some aiohttp errors carry the URL.
        return BrokerError(scrub(f"Cannot reach BEPS: {type(exc).__name__}: {exc}"))
    return exc
