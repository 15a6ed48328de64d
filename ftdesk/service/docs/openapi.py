"""OpenAPI 3.1 generated from the route table and the pydantic models; there is no hand-kept copy."""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from pydantic_core import core_schema

from ftdesk.domain import errors as e
from ftdesk.service.push.frames import (
    ASYNCAPI_PATH,
    SCHEMA_REF,
    SSE_EXTENSION,
    STREAMS_DESCRIPTION,
    SseStream,
    sse_block_schemas,
    sse_models,
    sse_response,
)
from ftdesk.service.web.errors import ERROR_TABLE
from ftdesk.service.web.json_input import MAX_JSON_DEPTH, MAX_JSON_INTEGER, MAX_WS_MESSAGE_BYTES
from ftdesk.service.web.routing import Endpoint
from ftdesk.service.web.server import MAX_LINE_BYTES

_PATH_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")

API_DESCRIPTION = (
    """\
ftdesk serves your brokerage account on this machine: REST under `/api/v1`, Server-Sent Events and a
WebSocket for real-time quotes and account events.

**Envelope.** Every JSON response is `{"ok": true, "data": ..., "error": null}` on success and
`{"ok": false, "data": null, "error": {"code", "message", "details"}}` on failure, with the HTTP status of
the error code (listed under each operation). Every response carries `X-Request-ID` (send your own to
correlate; otherwise one is generated). Validation failures (`VALIDATION_ERROR`, 400 or 422, below) list each bad field
in `details` as `{field, location, message, type}`.

**Authentication.** Send `Authorization: Bearer <API key>` on every request except `GET /api/v1/health`
and `/docs`. The key is generated on first start and kept in the OS keychain (or a 0600 file in the data
dir); print it with `ftdesk --print-api-key` or copy it from the tray. `FTSERVICE_API_KEY` fixes it and
`FTSERVICE_API_KEY_REQUIRED=false` turns the check off.

**Local only.** The service binds 127.0.0.1. Requests whose `Host` does not name this machine get
`HOST_NOT_ALLOWED` (a DNS-rebinding defence) and browser requests from an `Origin` that is not the
service's own nor on `FTSERVICE_ALLOWED_ORIGINS` get `ORIGIN_NOT_ALLOWED`; allowed origins receive CORS
headers. Bodies over `FTSERVICE_MAX_BODY_BYTES` (1 MiB by default) get `PAYLOAD_TOO_LARGE`. On Linux and
macOS the data dir (settings, order journal, paper database, credentials, logs) is 0700 and every file in it
0600: other users of the machine cannot read your orders.

**Conventions.** Field names are the spec's record names (snake_case). List query parameters accept
`symbols=A,B` and `symbols=A&symbols=B`. Dates are ISO `YYYY-MM-DD`. Unknown query parameters and body
fields are rejected with `VALIDATION_ERROR`, so a typo never passes silently.
"""
    + f"""
**JSON types.** In bodies and WebSocket frames a number must be a JSON number and a boolean `true` or
`false`: `"qty": "10"` or `"remember": 0` is a `VALIDATION_ERROR` naming the field (whole-number fields
also take `10.0`). A UTF-8 byte order mark before a body is accepted. Query parameters are text by nature:
numbers are read from their digits, and a boolean parameter takes only `true` or `false`.

**Input limits.** A body may be at most `FTSERVICE_MAX_BODY_BYTES` (1 MiB by default; larger is
`PAYLOAD_TOO_LARGE`, 413) and a WebSocket frame {MAX_WS_MESSAGE_BYTES // 1024} KiB. Arrays and objects may
be nested at most {MAX_JSON_DEPTH} levels deep (the body itself is level 1); integers may be at most
{MAX_JSON_INTEGER} (2^63 - 1) in magnitude and decimals must fit a 64-bit float (no `1e400`); `NaN` and
`Infinity` are not JSON. Past a limit the answer is `VALIDATION_ERROR` naming the place (`details[].type` is
`json_too_deep` or `number_too_large`); fields have their own, smaller ranges on top. The request line with
its query string, and each header, may be at most {MAX_LINE_BYTES} bytes: longer is `MALFORMED_REQUEST`
(400), as is anything that is not valid HTTP, on every operation; that answer never repeats the request
(its query may hold `api_key`).

**Status of validation errors.** `VALIDATION_ERROR` is 400 when a body's JSON is not of the declared
shape (a wrong JSON type, nesting or a number past the limits above) and 422 when the JSON is well formed but
a value is not acceptable (missing, out of range, not allowed, inconsistent with another field); either way
`details` name each place. Switch on `error.code`, not the status: 400 is also `MALFORMED_REQUEST`, a request
that could not be read at all.
"""
)


class ErrorInfo(BaseModel):
    """The error member of a failure envelope."""

    model_config = ConfigDict(title="ErrorInfo")

    code: str = Field(description="Stable machine-readable code, e.g. VALIDATION_ERROR.")
    message: str = Field(description="What went wrong, for a human.")
    details: Any = Field(default=None, description="Structured extra information (bad fields, allowed methods, ...).")


class ErrorEnvelope(BaseModel):
    """A failure response: ``ok`` false and the error (``data``, also sent, is always null)."""

    # The constant null member of each envelope (data here, error on success) is sent but not described: a
    # property of JSON type null makes openapi-generator's python target fail and carries no information.
    model_config = ConfigDict(title="ErrorEnvelope")

    ok: Literal[False]
    error: ErrorInfo


class ResponseFieldsRequired(GenerateJsonSchema):
    """Mark every field a response always carries as required, defaults included.

    The service serialises records in full (``model_dump`` without exclusions), so in a response a field
    with a default is still always there: generated clients then type it as present, not ``Unset``. Only a
    field dropped when empty (``exclude_if``, e.g. ``raw`` on paper) stays optional. Request bodies and
    queries are generated in validation mode, where a default still means the field may be left out. The
    AsyncAPI document generates its frame schemas with it too, so both documents agree on what is required.
    """

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        """Return whether the field is required in the schema being generated."""
        if self.mode == "serialization" and field["type"] != "typed-dict-field":
            return field.get("serialization_exclude_if") is None and not field.get("serialization_exclude", False)
        return super().field_is_required(field, total)


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", name) if part)


def _envelope_for(endpoint: Endpoint) -> type[BaseModel]:
    # Members that are always null (error on success; data of an operation that answers none) are sent but not
    # described, like ErrorEnvelope's data.
    members: dict[str, Any] = {"ok": (Literal[True], ...)}
    if endpoint.response is not None:
        members["data"] = (endpoint.response, ...)
    return create_model(
        f"{_pascal(endpoint.operation_id)}Response",
        __config__=ConfigDict(title=f"{_pascal(endpoint.operation_id)}Response"),
        __doc__=f"Success envelope of {endpoint.method} {endpoint.path} (``error``, also sent, is always null).",
        **members,
    )


def _error_classes(endpoint: Endpoint) -> list[type[e.FtdeskError]]:
    # Any request can be unreadable HTTP (400, answered before routing) or announce a body over the limit (413).
    classes: list[type[e.FtdeskError]] = [
        e.MalformedRequest,
        e.HostNotAllowed,
        e.OriginNotAllowed,
        e.PayloadTooLarge,
        e.InternalError,
    ]
    if endpoint.api_key:
        classes.append(e.ApiKeyInvalid)
    if endpoint.query is not None or endpoint.body is not None or endpoint.kind == "json":
        classes.append(e.ValidationFailed)
    if endpoint.body is not None:
        classes.append(e.JsonShapeInvalid)
    if endpoint.needs_session:
        classes += [e.AuthRequired, e.SessionExpired, e.BrokerError]
    classes += list(endpoint.errors)
    unique: list[type[e.FtdeskError]] = []
    for cls in classes:
        if cls not in unique:
            unique.append(cls)
    return unique


def _error_responses(endpoint: Endpoint) -> dict[str, Any]:
    by_status: dict[int, list[type[e.FtdeskError]]] = defaultdict(list)
    for cls in _error_classes(endpoint):
        spec = ERROR_TABLE[cls]
        by_status[spec.status].append(cls)
    responses: dict[str, Any] = {}
    for status in sorted(by_status):
        specs = [ERROR_TABLE[cls] for cls in by_status[status]]
        description = "; ".join(f"`{s.code}`: {s.description}" for s in specs)
        examples = {
            s.code: {
                "value": {
                    "ok": False,
                    "data": None,
                    "error": {"code": s.code, "message": s.description, "details": None},
                }
            }
            for s in specs
        }
        responses[str(status)] = {
            "description": description,
            "content": {
                "application/json": {"schema": {"$ref": SCHEMA_REF.format(model="ErrorEnvelope")}, "examples": examples}
            },
        }
    return responses


def _error_list(endpoint: Endpoint) -> str:
    # Every failure shares one schema (ErrorEnvelope), so a generated client has one error type; which codes
    # this operation can answer is for the reader, listed here as well as under each status.
    specs = sorted((ERROR_TABLE[cls] for cls in _error_classes(endpoint)), key=lambda s: (s.status, s.code))
    codes = ", ".join(f"`{s.code}` ({s.status})" for s in specs)
    return f"**Errors** (`error.code`, HTTP status): {codes}."


def _parameters(endpoint: Endpoint, query_schema: dict[str, Any] | None, defs: dict[str, Any]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PATH_PARAM.findall(endpoint.path)
    ]
    if query_schema is not None:
        resolved = query_schema
        if "$ref" in query_schema:
            resolved = defs[query_schema["$ref"].rsplit("/", 1)[-1]]
        required = set(resolved.get("required", []))
        for name, prop in resolved.get("properties", {}).items():
            schema = {k: v for k, v in prop.items() if k not in ("title", "description")}
            param: dict[str, Any] = {"name": name, "in": "query", "required": name in required, "schema": schema}
            if prop.get("description"):
                param["description"] = prop["description"]
            if schema.get("type") == "array" or any(s.get("type") == "array" for s in schema.get("anyOf", [])):
                param["style"] = "form"
                param["explode"] = False
                param["description"] = (
                    param.get("description", "") + " Comma-separated, or repeat the parameter."
                ).strip()
            params.append(param)
    if endpoint.query_api_key:
        params.append(
            {
                "name": "api_key",
                "in": "query",
                "required": False,
                "schema": {"type": "string"},
                "description": "The API key, for browser clients that cannot set the Authorization header.",
            }
        )
    return params


def build_openapi(endpoints: list[Endpoint], *, version: str) -> dict[str, Any]:
    """Return the OpenAPI 3.1 description of the endpoints."""
    envelopes = {id(ep): _envelope_for(ep) for ep in endpoints if ep.kind == "json"}
    models: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = [(ErrorEnvelope, "serialization")]
    for ep in endpoints:
        if id(ep) in envelopes:
            models.append((envelopes[id(ep)], "serialization"))
        if ep.body is not None:
            models.append((ep.body, "validation"))
        if ep.query is not None:
            models.append((ep.query, "validation"))
        if isinstance(stream := ep.extra_openapi.get(SSE_EXTENSION), SseStream):
            models += [(model, "serialization") for model in sse_models(stream)]
    key_map, top = models_json_schema(models, ref_template=SCHEMA_REF, schema_generator=ResponseFieldsRequired)
    defs: dict[str, Any] = dict(top.get("$defs", {}))
    _add_sse_blocks(endpoints, key_map, defs)
    _drop_property_titles(defs)

    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    for ep in endpoints:
        if ep.kind == "websocket":
            continue  # described in the AsyncAPI document: as a GET operation, generators make a call that breaks
        operation: dict[str, Any] = {
            "operationId": ep.operation_id,
            "summary": ep.summary,
            "tags": [ep.tag],
        }
        description = "\n\n".join(part for part in (ep.description, _error_list(ep)) if part)
        if description:
            operation["description"] = description
        query_schema = key_map[(ep.query, "validation")] if ep.query is not None else None
        params = _parameters(ep, query_schema, defs)
        if params:
            operation["parameters"] = params
        if ep.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": key_map[(ep.body, "validation")]}},
            }
        responses: dict[str, Any] = {}
        if ep.kind == "json":
            responses[str(ep.status)] = {
                "description": "Success.",
                "content": {"application/json": {"schema": key_map[(envelopes[id(ep)], "serialization")]}},
            }
        responses.update(_error_responses(ep))
        operation["responses"] = responses
        if not ep.api_key:
            operation["security"] = []
        elif ep.query_api_key:
            operation["security"] = [{"bearerAuth": []}, {"apiKeyQuery": []}]
        for key, value in ep.extra_openapi.items():
            if key == SSE_EXTENSION:
                operation["responses"]["200"] = sse_response(value)
            elif key == "responses":
                operation["responses"].update(value)
            elif key == "headers":  # headers of the success response
                operation["responses"][str(ep.status)]["headers"] = value
            else:
                operation[key] = value
        paths[_PATH_PARAM.sub(lambda m: "{" + m.group(1) + "}", ep.path)][ep.method.lower()] = operation

    tags = sorted({ep.tag for ep in endpoints})
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ftdesk local trading API",
            "version": version,
            "description": f"{API_DESCRIPTION}\n{STREAMS_DESCRIPTION}",
        },
        "servers": [{"url": "/", "description": "This ftdesk instance"}],
        "externalDocs": {
            "description": "The streams (SSE and the quote WebSocket): AsyncAPI 3.0",
            "url": ASYNCAPI_PATH,
        },
        "tags": [{"name": tag} for tag in tags],
        "security": [{"bearerAuth": []}],
        "paths": dict(paths),
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The API key: `ftdesk --print-api-key` prints it.",
                },
                "apiKeyQuery": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "api_key",
                    "description": "The API key as a query parameter; accepted only on streaming GET endpoints.",
                },
            },
            "schemas": defs,
        },
    }


def _drop_property_titles(node: Any) -> None:
    """Remove the titles pydantic gives each property (``Date`` for ``date``) from the schemas.

    Client generators take a titled property schema for a model of that name: openapi-generator's
    typescript-fetch and python targets renamed 39 of them (``Date`` is a reserved type name there). A property
    is named by its key already; the titles of the components themselves stay.
    """
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for schema in properties.values():
                if isinstance(schema, dict):
                    schema.pop("title", None)
        for value in node.values():
            _drop_property_titles(value)
    elif isinstance(node, list):
        for value in node:
            _drop_property_titles(value)


def _add_sse_blocks(endpoints: list[Endpoint], key_map: dict[Any, Any], defs: dict[str, Any]) -> None:
    """Add the schema of each SSE stream's blocks (``QuoteEvent``, ``BepsEvent``, ...) to the components."""
    for ep in endpoints:
        if isinstance(stream := ep.extra_openapi.get(SSE_EXTENSION), SseStream):
            defs.update(sse_block_schemas(stream, key_map, defs))


class OpenApiDocument:
    """The service's OpenAPI description as JSON text, built once, on first use, off the event loop.

    Building it takes ~250 ms (pydantic generates every schema): every start would otherwise spend that
    before its first request, though most runs never ask for /docs, and a request that built it on the
    loop would stall every stream for as long.
    """

    def __init__(self, endpoints: list[Endpoint], *, version: str) -> None:
        self._endpoints = endpoints
        self._version = version
        self._building: asyncio.Future[str] | None = None

    async def text(self) -> str:
        """Return the description as JSON text; concurrent first callers share one build."""
        if self._building is None:
            self._building = asyncio.ensure_future(asyncio.to_thread(self._build))
        # shield: a caller that goes away must not cancel the build the others wait for
        return await asyncio.shield(self._building)

    def _build(self) -> str:
        return json.dumps(build_openapi(self._endpoints, version=self._version))
