"""Streaming over Server-Sent Events: quotes (GET /streaming/quotes) and account events (GET /streaming/events).

Every quote stream is a consumer of the one ``QuoteHub``, every account-event stream one of the
``AccountEventHub``. Neither needs a brokerage session: symbols asked for before login (or while the upstream
is down) are queued by the hub and start flowing once the session exists, and an event stream opened before
login gets the events after login. The handlers run inside ``StreamRegistry.track`` so that shutdown ends
them at once instead of aiohttp waiting for them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from pydantic import BaseModel, Field

from ftdesk.domain import errors as e
from ftdesk.domain.event_names import UPSTREAM_EVENTS
from ftdesk.domain.events import AccountEvent
from ftdesk.domain.market import OrderBook, Quote
from ftdesk.service.push.frames import (
    HEARTBEAT,
    HEARTBEAT_EVENT,
    SSE_EXTENSION,
    SseEvent,
    SseStream,
    StreamState,
    SymbolUnavailable,
)
from ftdesk.service.push.quote_frames import (
    MAX_STREAM_SYMBOLS,
    SYMBOL_UNAVAILABLE,
    QuoteJson,
    stream_state,
    with_books,
)
from ftdesk.service.push.state import DEFAULT_HEARTBEAT_SECONDS, STREAMING, SharedQuotes
from ftdesk.service.routes.common import Symbol, context
from ftdesk.service.web.front_door import stamp_common_headers
from ftdesk.service.web.routing import Call, QueryBool, QueryModel, RouteTable
from ftdesk.streaming.consumer import QuoteConsumer, normalize_symbols
from ftdesk.streaming.event_consumer import EventConsumer, Replay
from ftdesk.streaming.event_hub import AccountEventHub
from ftdesk.streaming.event_models import EVENT_STATE_DESCRIPTIONS
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import ConsumerClosed, HubState, QuoteItem

routes = RouteTable(tag="streaming")
log = logging.getLogger(__name__)

SSE_RETRY_MS = 3000
"""The reconnect delay an SSE stream asks EventSource clients to use, milliseconds."""


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


# --- SSE -------------------------------------------------------------------------------------------


def _event_stream_response(request: web.Request) -> web.StreamResponse:
    """Return an unstarted Server-Sent Events response with the service's common headers."""
    response = web.StreamResponse(headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.content_type = "text/event-stream"
    response.charset = "utf-8"
    stamp_common_headers(request, response)  # before it starts: the front door stamps only what is unstarted
    return response


@contextlib.contextmanager
def _ended_on_unexpected_error(call: Call[Any, Any], response: web.StreamResponse, what: str) -> Iterator[None]:
    """End a started stream on an unexpected error: logged once, the connection closed, never half-alive.

    Once the response has started, the front door can no longer answer with an error; the stream
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
    writer for direct writes (``QuoteConsumer.deliver_to``); the consumer never runs the two at once.
    """

    def __init__(
        self, response: web.StreamResponse, hub: QuoteHub, encoded: QuoteJson, halted: Callable[[], bool]
    ) -> None:
        self._response = response
        self._hub = hub
        self._encoded = encoded
        self._halted = halted
        self._state = stream_state(hub, halted())
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
        if self._hub.state is not self._state.state or self._halted() != self._state.halted:
            self._state = stream_state(self._hub, self._halted())
            frames += self._frame("status", self._state.model_dump_json())
        if batch:
            frames += "".join([self._frame(*self._encoded.sse_frame(item)) for item in batch])
        else:
            frames += HEARTBEAT
        await self._response.write(frames.encode("utf-8"))


async def _pump_sse(
    response: web.StreamResponse,
    consumer: QuoteConsumer,
    hub: QuoteHub,
    encoded: QuoteJson,
    heartbeat: float,
    halted: Callable[[], bool],
) -> None:
    stream = _SseQuotes(response, hub, encoded, halted)
    await stream.open()
    consumer.deliver_to(stream)  # a failed direct write is raised by get(), as a failed send would be
    while True:
        try:
            batch = await consumer.get(timeout=heartbeat)
        except ConsumerClosed:
            return
        await stream.send(batch)


SSE_DESCRIPTION = f"""\
A `text/event-stream` of frames separated by a blank line. The first line of the stream is
`retry: {SSE_RETRY_MS}` (EventSource clients reconnect after {SSE_RETRY_MS // 1000} s). Event frames:

- `event: status`: `data` is `{{"state", "description", "since", "last_error"}}` for the upstream quote
  connection (states as in GET /streaming/status). Sent first, then whenever the state changed, with the next
  update or heartbeat (so within {DEFAULT_HEARTBEAT_SECONDS:g} s).
- `event: quote`: `data` is one quote object (`symbol`, `last`, `bid`, `ask` and the other quote fields).
  Quotes are conflated: a client that reads slowly gets the latest quote of each symbol, never a backlog.
- `event: book` (with `depth=true`): `data` is the symbol's order book, `{{"symbol", "bids": [{{"price", "size",
  "venue", "time"}}, ...], "asks": [...], "time"}}`, best level first (bids highest, asks lowest), up to 25 a
  side. Books are conflated like quotes: each `book` event is the whole current book, never a delta.
- `event: error`: `data` is `{{"code": "{SYMBOL_UNAVAILABLE}", "symbol", "message"}}`: the upstream refused a
  symbol (unknown, delisted); the other symbols keep streaming. For a refused book, `data` also has
  `"book": true` (the quote may still stream).
- `: heartbeat` (a comment line) after {DEFAULT_HEARTBEAT_SECONDS:g} s without an event, so proxies and clients see
  the connection alive.

Every event frame has an `id:` line: a counter per connection starting at 1. Ids are not resumable: a
reconnecting client gets the current quote of each symbol again instead of a replay. The same events are
described, with their payload schemas, in the AsyncAPI document at `/docs/asyncapi.json`.
"""

QUOTE_STREAM = SseStream(
    description=SSE_DESCRIPTION,
    events=(
        SseEvent(
            "status", "QuoteStatusEvent", "The upstream quote connection's state: first, then on change.", StreamState
        ),
        SseEvent("quote", "QuoteEvent", "The latest quote of a symbol (conflated).", Quote),
        SseEvent("book", "BookEvent", "The whole current order book of a symbol, with `depth=true`.", OrderBook),
        SseEvent("error", "SymbolErrorEvent", "The upstream refused a symbol or its book.", SymbolUnavailable),
        HEARTBEAT_EVENT,
    ),
    id_meaning="a counter per connection starting at 1 (not resumable: a reconnect starts from the current quotes).",
)


@routes.get(
    "/streaming/quotes",
    summary="Stream quotes (SSE)",
    query=QuoteStreamQuery,
    kind="sse",
    query_api_key=True,
    errors=(e.StreamingUnavailable,),
    extra_openapi={SSE_EXTENSION: QUOTE_STREAM},
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
    streaming = call.app[STREAMING]
    consumer = hub.open_consumer("sse")  # refused (503) before the response starts when the hub is shut down
    shared: SharedQuotes | None = None
    try:
        if call.query.symbols is None:
            shared = streaming.shared()
            shared.follow(consumer, depth=call.query.depth)
        else:
            consumer.acquire(with_books(normalize_symbols(call.query.symbols), call.query.depth))
        response = _event_stream_response(call.request)
        with ctx.streams.track(response):
            await response.prepare(call.request)
            # A client that went away shows up as a failed write (a quote or the next heartbeat): a reset,
            # or aiohttp's plain ConnectionError when it goes while a write waits for the socket to drain.
            with contextlib.suppress(ConnectionError), _ended_on_unexpected_error(call, response, "SSE quote stream"):
                await _pump_sse(
                    response, consumer, hub, streaming.frames, streaming.heartbeat_seconds, lambda: ctx.safety.halted
                )
        return response
    finally:
        if shared is not None:
            shared.unfollow(consumer)
        consumer.close()


# --- account events (SSE) ----------------------------------------------------------------------------

LAST_EVENT_ID_HEADER = "Last-Event-ID"
MAX_EVENT_ID_DIGITS = 30


class EventStreamQuery(QueryModel):
    """Where an account-event stream resumes."""

    last_event_id: int | None = Field(
        default=None,
        ge=0,
        description=(
            "Resume after this event id: the buffered events after it come first. The `Last-Event-ID` header "
            "(which EventSource sends by itself when it reconnects) takes precedence over this parameter. 0 asks "
            "for every event since the service started. An id from before the service last started replays "
            "every buffered event, after a `status` frame with `events_missed: true`."
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
        description="True when events after the client's Last-Event-ID may be lost: they are no longer buffered, "
        "or the id is from before the service last started. Every buffered event follows.",
    )
    message: str | None = Field(default=None, description="What happened, for missed events or a closed stream.")
    halted: bool = Field(
        default=False,
        description="True while trading is halted (the kill switch): previews and places are refused. A new status "
        "event follows when it changes.",
    )


def event_stream_state(
    hub: AccountEventHub, halted: bool, *, missed: bool = False, message: str | None = None
) -> EventStreamState:
    """Return the event hub's connection state, and whether trading is halted, as status frames carry them."""
    return EventStreamState(
        state=hub.state,
        description=EVENT_STATE_DESCRIPTIONS[hub.state],
        since=hub.since.isoformat(),
        last_error=hub.last_error,
        events_missed=missed,
        message=message,
        halted=halted,
    )


def _resume_id(call: Call[None, EventStreamQuery]) -> int | None:
    """Return the id to resume after: the Last-Event-ID header, else the last_event_id query parameter."""
    header = call.request.headers.get(LAST_EVENT_ID_HEADER)
    if header is None or not header.strip():
        return call.query.last_event_id
    text = header.strip()
    # Real ids have 16 digits; the cap keeps a hostile header from int()'s 4,300-digit limit (its ValueError was
    # a 500). ASCII only: str.isdigit() also accepts digits int() refuses, such as "²".
    if not (text.isascii() and text.isdigit() and len(text) <= MAX_EVENT_ID_DIGITS):
        raise e.ValidationFailed.for_fields(
            f"Invalid header: {LAST_EVENT_ID_HEADER} must be an event id (a non-negative integer of at most "
            f"{MAX_EVENT_ID_DIGITS} digits), got {text[:40]!r}",
            [(LAST_EVENT_ID_HEADER, f"must be a non-negative integer of at most {MAX_EVENT_ID_DIGITS} digits")],
            location="header",
        )
    return int(text)


EVENT_FIELDS = frozenset({"event_type", "category", "desc", "time", "source"})
"""The fields of an account event a ``beps`` frame carries."""


def _beps_frame(event_id: int, data: str) -> str:
    return f"event: beps\ndata: {data}\nid: {event_id}\n\n"


def _status_frame(state: EventStreamState) -> str:
    # No id line: a status frame must not move the client's Last-Event-ID.
    return f"event: status\ndata: {state.model_dump_json()}\n\n"


async def _pump_events(
    response: web.StreamResponse,
    consumer: EventConsumer,
    hub: AccountEventHub,
    *,
    replay: Replay,
    heartbeat: float,
    halted: Callable[[], bool],
) -> None:
    head = f"retry: {SSE_RETRY_MS}\n\n"
    state = event_stream_state(hub, halted())
    head += _status_frame(state)
    if replay.missed:
        head += _status_frame(event_stream_state(hub, halted(), missed=True, message=replay.why_missed))
    await response.write(head.encode("utf-8"))
    while True:
        try:
            batch = await consumer.get(timeout=heartbeat)
        except ConsumerClosed as closed:
            # Overflow or shutdown: say why before the stream ends (the client may already be gone).
            with contextlib.suppress(ConnectionError, RuntimeError):
                closing = event_stream_state(hub, halted(), message=closed.reason)
                await response.write(_status_frame(closing).encode("utf-8"))
            return
        frames = ""
        if hub.state is not state.state or halted() != state.halted:
            state = event_stream_state(hub, halted())
            frames += _status_frame(state)
        if batch:
            fields = set(EVENT_FIELDS)  # pydantic takes a set, not a frozenset
            frames += "".join(_beps_frame(item.id, item.event.model_dump_json(include=fields)) for item in batch)
        else:
            frames += HEARTBEAT
        await response.write(frames.encode("utf-8"))


EVENT_NAME_LINES = "\n".join(
    f"  - `{name}` ({category}): `{code}`" for code, (name, category) in UPSTREAM_EVENTS.items()
)
"""One line per upstream code of the account-event table, for the operation's description."""

EVENTS_SSE_DESCRIPTION = f"""\
A `text/event-stream`. The first line is `retry: {SSE_RETRY_MS}`. Frames:

- `event: beps`: `data` is `{{"event_type", "category", "desc", "time", "source"}}` (for example `ORDER_FILL`,
  `order`, `{{"upstream_code": "MFCEX", "acct_num", "conf_num", "symbol", "qty", "price", ...}}`, ..., `beps`);
  `id:` is the event id, an opaque resume token: an integer that increases by one per event and across
  restarts (a run's first id is the microseconds since the Unix epoch when it started, below 2**53), so an id
  from an earlier run is never mistaken for one of this run.
  `source` says where the event came from: `beps` (Fidelity's event stream, live), `alerts` (Fidelity's alert
  history, polled while BEPS is down: fills and cancels only) or `paper`. An event delivered from one source is
  not delivered again from the other.

  `event_type` is the same name on paper and on Fidelity for the same thing; the upstream's own code is kept in
  `desc.upstream_code` (on paper, the code of the Fidelity event the simulated one stands for). The names, with
  the upstream codes they come from:

{EVENT_NAME_LINES}

  A fill is `ORDER_PARTIAL_FILL` when the event shows part of the order still open (`desc.partial`, or an
  executed quantity below `qty`: paper and the alert history; a BEPS fill does not state it, so it is
  `ORDER_FILL`). An `ORDUP` whose `desc.status` is `CANCELED`, `REJECTED`, `EXPIRED` or `REPLACED` takes that
  outcome's name (`ORDER_CANCELED`, ...). Any other code is `OTHER`, category `other`, its code kept: never
  dropped.
- `event: status` (no `id:` line, so it never moves Last-Event-ID): `data` is `{{"state", "description", "since",
  "last_error", "events_missed", "message"}}`. Sent first, whenever the upstream state changed (within
  {DEFAULT_HEARTBEAT_SECONDS:g} s), with `events_missed: true` when a resume could not be complete, and with a
  `message` just before the server ends the stream (client too slow, or the service stopping).
- `: heartbeat` (a comment) after {DEFAULT_HEARTBEAT_SECONDS:g} s without an event.

Resume: after a drop, reconnect with the `Last-Event-ID` header (EventSource sends it by itself) or
`last_event_id`. An id from before the service last started (it quit, crashed or was restarted) replays
every buffered event of this run after a `status` frame with `events_missed: true`. The same events are
described, with their payload schemas, in `/docs/asyncapi.json`.
"""

EVENT_STREAM = SseStream(
    description=EVENTS_SSE_DESCRIPTION,
    events=(
        SseEvent("beps", "BepsEvent", "One account event.", AccountEvent, fields=EVENT_FIELDS),
        SseEvent(
            "status",
            "EventStatusEvent",
            "The account-event feed's state, a resume gap, or why the stream ends.",
            EventStreamState,
            numbered=False,
        ),
        HEARTBEAT_EVENT,
    ),
    id_meaning=(
        "the event id, an opaque resume token: one more per event, increasing across service restarts (a run "
        "starts at the microseconds since the Unix epoch); send it back as `Last-Event-ID`."
    ),
)


@routes.get(
    "/streaming/events",
    summary="Stream account events (SSE)",
    query=EventStreamQuery,
    kind="sse",
    query_api_key=True,
    errors=(e.StreamingUnavailable,),
    extra_openapi={SSE_EXTENSION: EVENT_STREAM},
)
async def stream_events(call: Call[None, EventStreamQuery]) -> web.StreamResponse:
    """Stream account events (fills, cancels, position and balance changes, price alerts) as Server-Sent Events.

    Events flow while a brokerage session exists; no session is needed to connect (the stream then sends its
    status and heartbeats until login). The service keeps the last 1000 events: reconnect with the
    `Last-Event-ID` header (EventSource does this by itself) or `last_event_id` to get the events after that id
    first. Ids increase across service restarts. When some of them are no longer kept (or the id is from
    before the service last started) a `status` frame with `events_missed: true` comes first, then every kept
    event. A client that lets 1000 events pile up unread is sent a `status` frame saying so and disconnected;
    it resumes with its last id.

    Fails with STREAMING_UNAVAILABLE (503) when the account-event feed is not configured (Fidelity without the
    FTSERVICE_BEPS_* settings); the paper broker always has it.
    """
    ctx = context(call)
    hub = ctx.events
    resume_after = _resume_id(call)
    # Refused (503, as a JSON envelope) before the response starts when the feed cannot run or is shut down.
    consumer, replay = hub.open_consumer(resume_after)
    try:
        response = _event_stream_response(call.request)
        with ctx.streams.track(response):
            await response.prepare(call.request)
            # A client that went away shows up as a failed write (an event or the next heartbeat), as in
            # stream_quotes.
            with contextlib.suppress(ConnectionError), _ended_on_unexpected_error(call, response, "SSE event stream"):
                await _pump_events(
                    response,
                    consumer,
                    hub,
                    replay=replay,
                    heartbeat=call.app[STREAMING].heartbeat_seconds,
                    halted=lambda: ctx.safety.halted,
                )
        return response
    finally:
        consumer.close()
