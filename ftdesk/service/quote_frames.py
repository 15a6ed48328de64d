"""Quote frames as both transports send them: the shared JSON of each symbol's latest item, status and errors.

SSE streams and WebSockets carry the same items; this module turns them into text once and says how a
symbol list with order books is written, so the two route modules differ only in their framing.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ftdesk.brokers.base import book_key, book_symbol
from ftdesk.domain.market import OrderBook
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import STATE_DESCRIPTIONS, HubState, QuoteError, QuoteItem

MAX_STREAM_SYMBOLS = 200
"""Most symbols one SSE stream, one WebSocket or the shared set may hold."""
SYMBOL_UNAVAILABLE = "SYMBOL_UNAVAILABLE"
QUOTE_JSON_CAPACITY = 4096
"""Most symbols whose latest quote JSON is kept for sharing between streams."""


class StreamState(BaseModel):
    """The data of an SSE ``status`` event or a WebSocket ``status`` frame."""

    state: HubState
    description: str
    since: str
    last_error: str | None


def stream_state(hub: QuoteHub) -> StreamState:
    """Return the hub's connection state as status frames carry it."""
    # Not hub.status(): that builds every consumer's counters, and each new stream calls this.
    return StreamState(
        state=hub.state,
        description=STATE_DESCRIPTIONS[hub.state],
        since=hub.since.isoformat(),
        last_error=hub.last_error,
    )


def with_books(symbols: list[str], depth: bool) -> list[str]:
    """Return the symbols followed, with ``depth``, by the book key of each."""
    return symbols + [book_key(symbol) for symbol in symbols] if depth else list(symbols)


def plain_symbols(keys: list[str]) -> list[str]:
    """Return the symbols among held keys (book keys left out)."""
    return [key for key in keys if book_symbol(key) is None]


def book_symbols(keys: list[str]) -> list[str]:
    """Return the symbols whose book is among held keys."""
    return [symbol for key in keys if (symbol := book_symbol(key)) is not None]


def symbol_error(item: QuoteError) -> dict[str, Any]:
    """Return the error object of a refused symbol (or of its book: then ``book`` is true)."""
    book = book_symbol(item.symbol)
    if book is not None:
        return {"code": SYMBOL_UNAVAILABLE, "symbol": book, "book": True, "message": item.message}
    return {"code": SYMBOL_UNAVAILABLE, "symbol": item.symbol, "message": item.message}


def compact_json(data: dict[str, Any]) -> str:
    """Return data as JSON text without spaces, non-ASCII kept as it is."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class QuoteJson:
    """The JSON of each symbol's latest item, made once and shared by every stream that sends that item.

    The hub hands the same item object to every consumer holding the symbol, so serialising it per stream
    was the larger part of a delivery's cost with many streams. One slot per symbol, checked by identity;
    emptied when it holds ``QUOTE_JSON_CAPACITY`` symbols, so symbols nobody streams any more do not pile up.
    Every WebSocket text frame, replies to client frames included, is made here.
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
            cached = self._books[item.symbol] = (item, compact_json(data), compact_json({"type": "book", **data}))
        return cached

    def sse_frame(self, item: QuoteItem) -> tuple[str, str]:
        """Return the SSE event name and data of an item."""
        if isinstance(item, QuoteError):
            return "error", compact_json(symbol_error(item))
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
            return compact_json({"type": "error", **symbol_error(item)})
        if isinstance(item, OrderBook):
            return self._book(item)[2]
        cached = self._ws.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._ws) >= QUOTE_JSON_CAPACITY:
                self._ws.clear()
            cached = self._ws[item.symbol] = (item, compact_json({"type": "quote", **item.model_dump(mode="json")}))
        return cached[1]

    def ws_reply(self, reply: dict[str, Any]) -> str:
        """Return the WebSocket text frame of a reply to a client frame (an ack, a pong or an error)."""
        return compact_json(reply)

    def ws_status(self, state: StreamState) -> str:
        """Return the WebSocket text frame of a status."""
        return compact_json({"type": "status", **state.model_dump(mode="json")})
