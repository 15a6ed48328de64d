"""Quote frames as both transports send them: the shared JSON of each symbol's latest item, status and errors.

SSE streams and WebSockets carry the same items; this module turns them into text once and says how a
symbol list with order books is written, so the two route modules differ only in their framing.
"""

from __future__ import annotations

from pydantic import BaseModel

from ftdesk.brokers.base import book_key, book_symbol
from ftdesk.domain.market import OrderBook
from ftdesk.service.push.frames import (
    SYMBOL_UNAVAILABLE,
    StreamState,
    SymbolUnavailable,
    WsBookFrame,
    WsQuoteFrame,
    WsStatusFrame,
    WsSymbolErrorFrame,
)
from ftdesk.service.web.websocket import text_frame
from ftdesk.streaming.hub import QuoteHub
from ftdesk.streaming.models import STATE_DESCRIPTIONS, QuoteError, QuoteItem

__all__ = (
    "MAX_STREAM_SYMBOLS",
    "QUOTE_JSON_CAPACITY",
    "SYMBOL_UNAVAILABLE",
    "QuoteJson",
    "StreamState",
    "book_symbols",
    "plain_symbols",
    "stream_state",
    "symbol_error",
    "with_books",
)

MAX_STREAM_SYMBOLS = 200
"""Most symbols one SSE stream, one WebSocket or the shared set may hold."""
QUOTE_JSON_CAPACITY = 4096
"""Most symbols whose latest quote JSON is kept for sharing between streams."""


def stream_state(hub: QuoteHub, halted: bool) -> StreamState:
    """Return the hub's connection state, and whether trading is halted, as status frames carry them."""
    # Not hub.status(): that builds every consumer's counters, and each new stream calls this.
    return StreamState(
        state=hub.state,
        description=STATE_DESCRIPTIONS[hub.state],
        since=hub.since.isoformat(),
        last_error=hub.last_error,
        halted=halted,
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


def symbol_error(item: QuoteError) -> SymbolUnavailable:
    """Return the error of a refused symbol (or of its book: then ``book`` is true)."""
    book = book_symbol(item.symbol)
    if book is not None:
        return SymbolUnavailable(code=SYMBOL_UNAVAILABLE, symbol=book, book=True, message=item.message)
    return SymbolUnavailable(code=SYMBOL_UNAVAILABLE, symbol=item.symbol, message=item.message)


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
        self._ws_bytes: dict[str, tuple[QuoteItem, bytes]] = {}  # the whole WebSocket frame, header and all
        self._books: dict[str, tuple[OrderBook, str, str]] = {}  # symbol -> (book, SSE data, WS frame)

    def _book(self, item: OrderBook) -> tuple[OrderBook, str, str]:
        cached = self._books.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._books) >= QUOTE_JSON_CAPACITY:
                self._books.clear()
            frame = WsBookFrame.model_validate({"type": "book", **item.__dict__})
            cached = self._books[item.symbol] = (item, item.model_dump_json(), frame.model_dump_json())
        return cached

    def sse_frame(self, item: QuoteItem) -> tuple[str, str]:
        """Return the SSE event name and data of an item."""
        if isinstance(item, QuoteError):
            return "error", symbol_error(item).model_dump_json()
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
            error = symbol_error(item)
            return WsSymbolErrorFrame.model_validate({"type": "error", **error.__dict__}).model_dump_json()
        if isinstance(item, OrderBook):
            return self._book(item)[2]
        cached = self._ws.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._ws) >= QUOTE_JSON_CAPACITY:
                self._ws.clear()
            frame = WsQuoteFrame.model_validate({"type": "quote", **item.__dict__})
            cached = self._ws[item.symbol] = (item, frame.model_dump_json())
        return cached[1]

    def ws_frame_bytes(self, item: QuoteItem) -> bytes:
        """Return the whole WebSocket text frame of an item, as ``ClientWebSocket.write_frames`` writes it."""
        if isinstance(item, OrderBook | QuoteError):  # books are cached as text; errors are rare
            return text_frame(self.ws_frame(item))
        cached = self._ws_bytes.get(item.symbol)
        if cached is None or cached[0] is not item:
            if len(self._ws_bytes) >= QUOTE_JSON_CAPACITY:
                self._ws_bytes.clear()
            cached = self._ws_bytes[item.symbol] = (item, text_frame(self.ws_frame(item)))
        return cached[1]

    def ws_reply(self, reply: BaseModel) -> str:
        """Return the WebSocket text frame of a reply to a client frame (an ack, a pong or an error)."""
        return reply.model_dump_json()

    def ws_status(self, state: StreamState) -> str:
        """Return the WebSocket text frame of a status."""
        return WsStatusFrame.model_validate({"type": "status", **state.__dict__}).model_dump_json()
