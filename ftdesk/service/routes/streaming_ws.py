"""Streaming quotes over a WebSocket (WS /api/v1/ws/quotes): subscribe and unsubscribe by frame, quotes as JSON frames.

The same connection is also served at ``/ws/quotes``, the path of the first releases, kept as an alias: one handler
serves both, so authentication, the Host and Origin checks, the frames and shutdown cannot drift apart.

Each WebSocket is a consumer of the one ``QuoteHub``; no brokerage session is needed to connect or subscribe.
The handler runs inside ``StreamRegistry.track`` so that shutdown closes the socket at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Literal

from aiohttp import WSCloseCode, WSMsgType, web
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ftdesk.brokers.base import book_key
from ftdesk.domain import errors as e
from ftdesk.service.push.frames import (
    WS_EXTENSION,
    FieldProblem,
    WsAckFrame,
    WsChannel,
    WsPongFrame,
    WsRequestErrorFrame,
)
from ftdesk.service.push.quote_frames import (
    MAX_STREAM_SYMBOLS,
    SYMBOL_UNAVAILABLE,
    QuoteJson,
    book_symbols,
    plain_symbols,
    stream_state,
    with_books,
)
from ftdesk.service.push.state import DEFAULT_HEARTBEAT_SECONDS, STREAMING, StreamingState
from ftdesk.service.routes.common import Symbol, context
from ftdesk.service.web.errors import spec_for
from ftdesk.service.web.json_input import MAX_JSON_DEPTH, MAX_WS_MESSAGE_BYTES, parse_json
from ftdesk.service.web.routing import Call, RouteTable, validate_json
from ftdesk.service.web.websocket import ClientWebSocket, text_frame
from ftdesk.streaming.consumer import QuoteConsumer, normalize_symbols
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import ConsumerClosed, QuoteItem

routes = RouteTable(tag="streaming")
log = logging.getLogger(__name__)

WS_QUOTES_PATH = "/api/v1/ws/quotes"
"""Where the quote WebSocket is served: under ``/api/v1`` like every other path of the API."""
WS_QUOTES_ALIAS = "/ws/quotes"
"""The path the quote WebSocket had before it moved under ``/api/v1``; it stays, and behaves identically."""

WS_CLOSE_TIMEOUT = 1.0
"""Seconds the server waits for the client's close frame after closing a WebSocket."""


class WsClientMessage(BaseModel):
    """One client frame of the quote WebSocket (strict, like request bodies: JSON types are taken as they are)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action: Literal["subscribe", "unsubscribe", "ping"]
    symbols: list[Symbol] = Field(default_factory=list, max_length=MAX_STREAM_SYMBOLS)
    depth: bool = False

    @model_validator(mode="after")
    def _symbols_for_subscriptions(self) -> WsClientMessage:
        if self.action != "ping" and not self.symbols:
            raise ValueError(f"{self.action} needs a non-empty 'symbols' list")
        return self


def _error_frame(error: e.MalformedRequest | e.ValidationFailed) -> WsRequestErrorFrame:
    details = None if error.details is None else [FieldProblem.model_validate(item) for item in error.details]
    return WsRequestErrorFrame.model_validate(
        {"type": "error", "code": spec_for(error).code, "message": error.message, "details": details}
    )


def _ws_reply(consumer: QuoteConsumer, text: str) -> WsAckFrame | WsPongFrame | WsRequestErrorFrame:
    """Apply one client frame and return the answer (an ack, a pong or an error)."""
    try:
        message = validate_json(WsClientMessage, parse_json(text, location="message", what="frame"), "message")
    except (e.MalformedRequest, e.ValidationFailed) as exc:
        return _error_frame(exc)
    assert isinstance(message, WsClientMessage)
    if message.action == "ping":
        return WsPongFrame(type="pong")
    if message.action == "subscribe":
        if len(set(plain_symbols(consumer.symbols)) | set(message.symbols)) > MAX_STREAM_SYMBOLS:
            return _error_frame(
                e.ValidationFailed.for_fields(
                    f"One WebSocket may hold at most {MAX_STREAM_SYMBOLS} symbols; unsubscribe some first",
                    [("symbols", f"would hold more than {MAX_STREAM_SYMBOLS} symbols")],
                    location="message",
                )
            )
        changed = consumer.acquire(with_books(normalize_symbols(message.symbols), message.depth))
    elif message.depth:  # only the books: the quotes stay
        changed = consumer.release([book_key(symbol) for symbol in normalize_symbols(message.symbols)])
    else:
        changed = consumer.release(with_books(normalize_symbols(message.symbols), True))
    held = consumer.symbols
    return WsAckFrame(
        type="ack",
        action=message.action,
        symbols=plain_symbols(changed),
        books=book_symbols(changed),
        subscribed=plain_symbols(held),
        depth=book_symbols(held),
    )


class _WsQuotes:
    """Writes the quote frames of one WebSocket, with a status frame when the hub's state changed.

    Like ``_SseQuotes``: ``send`` serves both the pump and direct delivery. Every write takes the send lock,
    so quote frames never interleave with the replies to client frames.
    """

    def __init__(
        self,
        ws: ClientWebSocket,
        hub: QuoteHub,
        encoded: QuoteJson,
        send_lock: asyncio.Lock,
        halted: Callable[[], bool],
    ) -> None:
        self._ws = ws
        self._hub = hub
        self._send_lock = send_lock
        self._encoded = encoded
        self._halted = halted
        self._state = stream_state(hub, halted())

    def _status(self) -> str:
        return self._encoded.ws_status(self._state)

    async def open(self) -> None:
        """Send the first status frame."""
        async with self._send_lock:
            await self._ws.send_str(self._status())

    async def send(self, batch: list[QuoteItem]) -> None:
        """Send a batch of updates, after a status frame if the state changed."""
        texts: list[str] = []
        if self._hub.state is not self._state.state or self._halted() != self._state.halted:
            self._state = stream_state(self._hub, self._halted())
            texts.append(self._status())
        if not texts and not batch:
            return
        if self._ws.writes_frames and not self._send_lock.locked():
            # The common case: every frame made once for all sockets, the batch in one write, no await unless
            # the socket is full. Whole frames: nothing can interleave, so no lock is taken.
            frames = b"".join([text_frame(text) for text in texts] + [self._encoded.ws_frame_bytes(i) for i in batch])
            if self._ws.write_frames(frames):
                await self._ws.drain_frames()
            return
        texts += [self._encoded.ws_frame(item) for item in batch]
        async with self._send_lock:
            for text in texts:
                await self._ws.send_str(text)


async def _pump_ws(
    ws: ClientWebSocket,
    consumer: QuoteConsumer,
    streaming: StreamingState,
    send_lock: asyncio.Lock,
    halted: Callable[[], bool],
) -> None:
    stream = _WsQuotes(ws, streaming.hub, streaming.frames, send_lock, halted)
    await stream.open()
    consumer.deliver_to(stream)
    while True:
        try:
            batch = await consumer.get(timeout=streaming.heartbeat_seconds)
        except ConsumerClosed:
            # The hub is shutting down: tell the client to come back later.
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")
            return
        await stream.send(batch)


WS_DESCRIPTION = f"""\
All frames are JSON text frames.

Client frames (each is answered, and a bad one never closes the connection):
- `{{"action": "subscribe", "symbols": ["AAPL", ...]}}` -> `{{"type": "ack", "action": "subscribe",
  "symbols": [newly added], "books": [], "subscribed": [all held], "depth": [symbols whose book is held]}}`; the
  current quote of each new symbol follows. With `"depth": true` the order book (level 2) of each symbol is
  held too (`books` lists the new ones) and streams as `book` frames.
- `{{"action": "unsubscribe", "symbols": [...]}}` -> `{{"type": "ack", "action": "unsubscribe",
  "symbols": [removed], "books": [books removed], "subscribed": [...], "depth": [...]}}`: a symbol goes with its
  book. With `"depth": true` only the books go and the quotes stay.
- `{{"action": "ping"}}` -> `{{"type": "pong"}}`.
- Not JSON -> `{{"type": "error", "code": "MALFORMED_REQUEST", "message"}}`; an unknown action, a missing or
  malformed symbol, a wrong JSON type (`"symbols": "AAPL"`), an unknown field, more than {MAX_STREAM_SYMBOLS}
  symbols, nesting deeper than {MAX_JSON_DEPTH} levels or a number too large (see Input limits) ->
  `{{"type": "error", "code": "VALIDATION_ERROR", "message", "details": [{{"field", "location", "message",
  "type"}}]}}`.
- A frame larger than {MAX_WS_MESSAGE_BYTES // 1024} KiB closes the connection with 1009 (message too big).

Server frames:
- `{{"type": "status", "state", "description", "since", "last_error"}}`: first, then when the upstream state
  changed (within {DEFAULT_HEARTBEAT_SECONDS:g} s).
- `{{"type": "quote", "symbol", "last", "bid", "ask", ...}}`: the latest quote of a held symbol (conflated).
- `{{"type": "book", "symbol", "bids": [{{"price", "size", "venue", "time"}}, ...], "asks": [...], "time"}}`: the
  whole current order book of a symbol held with depth, best level first (conflated like quotes). Books are
  shared between connections like quotes: one upstream subscription per symbol.
- `{{"type": "error", "code": "{SYMBOL_UNAVAILABLE}", "symbol", "message"}}`: the upstream refused a symbol
  (`"book": true` when it refused only the symbol's book).

The server pings every {DEFAULT_HEARTBEAT_SECONDS:g} s (WebSocket ping frames) and closes with 1001 (going away)
when the service stops, and with 1011 (internal error) if the connection hits an unexpected failure (logged
under the handshake's request id): a connection is never left open without being served.
"""


@routes.get(
    WS_QUOTES_PATH,
    full_path=True,
    summary="Stream quotes (WebSocket)",
    kind="websocket",
    query_api_key=True,
    errors=(e.MalformedRequest, e.StreamingUnavailable),
    extra_openapi={WS_EXTENSION: WsChannel(WsClientMessage, WS_DESCRIPTION)},
)
async def quotes_websocket(call: Call[None, None]) -> web.StreamResponse:
    """Open a WebSocket for quotes: subscribe and unsubscribe symbols at any time, quotes arrive as JSON frames.

    One connection holds at most 200 symbols. No brokerage session is needed to connect or subscribe:
    symbols subscribed before login start streaming after login. The handshake must come from this machine
    (a foreign Origin is refused with ORIGIN_NOT_ALLOWED, as on every endpoint); browsers pass the key as
    `api_key` in the query. A plain HTTP request (no upgrade) is MALFORMED_REQUEST. The frames, both ways,
    are those of the `quotesWebSocket` channel of `/docs/asyncapi.json`. The same WebSocket is also served at
    `/ws/quotes`, an alias kept for scripts written before it moved under `/api/v1`.
    """
    return await _open_quotes_websocket(call)


@routes.get(
    WS_QUOTES_ALIAS,
    full_path=True,
    summary="Stream quotes (WebSocket, alias of /api/v1/ws/quotes)",
    kind="websocket",
    query_api_key=True,
    errors=(e.MalformedRequest, e.StreamingUnavailable),
    extra_openapi={WS_EXTENSION: WsChannel(WsClientMessage, WS_DESCRIPTION, alias_of=WS_QUOTES_PATH)},
)
async def quotes_websocket_alias(call: Call[None, None]) -> web.StreamResponse:
    """Open the quote WebSocket at its first path: an alias of `/api/v1/ws/quotes` that behaves identically.

    Same handler, so the same API key (header, or `api_key` in the query), the same Host and Origin checks,
    the same client and server frames, limits and close codes. New scripts should connect to
    `/api/v1/ws/quotes`; this path stays for those written before the WebSocket moved under `/api/v1`.
    """
    return await _open_quotes_websocket(call)


async def _open_quotes_websocket(call: Call[None, None]) -> web.StreamResponse:
    """Upgrade the request and serve the connection until either side ends it."""
    ctx = context(call)
    streaming = call.app[STREAMING]
    ws = ClientWebSocket(  # closes with 1002 on an unmasked client frame (RFC 6455 section 5.1)
        timeout=WS_CLOSE_TIMEOUT, heartbeat=streaming.heartbeat_seconds, max_msg_size=MAX_WS_MESSAGE_BYTES
    )
    if not ws.can_prepare(call.request):
        raise e.MalformedRequest("This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)")
    consumer = ctx.quotes.open_consumer("ws")
    try:
        await ws.prepare(call.request)
        send_lock = asyncio.Lock()
        with ctx.streams.track(ws):
            await _serve_ws(call, ws, consumer, streaming, send_lock)
        return ws
    finally:
        consumer.close()


async def _read_ws(
    ws: web.WebSocketResponse, consumer: QuoteConsumer, encoded: QuoteJson, send_lock: asyncio.Lock
) -> None:
    """Answer every client frame until the client closes the connection."""
    async for message in ws:
        reply: WsAckFrame | WsPongFrame | WsRequestErrorFrame
        if message.type is WSMsgType.TEXT:
            reply = _ws_reply(consumer, message.data)
        elif message.type is WSMsgType.BINARY:
            reply = _error_frame(e.MalformedRequest("Send JSON text frames, not binary frames"))
        else:  # ERROR: the connection is broken
            return
        async with send_lock:
            await ws.send_str(encoded.ws_reply(reply))


async def _serve_ws(
    call: Call[Any, Any],
    ws: ClientWebSocket,
    consumer: QuoteConsumer,
    streaming: StreamingState,
    send_lock: asyncio.Lock,
) -> None:
    """Run the connection's reader and writer until either ends; an unexpected error closes it with 1011.

    Either task failing alone would leave a half-dead connection (frames unanswered, or quotes no longer
    sent while the socket stays open), so the first to end ends both.
    """
    name = f"ws-quotes-{consumer.id}"
    tasks = {
        asyncio.create_task(
            _pump_ws(ws, consumer, streaming, send_lock, lambda: context(call).safety.halted), name=f"{name}-writer"
        ),
        asyncio.create_task(_read_ws(ws, consumer, streaming.frames, send_lock), name=f"{name}-reader"),
    }
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    failures = [
        exc
        for task in done
        if not task.cancelled() and (exc := task.exception()) is not None and not isinstance(exc, ConnectionError)
    ]
    # ConnectionError: the client went away mid-write (a reset, or lost while a frame waited to drain).
    if failures:
        log.error(
            "WebSocket of request %s ended by an unexpected error; closing it with 1011",
            call.request_id,
            exc_info=failures[0],
        )
        with contextlib.suppress(Exception):
            await ws.close(code=WSCloseCode.INTERNAL_ERROR, message=b"internal error")
