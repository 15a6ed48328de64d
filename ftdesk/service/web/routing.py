"""Declarative endpoints: the one route table that both aiohttp and the OpenAPI generator read.

A route module declares ``routes = RouteTable(tag=...)`` and decorates thin handlers with the request
and response models. The wrapper here does the parsing (JSON body, query, path), validation (422 with
every bad field), the call, and the envelope; handlers only call a collaborator and return its result.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar

from aiohttp import web
from aiohttp.http import HttpProcessingError
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from ftdesk.domain import errors as e
from ftdesk.domain.freshness import collecting
from ftdesk.service.web.envelope import ok_response
from ftdesk.service.web.json_input import parse_json

BodyT = TypeVar("BodyT", bound=BaseModel | None)
QueryT = TypeVar("QueryT", bound=BaseModel | None)

EndpointKind = Literal["json", "sse", "websocket"]


class QueryModel(BaseModel):
    """Base of query-parameter models: unknown parameters are an error, so typos never pass silently.

    Query values are strings by nature: numbers are read from their text; booleans are ``QueryBool``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class BodyModel(BaseModel):
    """Base of request-body models: unknown fields are an error, and JSON types are taken as they are.

    Strict, and validated from JSON (``validate_json``): a number must be a JSON number (``"10"`` is refused),
    a boolean ``true`` or ``false`` (``0`` is refused), while enums and dates are read from their JSON strings.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


def _true_or_false(value: Any) -> Any:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError("must be true or false")
        return lowered == "true"
    return value


QueryBool = Annotated[bool, BeforeValidator(_true_or_false)]
"""A boolean query parameter: ``true`` or ``false`` (any case), nothing else (not 0/1, yes/no, on/off)."""


@dataclass
class Call(Generic[BodyT, QueryT]):
    """One parsed request as a handler sees it."""

    request: web.Request
    body: BodyT
    query: QueryT
    path: Mapping[str, str]
    app: web.Application
    """The aiohttp application (collaborators hang off it as AppKeys)."""

    @property
    def request_id(self) -> str:
        """Return the X-Request-ID of this request."""
        return str(self.request.get(REQUEST_ID, ""))


Handler = Callable[[Call[Any, Any]], Awaitable[Any]]

AiohttpHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

Serve = Callable[[web.Request, Mapping[str, str]], Awaitable[web.StreamResponse]]
"""An endpoint's handler called with the request's path parameters: what aiohttp's handler calls, and the
front door directly when it found the endpoint itself (``EndpointDispatch``)."""

Guard = Callable[[web.Request], Awaitable[None] | None]
"""What an endpoint's handler calls first: it raises a refusal, returns something to await, or passes (None)."""


class GuardFactory(Protocol):
    """Makes an endpoint's guard from what the endpoint asks of its callers (``EndpointGuards.guard``)."""

    def __call__(self, *, api_key: bool, query_api_key: bool) -> Guard:
        """Return the guard of an endpoint with these needs."""
        ...


@dataclass(frozen=True)
class Endpoint:
    """One method and path of the API, with everything needed to serve and document it."""

    method: str
    path: str
    handler: Handler
    summary: str
    description: str
    tag: str
    response: Any = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[type[e.FtdeskError], ...] = ()
    api_key: bool = True
    needs_session: bool = False
    kind: EndpointKind = "json"
    status: int = 200
    query_api_key: bool = False
    operation_id: str = ""
    extra_openapi: Mapping[str, Any] = field(default_factory=dict)


class RouteTable:
    """The endpoints of one endpoint group (a constant description, like aiohttp's RouteTableDef)."""

    def __init__(self, tag: str, prefix: str = "/api/v1") -> None:
        self.tag = tag
        self.prefix = prefix
        self.endpoints: list[Endpoint] = []

    def route(
        self,
        method: str,
        path: str,
        *,
        summary: str,
        response: Any = None,
        body: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        errors: tuple[type[e.FtdeskError], ...] = (),
        api_key: bool = True,
        needs_session: bool = False,
        kind: EndpointKind = "json",
        status: int = 200,
        query_api_key: bool = False,
        full_path: bool = False,
        extra_openapi: Mapping[str, Any] | None = None,
        operation_id: str | None = None,
    ) -> Callable[[Handler], Handler]:
        """Declare an endpoint; the docstring is its description, the handler's name its operationId unless given.

        The operationId is the method name of generated clients (``get_positions``): a short snake_case verb,
        unique, and never changed once published.
        """

        def decorate(handler: Handler) -> Handler:
            self.endpoints.append(
                Endpoint(
                    method=method.upper(),
                    path=path if full_path else self.prefix + path,
                    handler=handler,
                    summary=summary,
                    description=inspect.cleandoc(handler.__doc__ or ""),
                    tag=self.tag,
                    response=response,
                    body=body,
                    query=query,
                    errors=errors,
                    api_key=api_key,
                    needs_session=needs_session,
                    kind=kind,
                    status=status,
                    query_api_key=query_api_key,
                    operation_id=operation_id or handler.__name__,
                    extra_openapi=extra_openapi or {},
                )
            )
            return handler

        return decorate

    def get(self, path: str, **kwargs: Any) -> Callable[[Handler], Handler]:
        """Declare a GET endpoint."""
        return self.route("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Callable[[Handler], Handler]:
        """Declare a POST endpoint."""
        return self.route("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Callable[[Handler], Handler]:
        """Declare a PUT endpoint."""
        return self.route("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Callable[[Handler], Handler]:
        """Declare a DELETE endpoint."""
        return self.route("DELETE", path, **kwargs)


REQUEST_ID = web.RequestKey("request_id", str)
CORS_ORIGIN = web.RequestKey("cors_origin", str)


def _validation_details(exc: ValidationError, location: str) -> list[dict[str, Any]]:
    details = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = [str(part) for part in err["loc"]]
        details.append(
            {
                "field": ".".join(loc) if loc else location,
                "location": location,
                "message": err["msg"],
                "type": err["type"],
            }
        )
    return details


JSON_TYPE_ERRORS = frozenset(
    {
        "bool_type",
        "decimal_type",
        "dict_type",
        "float_type",
        "int_type",
        "json_type",
        "list_type",
        "model_attributes_type",
        "model_type",
        "set_type",
        "string_type",
        "tuple_type",
    }
)
"""pydantic's error types for a JSON value of the wrong JSON type (plus ``json_type``, raised by our validators)."""


def _failed(exc: ValidationError, location: str, *, from_json: bool = False) -> e.ValidationFailed:
    details = _validation_details(exc, location)
    fields = ", ".join(sorted({d["field"] for d in details}))
    if from_json and any(d["type"] in JSON_TYPE_ERRORS for d in details):
        return e.JsonShapeInvalid(f"Invalid {location}: {fields}", details=details)
    return e.ValidationFailed(f"Invalid {location}: {fields}", details=details)


def validate_model(model: type[BaseModel], data: Any, location: str) -> BaseModel:
    """Validate Python data (query or path values) into a model; raise ``ValidationFailed`` naming each bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _failed(exc, location) from None


def validate_json(model: type[BaseModel], document: Any, location: str) -> BaseModel:
    """Validate a parsed JSON document (from ``parse_json``) in pydantic's JSON mode, where JSON types count.

    JSON mode reads enums and dates from strings, so a strict model refuses only what a JSON type cannot be:
    a string where a number or boolean belongs, a number where a boolean or string belongs.
    """
    try:
        return model.model_validate_json(json.dumps(document, allow_nan=False))
    except ValidationError as exc:
        raise _failed(exc, location, from_json=True) from None


class ClientDisconnected(e.MalformedRequest):
    """The request body did not arrive in full, usually because the client went away (not a failure of ours)."""


async def read_json_body(request: web.Request) -> Any:
    """Read the request body as JSON within the input limits; raise ``MalformedRequest`` when it is not JSON."""
    try:
        raw = await request.read()
    except ConnectionError:
        raise ClientDisconnected("The connection closed before the request body was complete") from None
    except HttpProcessingError:  # a chunked body that breaks off or is badly framed
        raise ClientDisconnected("The request body ended early or its chunked framing is broken") from None
    if not raw.strip():
        raise e.MalformedRequest("The request body is empty; send a JSON object with Content-Type: application/json")
    # Any content type carrying JSON is read as JSON: `curl -d` labels bodies as form data by default, and
    # cross-site requests are already stopped by the Origin check and the API key, not by the content type.
    if request.content_type.startswith("multipart/"):
        raise e.MalformedRequest(f"Content-Type {request.content_type!r} is not supported; send a JSON object")
    return parse_json(raw, location="body", what="request body")


def _is_list_annotation(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list_annotation(arg) for arg in typing.get_args(annotation))
    return False


def query_to_dict(model: type[BaseModel], request: web.Request) -> dict[str, Any]:
    """Collect query parameters; list fields accept ``a=1,2`` and ``a=1&a=2`` alike."""
    list_names: set[str] = set()
    for name, info in model.model_fields.items():
        if _is_list_annotation(info.annotation):
            list_names.add(name)
            if info.alias:
                list_names.add(info.alias)
    data: dict[str, Any] = {}
    for key in request.query:
        if key in data or key == "api_key":
            continue
        values = request.query.getall(key)
        if key in list_names:
            data[key] = [part.strip() for value in values for part in value.split(",") if part.strip()]
        else:
            data[key] = values[-1] if len(values) > 1 else values[0]
    return data


def make_endpoint_handlers(endpoint: Endpoint, guard: Guard, app: web.Application) -> tuple[AiohttpHandler, Serve]:
    """Wrap an endpoint's thin handler with its guard, parsing, validation and the envelope.

    Returns the handler aiohttp routes to and the same handler taking the path parameters as an argument.
    """

    # Decided once per endpoint, not per request: the fixed part of a request's cost is most of a small read's.
    query_model, body_model, handler, status = endpoint.query, endpoint.body, endpoint.handler, endpoint.status
    refuse_query = query_model is None and endpoint.kind == "json"
    collects = endpoint.method == "GET" and endpoint.kind == "json"

    async def serve(request: web.Request, path: Mapping[str, str]) -> web.StreamResponse:
        held = guard(request)
        if held is not None:
            await held
        body: BaseModel | None = None
        query: BaseModel | None = None
        if query_model is not None:
            query = validate_model(query_model, query_to_dict(query_model, request), "query")
        elif refuse_query and request.query_string:
            unexpected = sorted(k for k in request.query if k != "api_key")
            if unexpected:
                raise e.ValidationFailed(
                    f"Unknown query parameter(s): {', '.join(unexpected)}",
                    details=[
                        {
                            "field": k,
                            "location": "query",
                            "message": "Extra inputs are not permitted",
                            "type": "extra_forbidden",
                        }
                        for k in unexpected
                    ],
                )
        if body_model is not None:
            body = validate_json(body_model, await read_json_body(request), "body")
        call = Call(request=request, body=body, query=query, path=path, app=app)
        if not collects:
            result = await handler(call)
            return result if isinstance(result, web.StreamResponse) else ok_response(result, status=status)
        # A read says when its answer came from the broker's memory (Cache-Control, Age); other methods'
        # answers are not cacheable, and what a login inside them read is not what they answer.
        with collecting() as served:
            result = await handler(call)
        if isinstance(result, web.StreamResponse):
            return result
        response = ok_response(result, status=status)
        if served.served:
            response.headers.update(served.headers())
        return response

    async def handle(request: web.Request) -> web.StreamResponse:
        return await serve(request, request.match_info)

    return handle, serve


@dataclass(frozen=True)
class RoutedEndpoints:
    """The endpoints registered on an app, in order, and the JSON ones' handlers by their aiohttp handler."""

    endpoints: list[Endpoint]
    direct: Mapping[AiohttpHandler, Serve]
    """Each JSON endpoint's handler taking its path parameters, keyed by the handler aiohttp routes to."""


def add_routes(app: web.Application, tables: list[RouteTable], guard: GuardFactory) -> RoutedEndpoints:
    """Register every endpoint of the tables on the app, each behind its guard."""
    endpoints: list[Endpoint] = []
    direct: dict[AiohttpHandler, Serve] = {}
    seen: set[tuple[str, str]] = set()
    for table in tables:
        for endpoint in table.endpoints:
            key = (endpoint.method, endpoint.path)
            if key in seen:
                raise ValueError(f"duplicate endpoint {endpoint.method} {endpoint.path}")
            seen.add(key)
            endpoint_guard = guard(api_key=endpoint.api_key, query_api_key=endpoint.query_api_key)
            handle, serve = make_endpoint_handlers(endpoint, endpoint_guard, app)
            app.router.add_route(endpoint.method, endpoint.path, handle)
            if endpoint.kind == "json":  # streams keep aiohttp's whole path: they are few and long
                direct[handle] = serve
            endpoints.append(endpoint)
    return RoutedEndpoints(endpoints, direct)
