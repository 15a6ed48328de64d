"""The front door: request ids, the envelope on every error, local-only security and the start-up sweep's hold.

``FrontDoor.serve`` wraps the server's request handler, in this order: the request id; then, inside the
envelope (errors -> envelope, tracebacks to the log only), the checks that need no route (``_security_check``:
Host, Origin/CORS, body size), then the endpoint (``EndpointDispatch``) or the application, whose handlers
first call their endpoint's guard (``EndpointGuards``: the API key, then the hold while a halted run's start-up
sweep cancels the open orders). The common headers are stamped on the way out, or by a stream before it
starts. The checks await nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import random
import re
import typing
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Protocol

from aiohttp import hdrs, web
from aiohttp.abc import AbstractAccessLogger
from yarl import URL

from ftdesk.domain import errors as e
from ftdesk.logs import AccessQueueHandler, log_safe
from ftdesk.service.keys import keys_match
from ftdesk.service.web.dispatch import EndpointDispatch
from ftdesk.service.web.envelope import error_body, error_response
from ftdesk.service.web.routing import CORS_ORIGIN, REQUEST_ID, ClientDisconnected, Guard

log = logging.getLogger("ftdesk.service")

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_CORS_ALLOWED_HEADERS = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Request-ID"
_CORS_ALLOWED_METHODS = "GET, POST, PUT, DELETE, OPTIONS"
_UNAUTHENTICATED_PREFIXES = ("/docs",)


@dataclass(frozen=True)
class SecurityPolicy:
    """What the front door enforces."""

    api_key: str
    api_key_required: bool
    bind_host: str
    allowed_origins: frozenset[str]
    max_body_bytes: int

    @functools.cached_property
    def bearer_header(self) -> str:
        """Return the Authorization header that carries the key: ``Bearer <key>``."""
        return f"Bearer {self.api_key}"

    @property
    def allowed_hosts(self) -> frozenset[str]:
        """Return the host names that name this machine."""
        return _LOCAL_HOSTS | {self.bind_host.lower().strip("[]")}


_METHOD_LIMIT = 20
_PATH_LIMIT = 200


def logged_path(request: web.BaseRequest) -> str:
    """Return the request's path as a log line may show it: as sent (percent-escapes kept), no query, escaped."""
    return log_safe(request.raw_path.partition("?")[0], limit=_PATH_LIMIT)


def _http_exception_to_error(exc: web.HTTPException, request: web.BaseRequest, max_body_bytes: int) -> e.FtdeskError:
    if isinstance(exc, web.HTTPNotFound):
        return e.NotFound(f"No endpoint {request.method} {request.path}; see /docs for the API")
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = sorted(exc.allowed_methods)
        return e.MethodNotAllowed(
            f"{request.method} is not allowed on {request.path}; allowed: {', '.join(allowed)}",
            details={"allowed_methods": allowed},
        )
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return e.PayloadTooLarge(f"The request body is larger than the limit of {max_body_bytes} bytes")
    if exc.status == 400:
        return e.MalformedRequest(exc.text or "Bad request")
    return _GenericHttpError(exc.reason, status=exc.status)


class _GenericHttpError(e.FtdeskError):
    """An aiohttp HTTP error that has no domain equivalent (kept with its own status)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class RequestGate(Protocol):
    """What holds requests while a halted run's start-up sweep cancels the open orders (``SafetyGuard``)."""

    @property
    def requests_held(self) -> bool:
        """Say whether requests wait now."""
        ...

    async def requests_may_proceed(self) -> None:
        """Return once requests may be served."""
        ...


Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


class FrontDoor:
    """What every request passes: its id, the envelope on any error and the checks that need no route.

    ``serve`` wraps the server's request handler (aiohttp's application: routing, then the route), in this
    order: the request id; then, inside the envelope (errors -> envelope, tracebacks to the log only), the
    Host and Origin checks, the CORS preflight and the body-size limit; then the endpoint, found by
    ``EndpointDispatch`` and called directly, or the application for anything else (streams, ``/docs``, a path
    nothing matches). Each endpoint's handler first calls its guard (``EndpointGuards``). A path nothing
    matches asks for the key too, before it is told 404 or 405, so a caller without the key learns nothing of
    what exists; ``/docs`` asks for none. The common headers are stamped on the way out (a stream stamps its
    own before it starts).

    Not aiohttp middleware: an application with middleware wraps every request in two more coroutines and
    aiohttp's own ``_fix_request_current_app``, and a small read paid a fifth more for it.
    """

    def __init__(self, policy: SecurityPolicy, dispatch: EndpointDispatch) -> None:
        self._policy = policy
        self._dispatch = dispatch
        self._security_check = _security_check(policy)
        # Request ids: this run's 64 random bits, then a count. An id only has to tell requests apart in the
        # log (across runs too); it guards nothing, and 128 random bits a request cost a tenth of a /health.
        self._run_id = f"{random.getrandbits(64):016x}"
        self._count = itertools.count(1)

    def serve(self, inner: Handler) -> Handler:
        """Return ``inner`` behind the front door."""
        security_check = self._security_check
        dispatch = self._dispatch
        policy = self._policy
        run_id, count = self._run_id, self._count

        async def front_door(request: web.BaseRequest) -> web.StreamResponse:
            offered = request.headers.get(REQUEST_ID_HEADER)
            if offered is not None and _REQUEST_ID_RE.fullmatch(offered):
                request_id = offered
            else:
                request_id = f"{run_id}{next(count):016x}"
            request[REQUEST_ID] = request_id
            try:
                response = security_check(request)
                if response is None:
                    if request.headers.get(hdrs.EXPECT):  # the application answers "100 Continue" first
                        response = await inner(request)
                    else:
                        # The app's request factory made it: a web.Request, which is what endpoints take.
                        routed = typing.cast(web.Request, request)
                        found = dispatch.remembered(routed) or await dispatch.find(routed)
                        response = await (inner(routed) if found is None else found[0](routed, found[1]))
            except ClientDisconnected as exc:
                log.info(
                    "The body of %s %s (request %s) did not arrive complete: %s; nothing was done",
                    log_safe(request.method),
                    logged_path(request),
                    request_id,
                    exc.message,
                )
                response = error_response(exc)  # nobody reads it, but the access log records a 400, not a 500
            except e.FtdeskError as exc:
                response = error_response(exc)
            except web.HTTPException as exc:
                if exc.status < 400:
                    raise
                unknown = exc.status in (404, 405) and not request.path.startswith(_UNAUTHENTICATED_PREFIXES)
                refusal = _key_refusal(policy, request, query_key=False) if unknown else None
                response = error_response(refusal) if refusal else _http_error_response(exc, request, policy)
            except Exception:
                log.exception(
                    "Unhandled error in %s %s (request %s)", log_safe(request.method), logged_path(request), request_id
                )
                response = error_response(
                    e.InternalError(f"Internal error; the service log has the details under request id {request_id}")
                )
            if not response.prepared:  # a stream stamped its headers before it started (``stamp_common_headers``)
                headers = response.headers
                headers[REQUEST_ID_HEADER] = request_id
                headers.setdefault("X-Content-Type-Options", "nosniff")
                if request.headers.get("Origin") is not None:
                    _stamp_cors(request, headers)
            return response

        return front_door


class EndpointGuards:
    """Makes each endpoint's guard: its API key (constant time), then the hold of a halted run's start-up sweep."""

    def __init__(self, policy: SecurityPolicy, gate: RequestGate, hold_seconds: float) -> None:
        self._policy = policy
        self._gate = gate
        self._hold_seconds = hold_seconds

    def guard(self, *, api_key: bool, query_api_key: bool) -> Guard:
        """Return the check an endpoint's handler makes first: its API key, then the sweep's hold (awaited)."""
        policy = self._policy
        gate = self._gate
        needs_key = api_key and policy.api_key_required

        def guard(request: web.Request) -> Awaitable[None] | None:
            if needs_key:
                refusal = _key_refusal(policy, request, query_key=query_api_key)
                if refusal is not None:
                    raise refusal
            # Served anyway after the wait: previews and places are refused while halted, and cancels must work.
            # Nothing held (every request but those of a halted run's first seconds): nothing to await.
            return self._held() if gate.requests_held else None

        return guard

    async def _held(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gate.requests_may_proceed(), self._hold_seconds)


def _key_refusal(policy: SecurityPolicy, request: web.BaseRequest, *, query_key: bool) -> e.ApiKeyInvalid | None:
    """Return the refusal of a request without the right API key (None: the key is right, or not asked)."""
    if not policy.api_key_required:
        return None
    sent = request.headers.get("Authorization")
    # What a client sends every time, "Bearer <key>", is compared whole (in constant time) before any parsing.
    if sent is not None and keys_match(sent, policy.bearer_header):
        return None
    presented = _bearer_token(request)
    if presented is None and query_key:
        presented = request.query.get("api_key")
    if presented is not None and keys_match(presented, policy.api_key):
        return None
    return e.ApiKeyInvalid(
        "Missing or wrong API key: send 'Authorization: Bearer <key>' (print the key with: ftdesk --print-api-key)"
    )


FRONT_DOOR = web.AppKey("front_door", FrontDoor)
"""The front door an application is served behind (``ServiceServer`` wraps the app's request handler in it)."""


def _http_error_response(exc: web.HTTPException, request: web.BaseRequest, policy: SecurityPolicy) -> web.Response:
    error = _http_exception_to_error(exc, request, policy.max_body_bytes)
    if isinstance(error, _GenericHttpError):
        return web.json_response(error_body("HTTP_ERROR", error.message), status=error.status)
    if isinstance(error, e.MethodNotAllowed):  # RFC 9110: a 405 lists what the path allows
        return error_response(error, headers={"Allow": ", ".join(error.details["allowed_methods"])})
    return error_response(error)


def _host_name(host_header: str) -> str:
    try:
        host = URL(f"http://{host_header}").host
    except ValueError:
        return ""
    return (host or "").lower().strip("[]")


def _bearer_token(request: web.BaseRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def _security_check(policy: SecurityPolicy) -> Callable[[web.BaseRequest], web.StreamResponse | None]:
    """Build the check of Host, Origin and body size: it raises, answers a preflight, or passes (None)."""
    allowed_hosts = policy.allowed_hosts
    # Host headers already parsed and accepted: a client sends the same one on every request, so it is parsed
    # as a URL once, not on every request. Refused ones are parsed each time; at most 16 are kept.
    accepted_hosts: set[str] = set()

    def security_check(request: web.BaseRequest) -> web.StreamResponse | None:
        host_header = request.host
        if host_header not in accepted_hosts:
            if _host_name(host_header) not in allowed_hosts:
                raise e.HostNotAllowed(
                    f"Host {request.host!r} does not name this machine; use http://127.0.0.1 or http://localhost"
                )
            if len(accepted_hosts) < 16:
                accepted_hosts.add(host_header)
        if not request.raw_path.startswith("/"):
            # A target in absolute form (GET http://127.0.0.1/... HTTP/1.1): aiohttp's request.host is then the
            # target's authority, so the Host header is checked as well; both must name this machine.
            sent = request.headers.get("Host", "")
            if _host_name(sent) not in allowed_hosts:
                raise e.HostNotAllowed(
                    f"Host {sent!r} does not name this machine; use http://127.0.0.1 or http://localhost"
                )

        origin = request.headers.get("Origin")
        cross_origin: str | None = None
        if origin is not None:
            normalised = origin.rstrip("/").lower()
            same_origin = normalised == f"{request.scheme}://{request.host}".lower()
            if not same_origin:
                if normalised not in policy.allowed_origins:
                    raise e.OriginNotAllowed(
                        f"Origin {origin!r} is not allowed; add it to FTSERVICE_ALLOWED_ORIGINS "
                        "to let that page call the API"
                    )
                cross_origin = origin
                request[CORS_ORIGIN] = origin
        if cross_origin and request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            return web.Response(status=204)

        if request.content_length is not None and request.content_length > policy.max_body_bytes:
            raise e.PayloadTooLarge(f"The request body is larger than the limit of {policy.max_body_bytes} bytes")

        return None

    return security_check


def stamp_common_headers(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Stamp X-Request-ID (and CORS headers for allowed cross-origin callers); a stream calls it before it starts."""
    request_id = request.get(REQUEST_ID)
    if request_id:
        response.headers[REQUEST_ID_HEADER] = request_id
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    _stamp_cors(request, response.headers)


def _stamp_cors(request: web.BaseRequest, headers: MutableMapping[str, str]) -> None:
    """Stamp the CORS headers of an allowed cross-origin caller (nothing for any other)."""
    origin = request.get(CORS_ORIGIN)
    if origin:
        headers["Access-Control-Allow-Origin"] = origin
        headers["Access-Control-Allow-Headers"] = _CORS_ALLOWED_HEADERS
        headers["Access-Control-Allow-Methods"] = _CORS_ALLOWED_METHODS
        headers["Access-Control-Expose-Headers"] = f"{REQUEST_ID_HEADER}, Idempotent-Replayed"
        headers["Vary"] = "Origin"


_ACCESS_LINE = "%s %s -> %s in %.1f ms (request %s)"


class AccessLogger(AbstractAccessLogger):
    """Access log lines without query strings, headers or bodies (they may carry secrets).

    The path is logged as sent, percent-escapes and all, and escaped again: ``%0a`` stays ``%0a`` instead of
    starting a line that could pass for another record. Where logging is configured (``configure_logging``)
    the line goes to the access log's writer thread as its arguments; the record is made there.
    """

    def __init__(self, logger: logging.Logger, log_format: str) -> None:
        super().__init__(logger, log_format)
        queued = [handler for handler in logger.handlers if isinstance(handler, AccessQueueHandler)]
        self._queue = queued[0] if queued else None

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        """Log one finished request."""
        if not self.logger.isEnabledFor(logging.INFO):
            return
        method = request.method
        path = request.raw_path.partition("?")[0]
        args = (
            method if len(method) <= _METHOD_LIMIT and method.isprintable() else log_safe(method, limit=_METHOD_LIMIT),
            path if len(path) <= _PATH_LIMIT and path.isprintable() else log_safe(path, limit=_PATH_LIMIT),
            response.status,
            time * 1000,
            request.get(REQUEST_ID, "-"),
        )
        if self._queue is None or not self._queue.put_line(logging.INFO, _ACCESS_LINE, args):
            self.logger.info(_ACCESS_LINE, *args)
