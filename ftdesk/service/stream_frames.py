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
HEARTBEAT = ": heartbeat\n\n"
"""The SSE heartbeat: a comment block, which EventSource clients read and drop without an event."""

RequestErrorCode = Literal["MALFORMED_REQUEST", "VALIDATION_ERROR"]
"""The codes of the error frame that answers a bad client frame on the quote WebSocket."""


def _absent_when_none(value: Any) -> bool:
    return value is None


class StreamState(BaseModel):
    """The data of an SSE ``status`` event or a WebSocket ``status`` frame: the upstream quote connection."""

    state: HubState = Field(description="The connection's state, as GET /api/v1/streaming/status names it.")
    description: str = Field(description="What the state means, for a human.")
    since: str = Field(description="ISO 8601 time the connection entered this state.")
    last_error: str | None = Field(description="The last upstream error, or null.")


class SymbolUnavailable(BaseModel):
    """The upstream refused a symbol (unknown, delisted) or only its order book; the other symbols keep streaming."""

    code: Literal["SYMBOL_UNAVAILABLE"] = Field(description="Always SYMBOL_UNAVAILABLE.")
    symbol: str = Field(description="The refused symbol.")
    book: bool | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_absent_when_none,
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
        default=None, exclude_if=_absent_when_none, description="Each bad place (VALIDATION_ERROR only)."
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
