"""Streaming: real-time quotes over SSE and WebSocket, the shared REST subscription set, account events over
SSE, and the stream status.

Every quote stream is a consumer of the one ``QuoteHub`` (one upstream market-data connection for all), every
account-event stream one of the ``AccountEventHub``. None of these endpoints needs a brokerage session:
symbols asked for before login (or while the upstream is down) are queued by the hub and start flowing once
the session exists, and an event stream opened before login gets the events after login. Long-lived handlers run inside
``StreamRegistry.track`` so that shutdown ends them at once instead of aiohttp waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from aiohttp import WSCloseCode, WSMsgType, web
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ftdesk.brokers.base import book_key, book_symbol
from ftdesk.domain import errors as e
from ftdesk.domain.market import OrderBook
from ftdesk.service.errors import spec_for
from ftdesk.service.json_input import MAX_JSON_DEPTH, MAX_WS_MESSAGE_BYTES, parse_json
from ftdesk.service.routes.common import Symbol, context
from ftdesk.service.routing import BodyModel, Call, QueryBool, QueryModel, RouteTable, validate_json
from ftdesk.streaming.events import EVENT_STATE_DESCRIPTIONS, AccountEventHub, EventConsumer, EventHubStatus
from ftdesk.streaming.hub import QuoteConsumer, QuoteHub, normalize_symbols
from ftdesk.streaming.models import (
    STATE_DESCRIPTIONS,
    ConsumerClosed,
    HubState,
    QuoteError,
    QuoteHubStatus,
    QuoteItem,
    SymbolSubscription,
)

routes = RouteTable(tag="streaming")
log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
"""Quiet time after which an SSE stream sends a ``: heartbeat`` comment (and a WebSocket a ping)."""
SSE_RETRY_MS = 3000
"""The reconnect delay an SSE stream asks EventSource clients to use, milliseconds."""
MAX_STREAM_SYMBOLS = 200
"""Most symbols one SSE stream, one WebSocket or the shared set may hold."""
WS_CLOSE_TIMEOUT = 1.0
"""Seconds the server waits for the client's close frame after closing a WebSocket."""
SYMBOL_UNAVAILABLE = "SYMBOL_UNAVAILABLE"
QUOTE_JSON_CAPACITY = 4096
"""Most symbols whose latest quote JSON is kept for sharing between streams."""

StreamSymbols = Annotated[
    list[Symbol],
    Field(
        min_length=1,
        max_length=MAX_STREAM_SYMBOLS,
        description=f"Tickers (case-insensitive, upper-cased), 1 to {MAX_STREAM_SYMBOLS}.",
    ),
]


# --- models ----------------------------------------------------------------------------------------


class QuoteStreamQuery(QueryModel):
    """Which symbols an SSE quote stream carries."""

    # Written out rather than StreamSymbols | None: the query parser recognises list fields by annotation.
    symbols: list[Symbol] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_STREAM_SYMBOLS,
        description=(
            f"Tickers to stream, 1 to {MAX_STREAM_SYMBOLS}. Omitted: the stream follows the shared set managed "
            "with POST /streaming/subscribe and /streaming/unsubscribe, including later changes."
        ),
    )
    depth: QueryBool = Field(
        default=False,
        description=(
            "true or false. Also stream each symbol's order book (level 2) as `book` events: Fidelity's MDDS "
            "virtual book (up to 25 levels a side), the paper broker's simulated book. Books are shared between "
            "streams like quotes: one upstream subscription per symbol, whoever asks."
        ),
    )


class SymbolsBody(BodyModel):
    """Symbols to add to or remove from the shared subscription set."""

    symbols: StreamSymbols


class SubscribeResult(BaseModel):
    """What POST /streaming/subscribe changed."""

    added: list[str] = Field(description="Symbols that were not in the shared set before.")
    already_held: list[str] = Field(description="Symbols the shared set held already (nothing changed for them).")
    symbols: list[str] = Field(description="The whole shared set afterwards, in the order the symbols were added.")


class UnsubscribeResult(BaseModel):
    """What POST /streaming/unsubscribe changed."""

    removed: list[str] = Field(description="Symbols taken out of the shared set.")
    not_held: list[str] = Field(description="Symbols the shared set did not hold (ignored).")
    symbols: list[str] = Field(description="The whole shared set afterwards.")


class StreamingStatus(BaseModel):
    """Both upstream streams and the open consumers."""

    mdds: QuoteHubStatus = Field(description="The shared upstream market-data (quote) connection.")
    beps: EventHubStatus = Field(description="The upstream account-event (BEPS) connection and its SSE streams.")
    consumers: dict[str, int] = Field(
        description="Open quote consumers by kind: sse (SSE streams), ws (WebSockets), shared (the REST set)."
    )


class StreamState(BaseModel):
    """The data of an SSE ``status`` event or a WebSocket ``status`` frame."""

    state: HubState
    description: str
    since: str
    last_error: str | None


class WsClientMessage(BaseModel):
    """One client frame of WS /ws/quotes (strict, like request bodies: JSON types are taken as they are)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action: Literal["subscribe", "unsubscribe", "ping"]
    symbols: list[Symbol] = Field(default_factory=list, max_length=MAX_STREAM_SYMBOLS)
    depth: bool = False

    @model_validator(mode="after")
    def _symbols_for_subscriptions(self) -> WsClientMessage:
        if self.action != "ping" and not self.symbols:
            raise ValueError(f"{self.action} needs a non-empty 'symbols' list")
        return self


# --- the shared set ----------------------------------------------------------------------------------


class SharedQuotes:
    """The REST-managed symbol set (one ``shared`` consumer) and the SSE streams that follow it."""

    def __init__(self, hub: QuoteHub) -> None:
        self.consumer = hub.open_consumer("shared")
        self._followers: dict[QuoteConsumer, bool] = {}  # follower -> whether it also holds the books

    @property
    def symbols(self) -> list[str]:
        """Return the shared set in the order the symbols were added."""
        return self.consumer.symbols

    def add(self, symbols: list[str]) -> SubscribeResult:
        """Add symbols to the set and to every following stream."""
        symbols = normalize_symbols(symbols)
        held = set(self.symbols)
        if len(held | set(symbols)) > MAX_STREAM_SYMBOLS:
            raise e.ValidationFailed.for_fields(
                f"The shared set may hold at most {MAX_STREAM_SYMBOLS} symbols; unsubscribe some first",
                [("symbols", f"would make the shared set larger than {MAX_STREAM_SYMBOLS} symbols")],
            )
        added = self.consumer.acquire(symbols)
        for follower, depth in self._followers.items():
            follower.acquire(with_books(added, depth))
        return SubscribeResult(added=added, already_held=[s for s in symbols if s in held], symbols=self.symbols)

    def remove(self, symbols: list[str]) -> UnsubscribeResult:
        """Remove symbols from the set and from every following stream."""
        symbols = normalize_symbols(symbols)
        removed = self.consumer.release(symbols)
        for follower in self._followers:
            follower.release(with_books(removed, True))
        return UnsubscribeResult(
            removed=removed, not_held=[s for s in symbols if s not in removed], symbols=self.symbols
        )

    def follow(self, consumer: QuoteConsumer, *, depth: bool = False) -> None:
        """Make a consumer hold the shared set (and with ``depth`` its books) now and after every change."""
        consumer.acquire(with_books(self.symbols, depth))
        self._followers[consumer] = depth

    def unfollow(self, consumer: QuoteConsumer) -> None:
        """Stop changing a consumer with the shared set."""
        self._followers.pop(consumer, None)


def with_books(symbols: list[str], depth: bool) -> list[str]:
    """Return the symbols followed, with ``depth``, by the book key of each."""
    return symbols + [book_key(symbol) for symbol in symbols] if depth else list(symbols)


def plain_symbols(keys: list[str]) -> list[str]:
    """Return the symbols among held keys (book keys left out)."""
    return [key for key in keys if book_symbol(key) is None]


def book_symbols(keys: list[str]) -> list[str]:
    """Return the symbols whose book is among held keys."""
    return [symbol for key in keys if (symbol := book_symbol(key)) is not None]


# Keyed by hub rather than stored on the app: the app is frozen once it serves, and the set is opened lazily.
_shared_sets: weakref.WeakKeyDictionary[QuoteHub, SharedQuotes] = weakref.WeakKeyDictionary()


def shared_quotes(hub: QuoteHub) -> SharedQuotes:
    """Return the hub's shared subscription set, opening it on first use."""
    shared = _shared_sets.get(hub)
    if shared is None or shared.consumer.closed:
        shared = _shared_sets[hub] = SharedQuotes(hub)
    return shared


def stream_state(hub: QuoteHub) -> StreamState:
    """Return the hub's connection state as status frames carry it."""
    # Not hub.status(): that builds every consumer's counters, and each new stream calls this.
    return StreamState(
        state=hub.state,
        description=STATE_DESCRIPTIONS[hub.state],
        since=hub.since.isoformat(),
        last_error=hub.last_error,
    )


def symbol_error(item: QuoteError) -> dict[str, Any]:
    """Return the error object of a refused symbol (or of its book: then ``book`` is true)."""
    book = book_symbol(item.symbol)
    if book is not None:
        return {"code": SYMBOL_UNAVAILABLE, "symbol": book, "book": True, "message": item.message}
    return {"code": SYMBOL_UNAVAILABLE, "symbol": item.symbol, "message": item.message}


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class QuoteJson:
    """The JSON of each symbol's latest item, made once and shared by every stream that sends that item.

    The hub hands the same item object to every consumer holding the symbol, so serialising it per stream
    was the larger part of a delivery's cost with many streams. One slot per symbol, checked by identity;
    emptied when it holds ``QUOTE_JSON_CAPACITY`` symbols, so symbols nobody streams any more do not pile up.
    """

    def __init__(self) -> None:
        self._sse: dict[str, tuple[QuoteItem, str]] = {}
        self._ws: dict[str, tuple[QuoteItem, str]] = {}
        self._books: dict[str, tuple[OrderBook, str, str]] = {}  # symbol -> (book, SSE data, WS frame)

    def _book(self, item: OrderBook) -> tuple[OrderBook, str, str]:
        cached = self._books.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._books) >= QUOTE_JSON_CAPACITY:
                self._books.clear()
            data = item.model_dump(mode="json")
            cached = self._books[item.symbol] = (item, _json(data), _json({"type": "book", **data}))
        return cached

    def sse_frame(self, item: QuoteItem) -> tuple[str, str]:
        """Return the SSE event name and data of an item."""
        if isinstance(item, QuoteError):
            return "error", _json(symbol_error(item))
        if isinstance(item, OrderBook):
            return "book", self._book(item)[1]
        cached = self._sse.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._sse) >= QUOTE_JSON_CAPACITY:
                self._sse.clear()
            cached = self._sse[item.symbol] = (item, item.model_dump_json())
        return "quote", cached[1]

    def ws_frame(self, item: QuoteItem) -> str:
        """Return the WebSocket text frame of an item."""
        if isinstance(item, QuoteError):
            return _json({"type": "error", **symbol_error(item)})
        if isinstance(item, OrderBook):
            return self._book(item)[2]
        cached = self._ws.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._ws) >= QUOTE_JSON_CAPACITY:
                self._ws.clear()
            cached = self._ws[item.symbol] = (item, _json({"type": "quote", **item.model_dump(mode="json")}))
        return cached[1]


# Keyed by hub like the shared sets.
_quote_json: weakref.WeakKeyDictionary[QuoteHub, QuoteJson] = weakref.WeakKeyDictionary()


def quote_json(hub: QuoteHub) -> QuoteJson:
    """Return the hub's shared JSON cache, making it on first use."""
    cache = _quote_json.get(hub)
    if cache is None:
        cache = _quote_json[hub] = QuoteJson()
    return cache


# --- SSE -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _ended_on_unexpected_error(call: Call[Any, Any], response: web.StreamResponse, what: str) -> Iterator[None]:
    """End a started stream on an unexpected error: logged once, the connection closed, never half-alive.

    Once the response has started, the envelope middleware can no longer answer with an error; the stream
    ends instead (an EventSource reconnects after the retry delay) and the error is logged here, once.
    """
    try:
        yield
    except ConnectionError:
        raise
    except Exception:
        log.exception("%s of request %s ended by an unexpected error; closed it", what, call.request_id)
        response.force_close()


class _SseQuotes:
    """Writes one SSE quote stream: event ids per connection, a status frame when the hub's state changed.

    Its ``send`` is both what the pump calls with each batch of ``QuoteConsumer.get()`` and the consumer's
    sink for direct delivery (``QuoteConsumer.deliver_to``); the consumer never runs the two at once.
    """

    def __init__(self, response: web.StreamResponse, hub: QuoteHub) -> None:
        self._response = response
        self._hub = hub
        self._encoded = quote_json(hub)
        self._state = stream_state(hub)
        self._next_id = 1

    def _frame(self, event: str, data: str) -> str:
        frame = f"event: {event}\ndata: {data}\nid: {self._next_id}\n\n"
        self._next_id += 1
        return frame

    async def open(self) -> None:
        """Write the reconnect delay and the first status frame."""
        head = f"retry: {SSE_RETRY_MS}\n\n" + self._frame("status", self._state.model_dump_json())
        await self._response.write(head.encode("utf-8"))

    async def send(self, batch: list[QuoteItem]) -> None:
        """Write a batch of updates (a heartbeat when empty), after a status frame if the state changed."""
        frames = ""
        if self._hub.state is not self._state.state:
            self._state = stream_state(self._hub)
            frames += self._frame("status", self._state.model_dump_json())
        if batch:
            frames += "".join([self._frame(*self._encoded.sse_frame(item)) for item in batch])
        else:
            frames += ": heartbeat\n\n"
        await self._response.write(frames.encode("utf-8"))


async def _pump_sse(response: web.StreamResponse, consumer: QuoteConsumer, hub: QuoteHub) -> None:
    stream = _SseQuotes(response, hub)
    await stream.open()
    consumer.deliver_to(stream.send)  # a failed direct write is raised by get(), as a failed send would be
    while True:
        try:
            batch = await consumer.get(timeout=HEARTBEAT_SECONDS)
        except ConsumerClosed:
            return
        await stream.send(batch)


SSE_DESCRIPTION = f"""\
A `text/event-stream` of frames separated by a blank line. The first line of the stream is
`retry: {SSE_RETRY_MS}` (EventSource clients reconnect after {SSE_RETRY_MS // 1000} s). Event frames:

- `event: status`: `data` is `{{"state", "description", "since", "last_error"}}` for the upstream quote
  connection (states as in GET /streaming/status). Sent first, then whenever the state changed, with the next
  update or heartbeat (so within {HEARTBEAT_SECONDS:g} s).
- `event: quote`: `data` is one quote object (`symbol`, `last`, `bid`, `ask` and the other quote fields).
  Quotes are conflated: a client that reads slowly gets the latest quote of each symbol, never a backlog.
- `event: book` (with `depth=true`): `data` is the symbol's order book, `{{"symbol", "bids": [{{"price", "size",
  "venue", "time"}}, ...], "asks": [...], "time"}}`, best level first (bids highest, asks lowest), up to 25 a
  side. Books are conflated like quotes: each `book` event is the whole current book, never a delta.
- `event: error`: `data` is `{{"code": "{SYMBOL_UNAVAILABLE}", "symbol", "message"}}`: the upstream refused a
  symbol (unknown, delisted); the other symbols keep streaming. For a refused book, `data` also has
  `"book": true` (the quote may still stream).
- `: heartbeat` (a comment line) after {HEARTBEAT_SECONDS:g} s without an event, so proxies and clients see
  the connection alive.

Every event frame has an `id:` line: a counter per connection starting at 1. Ids are not resumable: a
reconnecting client gets the current quote of each symbol again instead of a replay.
"""


@routes.get(
    "/streaming/quotes",
    summary="Stream quotes (SSE)",
    query=QuoteStreamQuery,
    kind="sse",
    query_api_key=True,
    errors=(e.StreamingUnavailable,),
    extra_openapi={
        "responses": {
            "200": {
                "description": SSE_DESCRIPTION,
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            }
        }
    },
)
async def stream_quotes(call: Call[None, QuoteStreamQuery]) -> web.StreamResponse:
    """Stream real-time quotes as Server-Sent Events until the client disconnects or the service stops.

    With `symbols` the stream carries those symbols (at most 200); without it, it follows the shared set of
    POST /streaming/subscribe and /streaming/unsubscribe, changes included. With `depth=true` it also carries
    each symbol's order book (level 2) as `book` events. No brokerage session is needed to
    connect: before login the stream sends its status and heartbeats, and quotes start after login. Browsers
    that cannot set the Authorization header pass the key as `api_key` in the query.

    Each symbol's current quote comes first, then every update; see the 200 response for the frames.
    """
    ctx = context(call)
    hub = ctx.quotes
    consumer = hub.open_consumer("sse")  # refused (503) before the response starts when the hub is shut down
    shared: SharedQuotes | None = None
    try:
        if call.query.symbols is None:
            shared = shared_quotes(hub)
            shared.follow(consumer, depth=call.query.depth)
        else:
            consumer.acquire(with_books(normalize_symbols(call.query.symbols), call.query.depth))
        response = web.StreamResponse(headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        response.content_type = "text/event-stream"
        response.charset = "utf-8"
        with ctx.streams.track(response):
            await response.prepare(call.request)
            # A client that went away shows up as a failed write (a quote or the next heartbeat): a reset,
            # or aiohttp's plain ConnectionError when it goes while a write waits for the socket to drain.
            with contextlib.suppress(ConnectionError), _ended_on_unexpected_error(call, response, "SSE quote stream"):
                await _pump_sse(response, consumer, hub)
        return response
    finally:
        if shared is not None:
            shared.unfollow(consumer)
        consumer.close()


# --- account events (SSE) ----------------------------------------------------------------------------

LAST_EVENT_ID_HEADER = "Last-Event-ID"


class EventStreamQuery(QueryModel):
    """Where an account-event stream resumes."""

    last_event_id: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Resume after this event id: the buffered events after it come first. The `Last-Event-ID` header "
            "(which EventSource sends by itself when it reconnects) takes precedence over this parameter."
        ),
    )


class EventStreamState(BaseModel):
    """The data of an account-event stream's ``status`` event."""

    state: HubState
    description: str
    since: str
    last_error: str | None
    events_missed: bool = Field(
        default=False,
        description="True when events after the client's Last-Event-ID are no longer buffered (some were lost).",
    )
    message: str | None = Field(default=None, description="What happened, for missed events or a closed stream.")


def event_stream_state(hub: AccountEventHub, *, missed: bool = False, message: str | None = None) -> EventStreamState:
    """Return the event hub's connection state as status frames carry it."""
    return EventStreamState(
        state=hub.state,
        description=EVENT_STATE_DESCRIPTIONS[hub.state],
        since=hub.since.isoformat(),
        last_error=hub.last_error,
        events_missed=missed,
        message=message,
    )


def _resume_id(call: Call[None, EventStreamQuery]) -> int | None:
    """Return the id to resume after: the Last-Event-ID header, else the last_event_id query parameter."""
    header = call.request.headers.get(LAST_EVENT_ID_HEADER)
    if header is None or not header.strip():
        return call.query.last_event_id
    text = header.strip()
    if not text.isdigit():
        raise e.ValidationFailed.for_fields(
            f"Invalid header: {LAST_EVENT_ID_HEADER} must be an event id (a non-negative integer), got {text!r}",
            [(LAST_EVENT_ID_HEADER, "must be a non-negative integer")],
            location="header",
        )
    return int(text)


EVENT_FIELDS = {"event_type", "category", "desc", "time", "source"}


def _beps_frame(event_id: int, data: str) -> str:
    return f"event: beps\ndata: {data}\nid: {event_id}\n\n"


def _status_frame(state: EventStreamState) -> str:
    # No id line: a status frame must not move the client's Last-Event-ID.
    return f"event: status\ndata: {state.model_dump_json()}\n\n"


async def _pump_events(
    response: web.StreamResponse, consumer: EventConsumer, hub: AccountEventHub, *, missed: bool
) -> None:
    head = f"retry: {SSE_RETRY_MS}\n\n"
    state = event_stream_state(hub)
    head += _status_frame(state)
    if missed:
        head += _status_frame(
            event_stream_state(
                hub,
                missed=True,
                message="Some events after your Last-Event-ID are no longer buffered; every buffered event follows",
            )
        )
    await response.write(head.encode("utf-8"))
    while True:
        try:
            batch = await consumer.get(timeout=HEARTBEAT_SECONDS)
        except ConsumerClosed as closed:
            # Overflow or shutdown: say why before the stream ends (the client may already be gone).
            with contextlib.suppress(ConnectionError, RuntimeError):
                await response.write(_status_frame(event_stream_state(hub, message=closed.reason)).encode("utf-8"))
            return
        frames = ""
        if hub.state is not state.state:
            state = event_stream_state(hub)
            frames += _status_frame(state)
        if batch:
            frames += "".join(_beps_frame(item.id, item.event.model_dump_json(include=EVENT_FIELDS)) for item in batch)
        else:
            frames += ": heartbeat\n\n"
        await response.write(frames.encode("utf-8"))


EVENTS_SSE_DESCRIPTION = f"""\
A `text/event-stream`. The first line is `retry: {SSE_RETRY_MS}`. Frames:

- `event: beps`: `data` is `{{"event_type", "category", "desc", "time", "source"}}` (for example `MFCEX`,
  `order`, `{{"acct_num", "conf_num", "symbol", "qty", "price", ...}}`, ..., `beps`); `id:` is the event id, an
  integer that increases by one per event and starts at 1 when the service starts. `source` says where the
  event came from: `beps` (Fidelity's event stream, live), `alerts` (Fidelity's alert history, polled while
  BEPS is down: fills and cancels only) or `paper`. An event delivered from one source is not delivered again
  from the other.
- `event: status` (no `id:` line, so it never moves Last-Event-ID): `data` is `{{"state", "description", "since",
  "last_error", "events_missed", "message"}}`. Sent first, whenever the upstream state changed (within
  {HEARTBEAT_SECONDS:g} s), with `events_missed: true` when a resume could not be complete, and with a
  `message` just before the server ends the stream (client too slow, or the service stopping).
- `: heartbeat` (a comment) after {HEARTBEAT_SECONDS:g} s without an event.
"""


@routes.get(
    "/streaming/events",
    summary="Stream account events (SSE)",
    query=EventStreamQuery,
    kind="sse",
    query_api_key=True,
    errors=(e.StreamingUnavailable,),
    extra_openapi={
        "responses": {
            "200": {
                "description": EVENTS_SSE_DESCRIPTION,
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            }
        }
    },
)
async def stream_events(call: Call[None, EventStreamQuery]) -> web.StreamResponse:
    """Stream account events (fills, cancels, position and balance changes, price alerts) as Server-Sent Events.

    Events flow while a brokerage session exists; no session is needed to connect (the stream then sends its
    status and heartbeats until login). The service keeps the last 1000 events: reconnect with the
    `Last-Event-ID` header (EventSource does this by itself) or `last_event_id` to get the events after that id
    first. When some of them are no longer kept (or the id is from before a service restart) a `status` frame
    with `events_missed: true` comes first, then every kept event. A client that lets 1000 events pile up
    unread is sent a `status` frame saying so and disconnected; it resumes with its last id.

    Fails with STREAMING_UNAVAILABLE (503) when the account-event feed is not configured (Fidelity without the
    FTSERVICE_BEPS_* settings); the paper broker always has it.
    """
    ctx = context(call)
    hub = ctx.events
    resume_after = _resume_id(call)
    # Refused (503, as a JSON envelope) before the response starts when the feed cannot run or is shut down.
    consumer, replay = hub.open_consumer(resume_after)
    try:
        response = web.StreamResponse(headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        response.content_type = "text/event-stream"
        response.charset = "utf-8"
        with ctx.streams.track(response):
            await response.prepare(call.request)
            # A client that went away shows up as a failed write (an event or the next heartbeat), as in
            # stream_quotes.
            with contextlib.suppress(ConnectionError), _ended_on_unexpected_error(call, response, "SSE event stream"):
                await _pump_events(response, consumer, hub, missed=replay.missed)
        return response
    finally:
        consumer.close()


# --- WebSocket -------------------------------------------------------------------------------------


def _error_frame(error: e.FtdeskError) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "error", "code": spec_for(error).code, "message": error.message}
    if error.details is not None:
        frame["details"] = error.details
    return frame


def _ws_reply(consumer: QuoteConsumer, text: str) -> dict[str, Any]:
    """Apply one client frame and return the answer (an ack, a pong or an error)."""
    try:
        message = validate_json(WsClientMessage, parse_json(text, location="message", what="frame"), "message")
    except (e.MalformedRequest, e.ValidationFailed) as exc:
        return _error_frame(exc)
    assert isinstance(message, WsClientMessage)
    if message.action == "ping":
        return {"type": "pong"}
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
    return {
        "type": "ack",
        "action": message.action,
        "symbols": plain_symbols(changed),
        "books": book_symbols(changed),
        "subscribed": plain_symbols(held),
        "depth": book_symbols(held),
    }


class _WsQuotes:
    """Writes the quote frames of one WebSocket, with a status frame when the hub's state changed.

    Like ``_SseQuotes``: ``send`` serves both the pump and direct delivery. Every write takes the send lock,
    so quote frames never interleave with the replies to client frames.
    """

    def __init__(self, ws: web.WebSocketResponse, hub: QuoteHub, send_lock: asyncio.Lock) -> None:
        self._ws = ws
        self._hub = hub
        self._send_lock = send_lock
        self._encoded = quote_json(hub)
        self._state = stream_state(hub)

    def _status(self) -> str:
        return _json({"type": "status", **self._state.model_dump(mode="json")})

    async def open(self) -> None:
        """Send the first status frame."""
        async with self._send_lock:
            await self._ws.send_str(self._status())

    async def send(self, batch: list[QuoteItem]) -> None:
        """Send a batch of updates, after a status frame if the state changed."""
        texts: list[str] = []
        if self._hub.state is not self._state.state:
            self._state = stream_state(self._hub)
            texts.append(self._status())
        texts += [self._encoded.ws_frame(item) for item in batch]
        if not texts:
            return
        async with self._send_lock:
            for text in texts:
                await self._ws.send_str(text)


async def _pump_ws(ws: web.WebSocketResponse, consumer: QuoteConsumer, hub: QuoteHub, send_lock: asyncio.Lock) -> None:
    stream = _WsQuotes(ws, hub, send_lock)
    await stream.open()
    consumer.deliver_to(stream.send)
    while True:
        try:
            batch = await consumer.get(timeout=HEARTBEAT_SECONDS)
        except ConsumerClosed:
            # The hub is shutting down: tell the client to come back later.
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutting down")
            return
        await stream.send(batch)


WS_DESCRIPTION = f"""\
Switching Protocols: the WebSocket is open. All frames are JSON text frames.

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
  changed (within {HEARTBEAT_SECONDS:g} s).
- `{{"type": "quote", "symbol", "last", "bid", "ask", ...}}`: the latest quote of a held symbol (conflated).
- `{{"type": "book", "symbol", "bids": [{{"price", "size", "venue", "time"}}, ...], "asks": [...], "time"}}`: the
  whole current order book of a symbol held with depth, best level first (conflated like quotes). Books are
  shared between connections like quotes: one upstream subscription per symbol.
- `{{"type": "error", "code": "{SYMBOL_UNAVAILABLE}", "symbol", "message"}}`: the upstream refused a symbol
  (`"book": true` when it refused only the symbol's book).

The server pings every {HEARTBEAT_SECONDS:g} s (WebSocket ping frames) and closes with 1001 (going away)
when the service stops, and with 1011 (internal error) if the connection hits an unexpected failure (logged
under the handshake's request id): a connection is never left open without being served.
"""


@routes.get(
    "/ws/quotes",
    full_path=True,
    summary="Stream quotes (WebSocket)",
    kind="websocket",
    query_api_key=True,
    errors=(e.MalformedRequest, e.StreamingUnavailable),
    extra_openapi={"responses": {"101": {"description": WS_DESCRIPTION}}},
)
async def quotes_websocket(call: Call[None, None]) -> web.StreamResponse:
    """Open a WebSocket for quotes: subscribe and unsubscribe symbols at any time, quotes arrive as JSON frames.

    One connection holds at most 200 symbols. No brokerage session is needed to connect or subscribe:
    symbols subscribed before login start streaming after login. The handshake must come from this machine
    (a foreign Origin is refused with ORIGIN_NOT_ALLOWED, as on every endpoint); browsers pass the key as
    `api_key` in the query. A plain HTTP request (no upgrade) is MALFORMED_REQUEST. See the 101 response for
    the frames.
    """
    ctx = context(call)
    hub = ctx.quotes
    ws = web.WebSocketResponse(timeout=WS_CLOSE_TIMEOUT, heartbeat=HEARTBEAT_SECONDS, max_msg_size=MAX_WS_MESSAGE_BYTES)
    if not ws.can_prepare(call.request):
        raise e.MalformedRequest("This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)")
    consumer = hub.open_consumer("ws")
    try:
        await ws.prepare(call.request)
        send_lock = asyncio.Lock()
        with ctx.streams.track(ws):
            await _serve_ws(call, ws, consumer, hub, send_lock)
        return ws
    finally:
        consumer.close()


async def _read_ws(ws: web.WebSocketResponse, consumer: QuoteConsumer, send_lock: asyncio.Lock) -> None:
    """Answer every client frame until the client closes the connection."""
    async for message in ws:
        if message.type is WSMsgType.TEXT:
            reply = _ws_reply(consumer, message.data)
        elif message.type is WSMsgType.BINARY:
            reply = _error_frame(e.MalformedRequest("Send JSON text frames, not binary frames"))
        else:  # ERROR: the connection is broken
            return
        async with send_lock:
            await ws.send_str(_json(reply))


async def _serve_ws(
    call: Call[Any, Any], ws: web.WebSocketResponse, consumer: QuoteConsumer, hub: QuoteHub, send_lock: asyncio.Lock
) -> None:
    """Run the connection's reader and writer until either ends; an unexpected error closes it with 1011.

    Either task failing alone would leave a half-dead connection (frames unanswered, or quotes no longer
    sent while the socket stays open), so the first to end ends both.
    """
    name = f"ws-quotes-{consumer.id}"
    tasks = {
        asyncio.create_task(_pump_ws(ws, consumer, hub, send_lock), name=f"{name}-writer"),
        asyncio.create_task(_read_ws(ws, consumer, send_lock), name=f"{name}-reader"),
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


# --- REST control and observation ----------------------------------------------------------------


@routes.post(
    "/streaming/subscribe",
    summary="Add symbols to the shared set",
    body=SymbolsBody,
    response=SubscribeResult,
    errors=(e.StreamingUnavailable,),
)
async def subscribe(call: Call[SymbolsBody, None]) -> SubscribeResult:
    """Add symbols to the shared subscription set (at most 200 in all).

    The shared set is what GET /streaming/quotes streams when called without `symbols`; the symbols stay
    subscribed upstream until unsubscribed here, whether or not a stream is open. No brokerage session is
    needed: before login the symbols are queued and subscribed after login. Subscribing a held symbol again
    changes nothing and is listed in `already_held`.
    """
    return shared_quotes(context(call).quotes).add(call.body.symbols)


@routes.post(
    "/streaming/unsubscribe",
    summary="Remove symbols from the shared set",
    body=SymbolsBody,
    response=UnsubscribeResult,
    errors=(e.StreamingUnavailable,),
)
async def unsubscribe(call: Call[SymbolsBody, None]) -> UnsubscribeResult:
    """Remove symbols from the shared subscription set; symbols it does not hold are listed in `not_held`.

    A symbol no other stream holds leaves the upstream after the unsubscribe delay (FTSERVICE_UNSUBSCRIBE_DELAY,
    10 s by default), so subscribing it again meanwhile causes no upstream churn.
    """
    return shared_quotes(context(call).quotes).remove(call.body.symbols)


@routes.get("/streaming/subscriptions", summary="Active subscriptions", response=list[SymbolSubscription])
async def subscriptions(call: Call[None, None]) -> list[SymbolSubscription]:
    """List every symbol held by a stream, a WebSocket or the shared set, by symbol.

    `refcount` counts the consumers holding the symbol (each SSE stream, WebSocket and the shared set count
    once; an SSE stream without `symbols` holds the shared symbols itself too), `kinds` names their kinds.
    A symbol nobody holds any more stays listed with `refcount` 0 until its delayed upstream unsubscribe.
    An order book held with depth is listed as `SYMBOL#BOOK`, with its own refcount (books are shared like quotes).
    """
    return context(call).quotes.subscriptions()


@routes.get("/streaming/status", summary="Stream connection state", response=StreamingStatus)
async def streaming_status(call: Call[None, None]) -> StreamingStatus:
    """Report the upstream quote connection (MDDS), the account-event stream (BEPS) and the open consumers.

    `beps.state` is `disabled` with `beps.unavailable_reason` set when the account-event feed is not
    configured (Fidelity without the FTSERVICE_BEPS_* settings).
    """
    ctx = context(call)
    status = ctx.quotes.status()
    return StreamingStatus(mdds=status, beps=ctx.events.status(), consumers=status.consumers_by_kind)
