"""The AsyncAPI 3.0 document of the streams, served at /docs/asyncapi.json; there is no hand-kept copy.

Channels, messages and operations come from the metadata of the served endpoints (``Endpoint.extra_openapi``:
an SSE endpoint's ``SseStream``, a WebSocket's ``WsChannel``) and the WebSocket's frame models
(``push.frames``); every payload schema is generated from the pydantic model the route builds that frame with,
so the document cannot drift from what the streams send. No route module is imported here.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ftdesk.service.docs.openapi import ResponseFieldsRequired
from ftdesk.service.push.frames import (
    HEARTBEAT,
    SCHEMA_REF,
    SSE_EXTENSION,
    WS_EXTENSION,
    WS_MESSAGES,
    SseEvent,
    SseStream,
    WsAckFrame,
    WsChannel,
    WsPongFrame,
    WsRequestErrorFrame,
    sse_data_refs,
    sse_models,
)
from ftdesk.service.web.routing import Endpoint

ASYNCAPI_VERSION = "3.0.0"
HTTP_SERVER = "local-http"
WS_SERVER = "local-ws"
SSE_CHANNELS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"stream_quotes": ("quoteStream", "Quotes (SSE)"), "stream_events": ("accountEvents", "Account events (SSE)")}
)
"""The channel name and title of each SSE endpoint by its operationId, which also names the channel's operation;
the address, the query and the events come from the endpoint itself."""
ModelKey = tuple[type[BaseModel], Literal["validation", "serialization"]]

DOCUMENT_DESCRIPTION = """\
The streams of the ftdesk local trading API: quotes and account events as Server-Sent Events, and quotes
over a WebSocket with subscribe and unsubscribe frames. The REST operations are in `/docs/openapi.json`.

Authenticate with `Authorization: Bearer <API key>` (`ftdesk --print-api-key` prints it), or with
`api_key` in the query for browsers, which cannot set headers on an EventSource or a WebSocket.

The quote WebSocket is served at `{path}`; `{alias}`, its path before it moved under `/api/v1`, stays as an
alias with the same frames, limits and checks.
"""

SECURITY_SCHEMES: Mapping[str, Any] = MappingProxyType(
    {
        "bearerAuth": {
            "type": "http",
            "scheme": "bearer",
            "description": "The API key: `ftdesk --print-api-key` prints it.",
        },
        "apiKeyQuery": {
            "type": "httpApiKey",
            "name": "api_key",
            "in": "query",
            "description": "The API key as the `api_key` query parameter, for browsers.",
        },
    }
)

SSE_HEADERS_NOTE = (
    "On the wire this is one SSE block: an `event:` line, the payload as JSON on a `data:` line{id}, then a blank line."
)


def _ref(*parts: str) -> dict[str, str]:
    return {"$ref": "#/" + "/".join(parts)}


def _sse_message(event: SseEvent, stream: SseStream, payloads: Mapping[str, Any]) -> dict[str, Any]:
    """Return the message of one kind of SSE block; the `event:` and `id:` lines are its headers."""
    if event.data is None:  # the heartbeat: a comment, not an event
        return {
            "name": "heartbeat",
            "title": event.title,
            "summary": event.summary,
            "contentType": "text/plain",
            "payload": {"type": "string", "const": HEARTBEAT.strip(": \n"), "description": "The comment's text."},
        }
    header_props: dict[str, Any] = {"event": {"const": event.name, "description": "The `event:` line."}}
    if event.numbered:
        header_props["id"] = {"type": "integer", "minimum": 1, "description": f"The `id:` line: {stream.id_meaning}"}
    id_part = " and an `id:` line" if event.numbered else " (no `id:` line)"
    return {
        "name": event.name,
        "title": event.title,
        "summary": event.summary,
        "description": SSE_HEADERS_NOTE.format(id=id_part),
        "contentType": "application/json",
        "headers": {"type": "object", "properties": header_props, "required": list(header_props)},
        "payload": payloads[event.title],
    }


def _binding_query(ref: Mapping[str, str], schemas: dict[str, Any]) -> dict[str, Any]:
    """Return a query model's schema, taken out of the components (a binding wants an object with properties)."""
    schema = schemas.pop(ref["$ref"].rsplit("/", 1)[-1])
    properties = dict(schema.get("properties", {}))
    properties["api_key"] = {"type": "string", "description": "The API key, for browsers (else the Bearer header)."}
    return {"type": "object", "properties": properties}


def _client_message(action: str, summary: str, example: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    required = ["action"] if action == "ping" else ["action", "symbols"]
    return {
        "name": action,
        "title": f"{action.capitalize()} frame",
        "summary": summary,
        "contentType": "application/json",
        "payload": {
            "allOf": [
                {"$ref": SCHEMA_REF.format(model=model.__name__)},
                {"type": "object", "properties": {"action": {"const": action}}, "required": required},
            ]
        },
        "examples": [{"name": action, "payload": example}],
    }


CLIENT_FRAMES: Mapping[str, tuple[str, dict[str, Any]]] = MappingProxyType(
    {
        "subscribe": (
            "Add symbols (with `depth: true`, their order books too); answered by an ack or an error frame.",
            {"action": "subscribe", "symbols": ["AAPL", "MSFT"], "depth": False},
        ),
        "unsubscribe": (
            "Remove symbols with their books (with `depth: true`, only the books); answered by an ack or an error "
            "frame.",
            {"action": "unsubscribe", "symbols": ["MSFT"]},
        ),
        "ping": ("Ask for a pong frame.", {"action": "ping"}),
    }
)

REPLY_EXAMPLES: Mapping[str, BaseModel] = MappingProxyType(
    {
        "ack": WsAckFrame(
            type="ack", action="subscribe", symbols=["AAPL", "MSFT"], books=[], subscribed=["AAPL", "MSFT"], depth=[]
        ),
        "requestError": WsRequestErrorFrame(
            type="error", code="MALFORMED_REQUEST", message="The frame is not valid JSON: Expecting value (char 0)"
        ),
        "pong": WsPongFrame(type="pong"),
    }
)


def _ws_message(name: str, model: type[BaseModel], payload: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "name": name,
        "title": model.__name__,
        "summary": (model.__doc__ or "").strip().splitlines()[0],
        "contentType": "application/json",
        "payload": payload,
    }
    if name in REPLY_EXAMPLES:
        message["examples"] = [{"name": name, "payload": REPLY_EXAMPLES[name].model_dump(mode="json")}]
    return message


def _websocket(endpoints: Sequence[Endpoint]) -> tuple[Endpoint, WsChannel, str]:
    """Return the quote WebSocket's endpoint, its channel metadata and the path of its alias."""
    channels = [(ep, ws) for ep in endpoints if isinstance(ws := ep.extra_openapi.get(WS_EXTENSION), WsChannel)]
    main, channel = next((ep, ws) for ep, ws in channels if ws.alias_of is None)
    alias = next((ep.path for ep, ws in channels if ws.alias_of == main.path), main.path)
    return main, channel, alias


def build_asyncapi(endpoints: Sequence[Endpoint], *, version: str, host: str) -> dict[str, Any]:
    """Return the AsyncAPI 3.0 document of the served SSE streams and quote WebSocket, served on ``host``."""
    streams = [(ep, stream) for ep in endpoints if isinstance(stream := ep.extra_openapi.get(SSE_EXTENSION), SseStream)]
    ws_endpoint, ws_channel, ws_alias = _websocket(endpoints)
    models: list[ModelKey] = [(ws_channel.client_message, "validation")]
    models += [(ep.query, "validation") for ep, _ in streams if ep.query is not None]
    models += [(model, "serialization") for model in WS_MESSAGES.values()]
    models += [(model, "serialization") for _, stream in streams for model in sse_models(stream)]
    key_map, top = models_json_schema(
        list(dict.fromkeys(models)), ref_template=SCHEMA_REF, schema_generator=ResponseFieldsRequired
    )
    schemas: dict[str, Any] = dict(top.get("$defs", {}))

    messages: dict[str, Any] = {}
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    for ep, stream in streams:
        channel, title = SSE_CHANNELS[ep.operation_id]
        payloads = sse_data_refs(stream, key_map, schemas)
        names = []
        for event in stream.events:
            messages[event.title] = _sse_message(event, stream, payloads)
            names.append(event.title)
        channels[channel] = {
            "address": ep.path,
            "title": title,
            "description": stream.description,
            "servers": [_ref("servers", HTTP_SERVER)],
            "messages": {name: _ref("components", "messages", name) for name in names},
        }
        binding: dict[str, Any] = {"method": ep.method}
        if ep.query is not None:
            binding["query"] = _binding_query(key_map[(ep.query, "validation")], schemas)
        operations[ep.operation_id] = {
            "action": "receive",
            "title": f"Receive {title}",
            "summary": f"{ep.method} {ep.path} and read its blocks until the connection ends.",
            "channel": _ref("channels", channel),
            "messages": [_ref("channels", channel, "messages", name) for name in names],
            "bindings": {"http": {**binding, "bindingVersion": "0.3.0"}},
        }

    ws_names: list[str] = []
    for action, (summary, example) in CLIENT_FRAMES.items():
        messages[action] = _client_message(action, summary, example, ws_channel.client_message)
        ws_names.append(action)
    for name, model in WS_MESSAGES.items():
        messages[name] = _ws_message(name, model, key_map[(model, "serialization")])
        ws_names.append(name)
    ws = "quotesWebSocket"
    channels[ws] = {
        "address": ws_endpoint.path,
        "title": "Quotes (WebSocket)",
        "summary": f"Also served at {ws_alias}, the path before the move under /api/v1 (an alias).",
        "description": f"{ws_endpoint.description.strip()}\n\n{ws_channel.description}",
        "servers": [_ref("servers", WS_SERVER)],
        "messages": {name: _ref("components", "messages", name) for name in ws_names},
        "bindings": {
            "ws": {
                "method": "GET",
                "query": {
                    "type": "object",
                    "properties": {"api_key": {"type": "string", "description": "The API key, for browsers."}},
                },
                "bindingVersion": "0.1.0",
            }
        },
    }

    def ws_messages(*names: str) -> list[dict[str, str]]:
        return [_ref("channels", ws, "messages", name) for name in names]

    for action in ("subscribe", "unsubscribe"):
        operations[f"{action}_quotes_ws"] = {
            "action": "send",
            "title": f"{action.capitalize()} symbols",
            "summary": CLIENT_FRAMES[action][0],
            "channel": _ref("channels", ws),
            "messages": ws_messages(action),
            "reply": {"channel": _ref("channels", ws), "messages": ws_messages("ack", "requestError")},
        }
    operations["ping_quotes_ws"] = {
        "action": "send",
        "title": "Ping",
        "summary": CLIENT_FRAMES["ping"][0],
        "channel": _ref("channels", ws),
        "messages": ws_messages("ping"),
        "reply": {"channel": _ref("channels", ws), "messages": ws_messages("pong", "requestError")},
    }
    operations["receive_quotes_ws"] = {
        "action": "receive",
        "title": "Receive quotes (WebSocket)",
        "summary": "The status, quote, book and symbol-error frames of the symbols the connection holds.",
        "channel": _ref("channels", ws),
        "messages": ws_messages("status", "quote", "book", "symbolError"),
    }

    security = [_ref("components", "securitySchemes", name) for name in SECURITY_SCHEMES]
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "ftdesk local trading API: streams",
            "version": version,
            "description": DOCUMENT_DESCRIPTION.format(path=ws_endpoint.path, alias=ws_alias),
        },
        "defaultContentType": "application/json",
        "servers": {
            HTTP_SERVER: {
                "host": host,
                "protocol": "http",
                "description": "This ftdesk instance: the SSE streams.",
                "security": security,
            },
            WS_SERVER: {
                "host": host,
                "protocol": "ws",
                "description": "This ftdesk instance: the quote WebSocket.",
                "security": security,
            },
        },
        "channels": channels,
        "operations": operations,
        "components": {
            "schemas": schemas,
            "messages": messages,
            "securitySchemes": dict(SECURITY_SCHEMES),
        },
    }


class AsyncApiDocument:
    """The AsyncAPI document, its schemas generated once, on first use, off the event loop (as the OpenAPI)."""

    def __init__(self, endpoints: Sequence[Endpoint], *, version: str) -> None:
        self._endpoints = tuple(endpoints)
        self._version = version
        self._building: asyncio.Future[dict[str, Any]] | None = None

    async def text(self, host: str) -> str:
        """Return the document as JSON text, its servers at ``host`` (the address the client used)."""
        if self._building is None:
            self._building = asyncio.ensure_future(
                asyncio.to_thread(build_asyncapi, self._endpoints, version=self._version, host="")
            )
        document = copy.copy(await asyncio.shield(self._building))
        document["servers"] = {name: {**server, "host": host} for name, server in document["servers"].items()}
        return json.dumps(document)
