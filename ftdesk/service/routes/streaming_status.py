"""Streaming control and observation over REST: the shared subscription set, the subscriptions, the stream status."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from ftdesk.domain import errors as e
from ftdesk.service.push.quote_frames import MAX_STREAM_SYMBOLS
from ftdesk.service.push.state import STREAMING, SubscribeResult, UnsubscribeResult
from ftdesk.service.routes.common import Symbol, context
from ftdesk.service.web.routing import BodyModel, Call, RouteTable
from ftdesk.streaming.event_models import EventHubStatus
from ftdesk.streaming.models import QuoteHubStatus, SymbolSubscription

routes = RouteTable(tag="streaming")

StreamSymbols = Annotated[
    list[Symbol],
    Field(
        min_length=1,
        max_length=MAX_STREAM_SYMBOLS,
        description=f"Tickers (case-insensitive, upper-cased), 1 to {MAX_STREAM_SYMBOLS}.",
    ),
]


class SymbolsBody(BodyModel):
    """Symbols to add to or remove from the shared subscription set."""

    symbols: StreamSymbols


class StreamingStatus(BaseModel):
    """Both upstream streams and the open consumers."""

    mdds: QuoteHubStatus = Field(description="The shared upstream market-data (quote) connection.")
    beps: EventHubStatus = Field(description="The upstream account-event (BEPS) connection and its SSE streams.")
    halted: bool = Field(
        description="True while trading is halted (the kill switch): previews and places are refused. The streams' "
        "status frames carry the same field."
    )
    consumers_by_kind: dict[str, int] = Field(
        description="Open quote consumers by kind: sse (SSE streams), ws (WebSockets), shared (the REST set); the "
        "same as mdds.consumers_by_kind."
    )


@routes.post(
    "/streaming/subscribe",
    summary="Add symbols to the shared set",
    body=SymbolsBody,
    response=SubscribeResult,
    errors=(e.StreamingUnavailable,),
    operation_id="subscribe_quotes",
)
async def subscribe(call: Call[SymbolsBody, None]) -> SubscribeResult:
    """Add symbols to the shared subscription set (at most 200 in all).

    The shared set is what GET /streaming/quotes streams when called without `symbols`; the symbols stay
    subscribed upstream until unsubscribed here, whether or not a stream is open. No brokerage session is
    needed: before login the symbols are queued and subscribed after login. Subscribing a held symbol again
    changes nothing and is listed in `already_held`.
    """
    return call.app[STREAMING].shared().add(call.body.symbols)


@routes.post(
    "/streaming/unsubscribe",
    summary="Remove symbols from the shared set",
    body=SymbolsBody,
    response=UnsubscribeResult,
    errors=(e.StreamingUnavailable,),
    operation_id="unsubscribe_quotes",
)
async def unsubscribe(call: Call[SymbolsBody, None]) -> UnsubscribeResult:
    """Remove symbols from the shared subscription set; symbols it does not hold are listed in `not_held`.

    A symbol no other stream holds leaves the upstream after the unsubscribe delay (FTSERVICE_UNSUBSCRIBE_DELAY,
    10 s by default), so subscribing it again meanwhile causes no upstream churn.
    """
    return call.app[STREAMING].shared().remove(call.body.symbols)


@routes.get(
    "/streaming/subscriptions",
    summary="Active subscriptions",
    response=list[SymbolSubscription],
    operation_id="list_subscriptions",
)
async def subscriptions(call: Call[None, None]) -> list[SymbolSubscription]:
    """List every symbol held by a stream, a WebSocket or the shared set, by symbol.

    `refcount` counts the consumers holding the symbol (each SSE stream, WebSocket and the shared set count
    once; an SSE stream without `symbols` holds the shared symbols itself too), `kinds` names their kinds.
    A symbol nobody holds any more stays listed with `refcount` 0 until its delayed upstream unsubscribe.
    An order book held with depth is listed as `SYMBOL#BOOK`, with its own refcount (books are shared like quotes).
    """
    return context(call).quotes.subscriptions()


@routes.get(
    "/streaming/status",
    summary="Stream connection state",
    response=StreamingStatus,
    operation_id="get_streaming_status",
)
async def streaming_status(call: Call[None, None]) -> StreamingStatus:
    """Report the upstream quote connection (MDDS), the account-event stream (BEPS) and the open consumers.

    `beps.state` is `disabled` with `beps.unavailable_reason` set when the account-event feed is not
    configured (Fidelity without the FTSERVICE_BEPS_* settings).
    """
    ctx = context(call)
    status = ctx.quotes.status()
    return StreamingStatus(
        mdds=status, beps=ctx.events.status(), halted=ctx.safety.halted, consumers_by_kind=status.consumers_by_kind
    )
