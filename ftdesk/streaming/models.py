"""What the quote hub hands out: consumer items, its state names and its status records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Literal, get_args

from pydantic import BaseModel, Field

from ftdesk.domain.market import OrderBook, Quote

ConsumerKind = Literal["sse", "ws", "shared", "paper"]
CONSUMER_KINDS: tuple[ConsumerKind, ...] = get_args(ConsumerKind)


class HubState(StrEnum):
    """The upstream quote connection's state, as GET /streaming/status names it (see STATE_DESCRIPTIONS)."""

    DISABLED = "disabled"
    WAITING_FOR_SESSION = "waiting_for_session"
    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"


STATE_DESCRIPTIONS: Mapping[HubState, str] = MappingProxyType(
    {
        HubState.DISABLED: "The hub is not running (not started yet, or shut down).",
        HubState.WAITING_FOR_SESSION: "No brokerage session: subscriptions are queued and applied after login.",
        HubState.IDLE: "Logged in but no symbol is wanted, so no upstream connection is open yet.",
        HubState.CONNECTING: "Opening the upstream connection (first attempt since start, login or idle).",
        HubState.CONNECTED: "The upstream connection is open and carries every wanted symbol.",
        HubState.RECONNECTING: (
            "The connection failed, dropped or went silent: waiting out the backoff or trying again."
        ),
    }
)


@dataclass(frozen=True, slots=True)
class QuoteError:
    """The upstream refused a symbol (unknown, delisted); forward it to the client as an error."""

    symbol: str
    message: str


QuoteItem = Quote | OrderBook | QuoteError
"""One entry of a consumer batch: the latest quote or order book of a symbol, or why it has none (a refused
book's error carries the book key as its symbol)."""


class ConsumerClosed(Exception):
    """Raised by ``QuoteConsumer.get()`` once the consumer was closed (by its owner or by the hub)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConsumerStatus(BaseModel):
    """One consumer's share of the stream."""

    id: str = Field(description="Consumer id, e.g. sse-3.")
    kind: str = Field(description="sse, ws, shared, or paper (the paper engine on Fidelity's market).")
    symbol_count: int = Field(description="How many symbols the consumer holds.")
    pending: int = Field(description="Updates waiting to be read; at most one per held symbol.")
    delivered: int = Field(description="Updates the consumer has read.")
    conflated: int = Field(description="Updates replaced by a newer one of the same symbol before it was read.")
    lag_seconds: float = Field(description="Age of the oldest update the consumer has not read yet; 0 when caught up.")


class QuoteHubStatus(BaseModel):
    """The market-data stream as GET /streaming/status reports it."""

    state: HubState = Field(
        description="; ".join(f"{state.value}: {text}" for state, text in STATE_DESCRIPTIONS.items())
    )
    since: datetime = Field(description="When the hub entered this state (UTC).")
    reconnect_count: int = Field(description="Connection attempts made after a failure, drop or silence since start.")
    last_message_at: datetime | None = Field(description="When the upstream last delivered a quote or symbol error.")
    last_error: str | None = Field(description="Why the last connection ended or could not be opened, if one did.")
    watchdog_probes: int = Field(
        description="Times the connection was silent for the watchdog timeout and got a probe (a re-subscribe of one "
        "symbol); a probe without an answer reopens the connection."
    )
    subscribed_symbols: list[str] = Field(description="The symbols the upstream connection currently carries.")
    consumers_by_kind: dict[str, int] = Field(description="Open consumers per kind (sse, ws, shared, paper).")
    consumers: list[ConsumerStatus]


class SymbolSubscription(BaseModel):
    """One symbol the hub holds, as GET /streaming/subscriptions reports it."""

    symbol: str
    refcount: int = Field(description="How many distinct consumers hold the symbol.")
    kinds: list[str] = Field(description="The kinds of the consumers holding it (sse, ws, shared, paper).")
    upstream: bool = Field(description="Whether the upstream connection carries it right now.")
    unsubscribe_in_seconds: float | None = Field(
        description="Seconds until the delayed upstream unsubscribe, when nobody holds the symbol any more."
    )
    error: str | None = Field(description="Why the upstream refused the symbol, if it did.")
