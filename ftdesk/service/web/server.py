"""Run the aiohttp application on a real socket, and stop it without waiting on open streams."""

from __future__ import annotations

import asyncio
import errno
import logging
import uuid
from typing import Any

from aiohttp import http_exceptions as hx
from aiohttp import web

from ftdesk.domain import errors as e
from ftdesk.logs import ACCESS_LOGGER
from ftdesk.service.web.envelope import error_response
from ftdesk.service.web.front_door import FRONT_DOOR, REQUEST_ID_HEADER, AccessLogger, FrontDoor
from ftdesk.service.web.routing import REQUEST_ID

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 8190
"""Longest request line (with its query string) or header aiohttp reads; longer is MALFORMED_REQUEST (400)."""

_NOT_HTTP: tuple[tuple[type[Exception], str], ...] = (
    (hx.LineTooLong, f"A request line (with its query string) or a header is longer than {MAX_LINE_BYTES} bytes"),
    (hx.BadHttpMethod, "The request method is not valid HTTP"),
    (hx.BadStatusLine, "The request line is not valid HTTP"),
    (hx.InvalidURLError, "The request target (the URL) is not valid"),
    (hx.InvalidHeader, "A request header is not valid HTTP"),
)


def _refusal(exc: BaseException | None) -> str:
    """Say what was wrong with a request aiohttp could not parse, without repeating any of it."""
    # The parser's own message quotes the request line: it may carry the api_key query parameter.
    for kind, text in _NOT_HTTP:
        if isinstance(exc, kind):
            return text
    return "The request is not valid HTTP"


HEAD_TIMEOUT = 10.0
"""Seconds a client has from the first byte of a request's head (request line and headers) to its end."""
BODY_TIMEOUT = 30.0
"""Seconds a client has from the end of a request's head to the end of its body (bodies here are small)."""


class EnvelopeRequestHandler(web.RequestHandler):
    """aiohttp's connection handler, answering the errors aiohttp raises itself in the JSON envelope.

    A request the HTTP parser refuses (a bad request line, a line or header too long) never reaches the
    front door; aiohttp answers it from ``handle_error`` with a plain-text 400 that repeats the
    request line. aiohttp 3.14 has no setting or signal for that response, so this subclass answers it.

    It also times out slow clients, for which aiohttp 3.14 has no setting: a request head that takes longer
    than ``HEAD_TIMEOUT`` to arrive, or a body longer than ``BODY_TIMEOUT``, closes the connection (a client
    sending a byte a second would otherwise hold a connection, and a handler, open for as long as it likes).
    Idle keep-alive connections and streams (SSE, WebSocket) are not affected: no bytes are awaited of them.
    """

    _deadline: asyncio.TimerHandle | None = None
    _body: Any = None  # the payload of the request whose body is still arriving

    def data_received(self, data: bytes) -> None:
        """Feed the parser, then time the head or the body still arriving."""
        heads = self._request_count
        super().data_received(data)
        if self._upgraded or self._force_close or self._close:
            self._stop_deadline()
            return
        if self._request_count != heads:  # a head is complete: time its body, if one is still to come
            self._stop_deadline()
            body = self._messages[-1][1] if self._messages else None
            if body is not None and not body.is_eof():
                self._body = body
                self._set_deadline(BODY_TIMEOUT, "body")
        elif data and self._body is not None:  # bytes of a body (its deadline runs), or the last of them
            if self._body.is_eof():
                self._stop_deadline()
                self._body = None
        elif data and self._deadline is None:
            self._set_deadline(HEAD_TIMEOUT, "head")  # the first bytes of a new head

    def _set_deadline(self, seconds: float, what: str) -> None:
        self._deadline = self._loop.call_later(seconds, self._too_slow, what, self._request_count)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self, what: str, heads: int) -> None:
        self._deadline = None
        if what == "head" and self._request_count != heads:
            return
        if what == "body" and (self._body is None or self._body.is_eof()):
            return
        log.info("Closed a connection whose request %s did not arrive in time", what)
        self.force_close()

    def connection_lost(self, exc: BaseException | None) -> None:
        """Forget the deadline with the connection."""
        self._stop_deadline()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Return the error envelope for a failure outside the application (the connection is closed after)."""
        request_id = uuid.uuid4().hex
        request[REQUEST_ID] = request_id  # for the access log line
        error: e.FtdeskError
        if status < 500:
            error = e.MalformedRequest(_refusal(exc))
            log.info("Refused a request that is not valid HTTP (request %s): %s", request_id, error.message)
        else:
            error = e.InternalError(f"Internal error; the service log has the details under request id {request_id}")
            log.error("Unhandled error outside the application (request %s)", request_id, exc_info=exc)
        if request.writer.output_size > 0:  # as aiohttp does: a response has begun, the connection is broken
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        response = error_response(error, headers={REQUEST_ID_HEADER: request_id, "X-Content-Type-Options": "nosniff"})
        response.force_close()
        return response


class _EnvelopeServer(web.Server):
    """aiohttp's server with ``EnvelopeRequestHandler`` as each connection's handler, behind the front door."""

    def __init__(self, plain: web.Server, front_door: FrontDoor | None) -> None:
        # Made from the server aiohttp built for the app, so its handler, factory and settings are unchanged.
        # aiohttp keeps a server's handler settings and loop only in private members and has no hook to swap the
        # connection handler class (see EnvelopeRequestHandler), so these two reads are the price of the envelope.
        self._handler_kwargs: dict[str, Any] = dict(plain._kwargs)
        handler = plain.request_handler if front_door is None else front_door.serve(plain.request_handler)
        super().__init__(
            handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,  # private in aiohttp too (see above)
            **self._handler_kwargs,
        )

    def __call__(self) -> web.RequestHandler:
        """Return the handler of a new connection."""
        return EnvelopeRequestHandler(self, loop=self._loop, **self._handler_kwargs)


class _EnvelopeAppRunner(web.AppRunner):
    """``web.AppRunner`` serving through ``_EnvelopeServer``, behind the app's ``FRONT_DOOR``."""

    async def _make_server(self) -> web.Server:
        return _EnvelopeServer(await super()._make_server(), self.app.get(FRONT_DOOR))


SHUTDOWN_TIMEOUT = 2.0


class PortInUseError(Exception):
    """The configured port is taken by another process."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            f"port {port} on {host} is already in use "
            "(is ftdesk already running? set FTSERVICE_PORT to use another port)"
        )
        self.host = host
        self.port = port


class ServiceServer:
    """The listening socket and aiohttp runner of one application."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.bound_port: int | None = None

    async def start(self) -> None:
        """Bind and start serving; raise ``PortInUseError`` when the port is taken."""
        runner = _EnvelopeAppRunner(
            self._app,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
            access_log_class=AccessLogger,
            access_log=logging.getLogger(ACCESS_LOGGER),
        )
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            if exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
                raise PortInUseError(self._host, self._port) from None
            raise
        self._runner = runner
        addresses = runner.addresses  # (host, port, ...) of each bound socket
        self.bound_port = int(addresses[0][1]) if addresses else self._port

    @property
    def url(self) -> str:
        """Return the base URL the server answers on."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.bound_port or self._port}"

    async def stop(self) -> None:
        """Stop serving: streams are closed by the app's shutdown hook, then the runner is cleaned up."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
