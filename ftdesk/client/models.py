"""Answers of the service whose models live above the domain floor, mirrored for the client.

Most answers are validated with the service's own domain models (``ftdesk.domain``). These few are defined
by the service's HTTP layer, which the client does not import (it must not pull in the server); a test
checks that each mirror has exactly the fields of the service's model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ftdesk.domain.market import Quote
from ftdesk.domain.session import SessionState

if TYPE_CHECKING:  # EventFrame is a dataclass: its field types are not evaluated, so a quote read skips events
    from ftdesk.domain.events import AccountEvent


class Health(BaseModel):
    """Liveness and identity of the service (``GET /health``)."""

    status: str
    service: str
    version: str
    broker: str
    # Defaults for a service from before each field: it says nothing, so nothing is assumed.
    paper_market: str | None = None
    mode: str = ""
    live_trading: bool
    halted: bool = False
    api_key_required: bool
    uptime_seconds: float
    problems: list[str] = []


class SessionStatus(BaseModel):
    """The brokerage session (``GET /auth/status``, and the answer of login and logout)."""

    state: SessionState
    broker: str
    username: str | None = Field(description="Masked: 'tr***er'.")
    logged_in_since: datetime | None
    last_keep_alive: datetime | None
    keepalive_interval_seconds: float
    auto_reauth: bool
    reauth_count: int
    live_trading: bool
    credentials_stored: bool
    last_error: str | None


class QuotesAnswer(BaseModel):
    """The latest quote of each known symbol asked for (``GET /market-data/quotes``)."""

    quotes: list[Quote]
    unknown: list[str] = Field(description="Symbols the brokerage does not quote.")
    streamed: list[str] = Field(description="Symbols answered from the live quote stream.")


@dataclass(frozen=True)
class EventFrame:
    """One account event from ``/streaming/events`` with its id (resume after it with ``last_event_id``).

    The id is an opaque resume token: it increases by one per event and across service restarts (a run's first
    id is the microseconds since the Unix epoch when the service started), so compare ids, never count them.
    """

    id: int
    event: AccountEvent
