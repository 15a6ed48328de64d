"""The frames of the quote and account-event streams as pydantic models, and the table of each stream's events.

The routes build every JSON frame through these models, and /docs/openapi.json and /docs/asyncapi.json take
their payload schemas from the same models, so the documents cannot drift from what the streams send.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from ftdesk.domain.market import OrderBook, Quote
from ftdesk.streaming.models import HubState

SYMBOL_UNAVAILABLE = "SYMBOL_UNAVAILABLE"
ASYNCAPI_PATH = "/docs/asyncapi.json"
"""Where the AsyncAPI 3.0 document of the streams is served."""
STREAMS_DESCRIPTION = f"""\
**Streams.** Quotes and account events stream as Server-Sent Events (`GET /api/v1/streaming/quotes`,
`GET /api/v1/streaming/events`: `text/event-stream`, their blocks named in the 200 response), and quotes also
over a WebSocket at `/api/v1/ws/quotes` (the first path, `/ws/quotes`, stays as an alias). The WebSocket is
not listed among the operations here, since a client generator would turn it into a plain GET that cannot
work: it, its subscribe/unsubscribe/ping frames, their acknowledgements and error frames, and the SSE
streams' events are described in the AsyncAPI 3.0 document at [`{ASYNCAPI_PATH}`]({ASYNCAPI_PATH}).
"""
HEARTBEAT = ": heartbeat\n\n"
"""The SSE heartbeat: a comment block, which EventSource clients read and drop without an event."""

RequestErrorCode = Literal["MALFORMED_REQUEST", "VALIDATION_ERROR"]
"""The codes of the error frame that answers a bad client frame on the quote WebSocket."""


def _absent_when_none(value: Any) -> bool:
    return value is None


def _no_default(schema: dict[str, Any]) -> None:
    # A field left out of the frame when empty has no default a client would see: null is never sent.
    schema.pop("default", None)


class StreamState(BaseModel):
    """The data of an SSE ``status`` event or a WebSocket ``status`` frame: the upstream quote connection."""

    state: HubState = Field(description="The connection's state, as GET /api/v1/streaming/status names it.")
    description: str = Field(description="What the state means, for a human.")
    since: str = Field(description="ISO 8601 time the connection entered this state.")
    last_error: str | None = Field(description="The last upstream error, or null.")
    halted: bool = Field(
        description="True while trading is halted (the kill switch): previews and places are refused. A new status "
        "frame follows when it changes."
    )


class SymbolUnavailable(BaseModel):
    """The upstream refused a symbol (unknown, delisted) or only its order book; the other symbols keep streaming."""

    code: Literal["SYMBOL_UNAVAILABLE"] = Field(description="Always SYMBOL_UNAVAILABLE.")
    symbol: str = Field(description="The refused symbol.")
    book: bool | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_absent_when_none,
        json_schema_extra=_no_default,
        description="Present and true when only the symbol's order book was refused (its quote may still stream).",
    )
    message: str = Field(description="The upstream's reason, for a human.")


class FieldProblem(BaseModel):
    """One bad place of a client frame: which field, and why."""

    model_config = ConfigDict(extra="allow")

    field: str = Field(description="The field, dotted for nested ones (`symbols.0`), or `message` for the frame.")
    location: str = Field(description="Always `message` on the WebSocket.")
    message: str = Field(description="What is wrong, for a human.")
    type: str = Field(description="Machine-readable kind of problem (missing, extra_forbidden, json_too_deep, ...).")


# --- WebSocket frames: every one is a JSON object whose `type` says which it is ---------------------------


class _Typed(BaseModel):
    """Puts `type` first in every WebSocket frame (a frame's own `type` narrows it to one value)."""

    type: str


class WsStatusFrame(StreamState, _Typed):
    """Server frame: the upstream quote connection's state; sent first, then whenever it changed."""

    type: Literal["status"]


class WsQuoteFrame(Quote, _Typed):
    """Server frame: the latest quote of a subscribed symbol (conflated: a slow reader gets the newest)."""

    type: Literal["quote"]


class WsBookFrame(OrderBook, _Typed):
    """Server frame: the whole current order book of a symbol subscribed with depth (never a delta)."""

    type: Literal["book"]


class WsSymbolErrorFrame(SymbolUnavailable, _Typed):
    """Server frame: the upstream refused a subscribed symbol or its book."""

    type: Literal["error"]


class WsRequestErrorFrame(_Typed):
    """Server frame answering a client frame that was refused; the connection stays open."""

    type: Literal["error"]
    code: RequestErrorCode = Field(
        description="MALFORMED_REQUEST: not JSON, or a binary frame. VALIDATION_ERROR: an unknown action, a missing "
        "or malformed symbol, a wrong JSON type, an unknown field, too many symbols, too deep or too large numbers."
    )
    message: str = Field(description="What was wrong, for a human.")
    details: list[FieldProblem] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_absent_when_none,
        json_schema_extra=_no_default,
        description="Each bad place (VALIDATION_ERROR only).",
    )


class WsAckFrame(_Typed):
    """Server frame answering a subscribe or unsubscribe frame: what changed, and what the connection now holds."""

    type: Literal["ack"]
    action: Literal["subscribe", "unsubscribe"] = Field(description="The action acknowledged.")
    symbols: list[str] = Field(description="Symbols this frame added (subscribe) or removed (unsubscribe).")
    books: list[str] = Field(description="Symbols whose order book this frame added or removed.")
    subscribed: list[str] = Field(description="Every symbol the connection now holds.")
    depth: list[str] = Field(description="Every symbol whose order book the connection now holds.")


class WsPongFrame(_Typed):
    """Server frame answering a ping frame."""

    type: Literal["pong"]


# --- the tables of each stream's events, read by the OpenAPI and AsyncAPI builders --------------------------


@dataclass(frozen=True)
class SseEvent:
    """One kind of block of an SSE stream: its `event:` name, its data model and whether it has an `id:` line."""

    name: str
    """The `event:` field; empty for the heartbeat, a comment block without an event."""
    title: str
    """The name of the block's schema in the OpenAPI and of its message in the AsyncAPI document."""
    summary: str
    data: type[BaseModel] | None = None
    numbered: bool = True
    fields: frozenset[str] | None = None
    """The model's fields the data carries, when it carries only some."""


@dataclass(frozen=True)
class SseStream:
    """An SSE endpoint's frames: what its 200 response says and which events it carries."""

    description: str
    events: tuple[SseEvent, ...]
    id_meaning: str


HEARTBEAT_EVENT = SseEvent(
    name="",
    title="HeartbeatEvent",
    summary="`: heartbeat`, a comment block sent after a heartbeat interval without an event, so proxies and "
    "clients see the connection alive; EventSource clients drop it without an event.",
    numbered=False,
)

SSE_EXTENSION = "x-ftdesk-sse"
"""The key of an SSE endpoint's ``SseStream`` in its ``extra_openapi``; the OpenAPI builder turns it into the
``text/event-stream`` response, the AsyncAPI builder into a channel."""


@dataclass(frozen=True)
class WsChannel:
    """A WebSocket endpoint as the AsyncAPI document describes it: the frames clients send and the channel's text."""

    client_message: type[BaseModel]
    description: str
    alias_of: str | None = None
    """The path this endpoint is an alias of (same handler and frames); None on the channel's own path."""


WS_EXTENSION = "x-ftdesk-ws"
"""The key of a WebSocket endpoint's ``WsChannel`` in its ``extra_openapi`` (WebSockets are not OpenAPI
operations: only the AsyncAPI builder reads it)."""

WS_MESSAGES: Mapping[str, type[BaseModel]] = MappingProxyType(
    {
        "status": WsStatusFrame,
        "quote": WsQuoteFrame,
        "book": WsBookFrame,
        "symbolError": WsSymbolErrorFrame,
        "ack": WsAckFrame,
        "requestError": WsRequestErrorFrame,
        "pong": WsPongFrame,
    }
)
"""The server frames of the quote WebSocket, by message name."""


SCHEMA_REF = "#/components/schemas/{model}"


def sse_models(stream: SseStream) -> list[type[BaseModel]]:
    """Return the data models of a stream's events, for a schema generator."""
    return [event.data for event in stream.events if event.data is not None]


def sse_data_refs(stream: SseStream, refs: Mapping[Any, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Return the reference of each event's data schema by event title, adding cut schemas to ``defs``.

    ``refs`` maps each ``(model, "serialization")`` to its generated reference into ``defs``; an event that
    carries only some of its model's fields gets its own data schema (``<title>Data``), cut from the model's.
    """
    data_refs: dict[str, Any] = {}
    for event in stream.events:
        if event.data is None:
            continue
        ref = refs[(event.data, "serialization")]
        if event.fields is not None:
            whole = defs[ref["$ref"].rsplit("/", 1)[-1]]
            title = f"{event.title}Data"
            defs[title] = {
                **whole,
                "title": title,
                "properties": {k: v for k, v in whole["properties"].items() if k in event.fields},
                "required": [k for k in whole.get("required", []) if k in event.fields],
            }
            ref = {"$ref": SCHEMA_REF.format(model=title)}
        data_refs[event.title] = ref
    return data_refs


def sse_block_schemas(stream: SseStream, refs: Mapping[Any, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Return the OpenAPI schema of each block of the stream by title, its data referring to ``defs``."""
    data_refs = sse_data_refs(stream, refs, defs)
    schemas: dict[str, Any] = {}
    for event in stream.events:
        if event.data is None:
            schemas[event.title] = {
                "type": "object",
                "title": event.title,
                "description": event.summary,
                "properties": {"comment": {"const": HEARTBEAT.strip(": \n"), "description": "The comment's text."}},
                "required": ["comment"],
            }
            continue
        properties: dict[str, Any] = {
            "event": {"const": event.name, "description": "The `event:` line."},
            "data": {**data_refs[event.title], "description": "The `data:` line: this JSON on one line."},
        }
        if event.numbered:
            properties["id"] = {"type": "integer", "minimum": 1, "description": f"The `id:` line: {stream.id_meaning}"}
        schemas[event.title] = {
            "type": "object",
            "title": event.title,
            "description": event.summary,
            "properties": properties,
            "required": list(properties),
        }
    return schemas


def sse_response(stream: SseStream) -> dict[str, Any]:
    """Return the OpenAPI 200 response of an SSE endpoint: ``text/event-stream``, its blocks named."""
    return {
        "description": stream.description,
        "content": {
            "text/event-stream": {
                "schema": {
                    "description": "A sequence of blocks separated by a blank line, each one of these.",
                    "oneOf": [{"$ref": SCHEMA_REF.format(model=event.title)} for event in stream.events],
                }
            }
        },
    }
