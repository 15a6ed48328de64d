"""What the streaming endpoints keep per application: their options, the shared REST set, the frame cache.

One ``StreamingState`` is made when the app is built and stored under ``STREAMING``; the handlers of both
transports and of the REST control endpoints reach it through the request's app, so nothing lives in a
module and two apps in one process (tests start many) never share a set or a cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from pydantic import BaseModel, Field

from ftdesk.domain import errors as e
from ftdesk.service.push.quote_frames import MAX_STREAM_SYMBOLS, QuoteJson, with_books
from ftdesk.streaming.consumer import QuoteConsumer, normalize_symbols
from ftdesk.streaming.hub import QuoteHub

DEFAULT_HEARTBEAT_SECONDS = 15.0
"""Quiet time after which an SSE stream sends a ``: heartbeat`` comment (and a WebSocket a ping)."""


@dataclass(frozen=True)
class StreamingOptions:
    """How the streaming endpoints run; the composition root passes them when it builds the app."""

    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    """Quiet seconds before an SSE heartbeat or a WebSocket ping (tests use a short one)."""
    frames: Callable[[], QuoteJson] = QuoteJson
    """Makes the app's frame encoder, shared by every stream."""

    def __post_init__(self) -> None:
        if not self.heartbeat_seconds > 0:
            raise ValueError(f"heartbeat_seconds must be positive, got {self.heartbeat_seconds}")


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


class StreamingState:
    """The app's streaming options, its frame encoder and its shared subscription set."""

    def __init__(self, hub: QuoteHub, options: StreamingOptions) -> None:
        self.hub = hub
        self.heartbeat_seconds = options.heartbeat_seconds
        self.frames = options.frames()
        self._shared: SharedQuotes | None = None

    def shared(self) -> SharedQuotes:
        """Return the shared subscription set, opening it on first use (503 once the hub is shut down)."""
        # Opened lazily: most runs never use it, and an open consumer shows in GET /streaming/status.
        if self._shared is None or self._shared.consumer.closed:
            self._shared = SharedQuotes(self.hub)
        return self._shared


STREAMING = web.AppKey("ftdesk_streaming", StreamingState)
