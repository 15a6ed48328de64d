"""A fake AppSync real-time endpoint on a real loopback socket, speaking BEPS.

On upgrade it insists on the ``graphql-ws`` subprotocol and on a ``header`` query parameter holding the
base64 of ``{"Authorization": <token>, "host": <host>}``, and answers 401 when either is wrong. Then
it expects ``connection_init``, answers ``connection_ack`` with ``connectionTimeoutMs``, checks each
``start`` (``payload.data`` a JSON string with the BEPS document and both variables,
``extensions.authorization`` equal to the auth object) and acknowledges it with ``start_ack``, or answers
``error``. ``stop`` ends a subscription with ``complete``.

Tests push events with ``push()``, keep the socket alive with ``keepalive()``, mute it with ``silent``,
hold the ack back with ``ack = False``, break the connection with ``kill()``, refuse upgrades with
``refuse()``, and end things with ``connection_error()`` / ``subscription_error()`` / ``complete()``.

Tokens: the one given to the constructor is always accepted (a token set in FTSERVICE_BEPS_TOKEN); the fake
Fidelity token endpoint adds more with ``issue_token()``: JWTs whose ``exp`` claim is their end on the fake's
clock, refused (401 on upgrade) once that time has passed, as an expired AppSync token is. ``expire_sessions()``
drops the connections whose token has run out, as AppSync ends a connection at its token's expiry.

Served both at ``/graphql/realtime`` and at ``/spservice.fidelity.com/graphql/realtime`` so it also works
behind the upstream router.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from ftdesk.domain.clock import Clock
from tests.fakes.clock import ManualClock

BEPS_HOST = "spservice.fidelity.com"
REALTIME_PATH = "/graphql/realtime"
STREAM_URL_TEMPLATE = f"wss://{BEPS_HOST}{REALTIME_PATH}?header={{0}}&payload=e30="


@dataclass
class Subscription:
    """What one ``start`` asked for."""

    id: str
    query: str
    variables: dict[str, Any]
    authorization: Any


@dataclass
class FakeAppSyncSession:
    """One accepted connection: what the client sent and what it subscribed to."""

    ws: web.WebSocketResponse
    protocol: str | None
    token: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    raw_starts: list[dict[str, Any]] = field(default_factory=list)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    closed: bool = False

    def types(self) -> list[str]:
        """Return the ``type`` of every message the client sent, in order."""
        return [str(message.get("type")) for message in self.messages]


class FakeAppSync:
    """The fake server (see the module docstring)."""

    def __init__(
        self, *, token: str, host: str = BEPS_HOST, connection_timeout_ms: int = 300_000, clock: Clock | None = None
    ) -> None:
        self.token = token
        self.clock: Clock = clock or ManualClock()
        self.issued: dict[str, float] = {}  # token -> its exp (epoch seconds of the clock)
        self._serial = itertools.count(1)
        self.host = host
        self.connection_timeout_ms = connection_timeout_ms
        self.ack = True
        self.silent = False
        self.attempts = 0
        self.rejections: list[str] = []  # why upgrades were refused, in order
        self.sessions: list[FakeAppSyncSession] = []
        self._refusals: list[int] = []
        self._runner: web.AppRunner | None = None
        self._port = 0

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on a free loopback port."""
        app = web.Application()
        app.router.add_get(REALTIME_PATH, self._handle)
        app.router.add_get(f"/{BEPS_HOST}{REALTIME_PATH}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        """Drop every connection and stop listening."""
        await self.kill()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        """Return the http base URL (for the upstream router)."""
        return f"http://127.0.0.1:{self._port}"

    # --- what tests do --------------------------------------------------------------------------

    def refuse(self, count: int, status: int = 503) -> None:
        """Answer the next ``count`` upgrades with this HTTP status instead of a WebSocket."""
        self._refusals.extend([status] * count)

    def stop_refusing(self) -> None:
        """Accept upgrades again (drop the refusals still queued)."""
        self._refusals.clear()

    async def push(self, event: dict[str, Any]) -> int:
        """Send one BEPS event to every started subscription; return how many got it."""
        sent = 0
        for session in self.open_sessions():
            for subscription in list(session.subscriptions.values()):
                message = {"id": subscription.id, "type": "data", "payload": {"data": {"subScribeBEPSEvent": event}}}
                if await self._send(session, message):
                    sent += 1
        return sent

    async def keepalive(self) -> int:
        """Send ``ka`` on every open connection; return how many got it."""
        return sum([await self._send(session, {"type": "ka"}) for session in self.open_sessions()])

    async def connection_error(self, error_type: str, message: str) -> None:
        """Send ``connection_error`` on every open connection, then close it (as AppSync does)."""
        for session in self.open_sessions():
            errors = [{"errorType": error_type, "message": message}]
            await self._send(session, {"type": "connection_error", "payload": {"errors": errors}})
            await session.ws.close()

    async def subscription_error(self, error_type: str, message: str) -> None:
        """Send ``error`` for every started subscription."""
        for session in self.open_sessions():
            for subscription in list(session.subscriptions.values()):
                errors = [{"errorType": error_type, "message": message}]
                await self._send(session, {"id": subscription.id, "type": "error", "payload": {"errors": errors}})

    async def complete(self) -> None:
        """End every subscription from the server side."""
        for session in self.open_sessions():
            for subscription_id in list(session.subscriptions):
                session.subscriptions.pop(subscription_id)
                await self._send(session, {"id": subscription_id, "type": "complete"})

    async def kill(self) -> None:
        """Drop every open connection without a close handshake (like a network failure)."""
        for session in self.open_sessions():
            session.closed = True
            transport = session.ws._req.transport if session.ws._req is not None else None
            if transport is not None:
                transport.abort()

    def issue_token(self, lifetime: float, subject: str) -> str:
        """Return a new JWT (unsigned) that this server accepts until ``lifetime`` seconds from the clock's now."""
        exp = self.clock.now().timestamp() + lifetime

        def part(data: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

        token = f"{part({'alg': 'none'})}.{part({'sub': subject, 'exp': exp, 'n': next(self._serial)})}.sig"
        self.issued[token] = exp
        return token

    def _token_problem(self, token: Any) -> str | None:
        if token == self.token:
            return None
        exp = self.issued.get(token) if isinstance(token, str) else None
        if exp is None:
            return "wrong token in header"
        if self.clock.now().timestamp() >= exp:
            return "token expired"
        return None

    async def expire_sessions(self) -> int:
        """Drop the open connections whose token has expired; return how many."""
        dropped = 0
        for session in self.open_sessions():
            if self._token_problem(session.token) == "token expired":
                await session.ws.close()
                session.closed = True
                dropped += 1
        return dropped

    def open_sessions(self) -> list[FakeAppSyncSession]:
        """Return the connections still open."""
        return [session for session in self.sessions if not session.closed]

    @property
    def current(self) -> FakeAppSyncSession | None:
        """Return the newest open connection, if any."""
        sessions = self.open_sessions()
        return sessions[-1] if sessions else None

    def subscribed(self) -> int:
        """Return how many subscriptions are started on open connections."""
        return sum(len(session.subscriptions) for session in self.open_sessions())

    # --- protocol -------------------------------------------------------------------------------

    def _authorization(self, session: FakeAppSyncSession) -> dict[str, str]:
        return {"Authorization": session.token, "host": self.host}

    def _upgrade_problem(self, request: web.Request) -> str | None:
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        if "graphql-ws" not in offered:
            return "subprotocol graphql-ws not offered"
        header = request.query.get("header")
        if not header:
            return "no header query parameter"
        try:
            auth = json.loads(base64.b64decode(header, validate=True))
        except (binascii.Error, ValueError):
            return "header is not base64 JSON"
        if not isinstance(auth, dict) or auth.get("host") != self.host:
            return "wrong host in header"
        return self._token_problem(auth.get("Authorization"))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.attempts += 1
        if self._refusals:
            return web.Response(status=self._refusals.pop(0), text="refused by the fake")
        problem = self._upgrade_problem(request)
        if problem is not None:
            self.rejections.append(problem)
            body = {"errors": [{"errorType": "UnauthorizedException", "message": "You are not authorized"}]}
            return web.json_response(body, status=401)
        ws = web.WebSocketResponse(protocols=("graphql-ws",))
        await ws.prepare(request)
        header = json.loads(base64.b64decode(request.query["header"]))
        session = FakeAppSyncSession(ws=ws, protocol=ws.ws_protocol, token=str(header.get("Authorization")))
        self.sessions.append(session)
        try:
            async for frame in ws:
                if frame.type is WSMsgType.TEXT:
                    await self._on_message(session, json.loads(frame.data))
        finally:
            session.closed = True
        return ws

    async def _on_message(self, session: FakeAppSyncSession, message: dict[str, Any]) -> None:
        session.messages.append(message)
        kind = message.get("type")
        if kind == "connection_init":
            if self.ack:
                ack = {"type": "connection_ack", "payload": {"connectionTimeoutMs": self.connection_timeout_ms}}
                await self._send(session, ack)
        elif kind == "start":
            await self._start(session, message)
        elif kind == "stop":
            subscription_id = str(message.get("id"))
            if session.subscriptions.pop(subscription_id, None) is not None:
                await self._send(session, {"id": subscription_id, "type": "complete"})

    async def _start(self, session: FakeAppSyncSession, message: dict[str, Any]) -> None:
        session.raw_starts.append(message)
        subscription_id = str(message.get("id"))
        payload = message.get("payload") or {}
        problem = None
        data = payload.get("data")
        document: Any = None
        if not isinstance(data, str):
            problem = "payload.data must be a JSON string"
        else:
            document = json.loads(data)
            variables = document.get("variables") or {}
            if "subScribeBEPSEvent" not in str(document.get("query")):
                problem = "not the BEPS subscription"
            elif not all(isinstance(variables.get(name), str) for name in ("subscribeId", "consumerAppId")):
                problem = "subscribeId and consumerAppId are required"
        authorization = (payload.get("extensions") or {}).get("authorization")
        if problem is None and authorization != self._authorization(session):
            problem = "extensions.authorization does not match"
        if problem is not None:
            errors = [{"errorType": "BadRequestException", "message": problem}]
            await self._send(session, {"id": subscription_id, "type": "error", "payload": {"errors": errors}})
            return
        session.subscriptions[subscription_id] = Subscription(
            id=subscription_id,
            query=str(document["query"]),
            variables=dict(document["variables"]),
            authorization=authorization,
        )
        await self._send(session, {"id": subscription_id, "type": "start_ack"})

    async def _send(self, session: FakeAppSyncSession, message: dict[str, Any]) -> bool:
        if self.silent or session.closed:
            return False
        with contextlib.suppress(ConnectionError, RuntimeError):
            await session.ws.send_str(json.dumps(message))
            return True
        return False
