"""BEPS, Fidelity's account-event bus: the protocol of one connection (docs/fidelity-protocol.md, BEPS).

BEPS is an AWS AppSync GraphQL subscription over a WebSocket (subprotocol ``graphql-ws``). The stream URL's
``{0}`` is replaced by the URL-encoded base64 of ``{"Authorization": <token>, "host": <host>}``. One
connection: ``connection_init`` -> ``connection_ack`` (carrying ``connectionTimeoutMs``) -> ``start`` with the
subscription document and its variables (the payload's ``data`` is a JSON *string*;
``extensions.authorization`` repeats the auth object) -> ``data`` messages, one event each, and ``ka``
keep-alives. A connection that says nothing for ``connectionTimeoutMs`` is dead. Closing sends ``stop``,
then closes the socket.

The feed (``beps_feed``) configures itself from the login: a token from the token endpoint, the member id
from the security context, the decompiled host and URL (see ``beps_auth``). Each FTSERVICE_BEPS_*
variable that is set overrides its part. A fetched token is renewed before it expires, make-before-break:
a second socket is opened with the new token and subscribed, the old one is stopped and read until it says
``complete`` (events on both are passed on once, by ``eventId``), then closed; nothing is lost to the
switch. Reconnects after a failure, and their backoff, belong to the account-event hub; a reconnect
reuses the token while it is fresh.

The token (and its encoded forms, which are as good as the token) never reach a log line or an exception message.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp

from ftdesk.domain.clock import Clock
from ftdesk.domain.errors import BrokerError, StreamingUnavailable
from ftdesk.domain.events import AccountEvent, account_event

if TYPE_CHECKING:
    from ftdesk.config import Settings

log = logging.getLogger(__name__)

SUBPROTOCOL = "graphql-ws"
SUBSCRIPTION_ID = "1"
SUBSCRIPTION_FIELD = "subScribeBEPSEvent"
DEFAULT_CONNECTION_TIMEOUT_MS = 300_000  # what the decompiled app's sample ack announces

# Shipped with the app as Queries/BepsSubscription.graphql.
SUBSCRIPTION_DOCUMENT = """subscription Subscription($subscribeId: String!, $consumerAppId: String!) {
  subScribeBEPSEvent(subscribeId: $subscribeId, consumerAppId: $consumerAppId) {
    eventId subscribeId source eventCreatedTime eventType handleTime hasError message desc consumerAppId
  }
}"""

_MESSAGE_LIMIT = 300  # characters of upstream text kept in an error message


@dataclass(frozen=True)
class BepsConfig:
    """The FTSERVICE_BEPS_* settings: what a BEPS connection needs."""

    token: str | None = field(default=None, repr=False)
    host: str | None = None
    stream_url: str | None = None
    mid: str | None = None
    app_id: str | None = "ATN"
    token_url: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> BepsConfig:
        """Take the FTSERVICE_BEPS_* values of the service settings."""
        return cls(
            token=settings.beps_token,
            host=settings.beps_host,
            stream_url=settings.beps_stream_url,
            mid=settings.beps_mid,
            app_id=settings.beps_app_id,
            token_url=settings.beps_token_url,
        )

    def missing(self) -> list[str]:
        """Return the names of the FTSERVICE_BEPS_* variables still needed, in settings order."""
        wanted = {
            "FTSERVICE_BEPS_TOKEN": self.token,
            "FTSERVICE_BEPS_HOST": self.host,
            "FTSERVICE_BEPS_STREAM_URL": self.stream_url,
            "FTSERVICE_BEPS_MID": self.mid,
            "FTSERVICE_BEPS_APP_ID": self.app_id,
        }
        return [name for name, value in wanted.items() if not value]

    def authorization(self) -> dict[str, str]:
        """Return the auth object BEPS expects in the URL and in the start message."""
        return {"Authorization": self._require(self.token), "host": self._require(self.host)}

    def encoded_authorization(self) -> str:
        """Return the base64 of the compact JSON auth object (what ``{0}`` stands for, before URL-encoding)."""
        text = json.dumps(self.authorization(), separators=(",", ":"))
        return base64.b64encode(text.encode()).decode("ascii")

    def url(self) -> str:
        """Return the stream URL with ``{0}`` replaced by the URL-encoded auth header."""
        # str.replace, not str.format: a template may hold other braces (it is a URL, not a format string).
        return self._require(self.stream_url).replace("{0}", quote(self.encoded_authorization(), safe=""))

    def secrets(self) -> list[str]:
        """Return every form of the token that could show up in text, longest first."""
        if not self.token:
            return []
        forms = [self.token]
        if self.host:
            encoded = self.encoded_authorization()
            forms += [encoded, quote(encoded, safe="")]
        return sorted(forms, key=len, reverse=True)

    @staticmethod
    def _require(value: str | None) -> str:
        if not value:
            raise StreamingUnavailable("BEPS is not configured")
        return value


def unavailable_reason(config: BepsConfig) -> str | None:
    """Say which FTSERVICE_BEPS_* variables are missing, or None when BEPS can run."""
    missing = config.missing()
    if not missing:
        return None
    names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
    return f"Account events need {names} (not set)"


# --- events ------------------------------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def event_time(value: Any, clock: Clock) -> str:
    """Return an upstream ``eventCreatedTime`` as ISO 8601 (epoch seconds or ms, or ISO text); else now."""
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric or (isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value.strip())):
        number = float(value)
        seconds = number / 1000 if number > 1e11 else number  # 1e11 s is the year 5138: that is ms
        with contextlib.suppress(OverflowError, OSError, ValueError):
            return datetime.fromtimestamp(seconds, UTC).isoformat()
    if isinstance(value, str) and value.strip():
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(value.strip()).isoformat()
    return clock.now().isoformat()


def to_account_event(item: Mapping[str, Any], clock: Clock) -> AccountEvent:
    """Map one ``subScribeBEPSEvent`` object: its code named by the one table, the other fields (snake_case) in desc."""
    desc = {_snake(str(key)): value for key, value in item.items() if key != "eventType"}
    code = item.get("eventType")
    return account_event(
        None if code is None else str(code), desc, time=event_time(item.get("eventCreatedTime"), clock), source="beps"
    )


# --- the connection ----------------------------------------------------------------------------


class _Scrubber:
    """Masks the token (and its encoded forms) in text that may reach a log or an exception."""

    def __init__(self, secrets: list[str]) -> None:
        self._secrets = secrets

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def upstream_errors(self, payload: Any) -> str:
        """Return the ``errors`` of an AppSync error payload as one short line."""
        errors = payload.get("errors") if isinstance(payload, dict) else None
        if not isinstance(errors, list) or not errors:
            text = json.dumps(payload) if payload is not None else "no details"
            return self(text[:_MESSAGE_LIMIT])
        parts = []
        for error in errors:
            if isinstance(error, dict):
                kind = error.get("errorType") or error.get("errorCode") or "Error"
                parts.append(f"{kind}: {error.get('message') or 'no message'}")
            else:
                parts.append(str(error))
        return self("; ".join(parts)[:_MESSAGE_LIMIT])


class BepsConnection:
    """One open, subscribed BEPS socket (see the module docstring); ``events()`` is read once."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        ws: aiohttp.ClientWebSocketResponse,
        *,
        clock: Clock,
        scrub: _Scrubber,
        ack_timeout: float,
    ) -> None:
        self._http = http
        self._ws = ws
        self._clock = clock
        self._scrub = scrub
        self._ack_timeout = ack_timeout
        self._keepalive_timeout = DEFAULT_CONNECTION_TIMEOUT_MS / 1000
        self._alive_until = clock.monotonic() + ack_timeout
        self._receiving: asyncio.Future[aiohttp.WSMessage] | None = None
        self._closed = False

    @property
    def keepalive_timeout(self) -> float:
        """Return the seconds of silence (the ack's ``connectionTimeoutMs``) after which the socket is dead."""
        return self._keepalive_timeout

    async def events(self, stop_at: float | None = None) -> AsyncIterator[AccountEvent]:
        """Yield account events until the socket closes; raise ``BrokerError`` when BEPS fails or goes silent.

        With ``stop_at`` (the clock's monotonic time) the iteration also ends, quietly, at that time; the
        socket stays open and a later ``events()`` goes on reading it.
        """
        while not self._closed:
            deadline = self._alive_until if stop_at is None else min(self._alive_until, stop_at)
            frame = await self._receive_until(deadline)
            if frame is None:
                if stop_at is not None and self._clock.monotonic() >= stop_at:
                    return
                raise BrokerError(f"BEPS sent no keep-alive for {self._keepalive_timeout:g} s: the connection is dead")
            if frame.type is aiohttp.WSMsgType.TEXT:
                # Any message shows the socket is alive, not only "ka".
                self._alive_until = self._clock.monotonic() + self._keepalive_timeout
                for event in self._on_message(frame.data):
                    yield event
            elif frame.type is aiohttp.WSMsgType.ERROR:
                raise BrokerError(f"BEPS connection error: {type(frame.data).__name__}")
            elif frame.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                return

    async def close(self) -> None:
        """Send ``stop``, close the socket and release the client; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._ws.closed:
                with contextlib.suppress(Exception):
                    await self.send({"id": SUBSCRIPTION_ID, "type": "stop"})
            with contextlib.suppress(Exception):
                await self._ws.close()
        finally:
            receiving, self._receiving = self._receiving, None
            if receiving is not None and not receiving.done():
                receiving.cancel()
            elif receiving is not None and not receiving.cancelled():
                receiving.exception()  # read, so a failed receive nobody waited for is not reported as lost
            await self._http.close()

    # --- handshake (called by the feed) ---------------------------------------------------------

    async def handshake(self, subscription: dict[str, Any]) -> None:
        """Initialise the socket, wait for BEPS's ack and start the subscription."""
        await self.send({"type": "connection_init"})
        deadline = self._clock.monotonic() + self._ack_timeout
        while True:
            frame = await self._receive_until(deadline)
            if frame is None:
                raise BrokerError(f"BEPS did not acknowledge the connection within {self._ack_timeout:g} s")
            if frame.type is not aiohttp.WSMsgType.TEXT:
                raise BrokerError("BEPS closed the connection before acknowledging it")
            message = self._decode(frame.data)
            kind = message.get("type")
            if kind == "connection_ack":
                self._keepalive_timeout = _connection_timeout(message.get("payload"))
                break
            if kind in ("connection_error", "error"):
                raise BrokerError(f"BEPS refused the connection: {self._scrub.upstream_errors(message.get('payload'))}")
            # "ka" may come before the ack; anything else is not for this stage.
        await self.send({"id": SUBSCRIPTION_ID, "type": "start", "payload": subscription})
        self._alive_until = self._clock.monotonic() + self._keepalive_timeout

    # --- wire -----------------------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        """Send one protocol message as compact JSON."""
        await self._ws.send_str(json.dumps(message, separators=(",", ":")))

    async def _receive_until(self, deadline: float) -> aiohttp.WSMessage | None:
        """Return the next frame, or None when the clock reaches ``deadline`` first.

        One receive stays pending across calls (aiohttp allows only one at a time), so a deadline never
        cancels a read half-way.
        """
        if self._receiving is None:
            self._receiving = asyncio.ensure_future(self._ws.receive())
        receiving = self._receiving
        while not receiving.done():
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                return None
            sleeper: asyncio.Future[Any] = asyncio.ensure_future(self._clock.sleep(remaining))
            try:
                await asyncio.wait((receiving, sleeper), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
        self._receiving = None
        if receiving.cancelled():  # close() ended the read
            return aiohttp.WSMessage(aiohttp.WSMsgType.CLOSED, None, None)
        return receiving.result()

    def _decode(self, text: str) -> dict[str, Any]:
        try:
            message = json.loads(text)
        except ValueError:
            log.warning("BEPS sent a frame that is not JSON; ignored")
            return {}
        return message if isinstance(message, dict) else {}

    def _on_message(self, text: str) -> list[AccountEvent]:
        message = self._decode(text)
        kind = message.get("type")
        if kind == "data" and str(message.get("id")) == SUBSCRIPTION_ID:
            return self._events_of(message.get("payload"))
        if kind in ("error", "connection_error"):
            raise BrokerError(f"BEPS ended the subscription: {self._scrub.upstream_errors(message.get('payload'))}")
        if kind == "complete":
            raise BrokerError("BEPS completed the subscription (it sends no more events)")
        # "ka", "start_ack" and anything unknown carry no event.
        return []

    def _events_of(self, payload: Any) -> list[AccountEvent]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if isinstance(data, str):  # tolerated: the start message carries its data as a string
            with contextlib.suppress(ValueError):
                data = json.loads(data)
        if isinstance(payload, dict) and payload.get("errors"):
            # A GraphQL error for one event does not end the subscription; the next event may be fine.
            log.warning("BEPS reported an error with an event: %s", self._scrub.upstream_errors(payload))
        item = data.get(SUBSCRIPTION_FIELD) if isinstance(data, dict) else None
        items = item if isinstance(item, list) else [item]
        events = [to_account_event(entry, self._clock) for entry in items if isinstance(entry, dict)]
        if not events and not (isinstance(payload, dict) and payload.get("errors")):
            log.warning("BEPS sent a data message without a %s object; ignored", SUBSCRIPTION_FIELD)
        return events


def _connection_timeout(payload: Any) -> float:
    value = payload.get("connectionTimeoutMs") if isinstance(payload, dict) else None
    try:
        milliseconds = float(value) if value is not None and not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        milliseconds = 0.0
    if not milliseconds > 0:
        milliseconds = DEFAULT_CONNECTION_TIMEOUT_MS
    return milliseconds / 1000
