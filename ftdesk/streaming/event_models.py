"""What the account-event hub reports about itself: its state's meanings and its status records."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType

from pydantic import BaseModel, Field

from ftdesk.streaming.event_consumer import EventConsumerStatus
from ftdesk.streaming.models import HubState

EVENT_STATE_DESCRIPTIONS: Mapping[HubState, str] = MappingProxyType(
    {
        HubState.DISABLED: "The account-event stream is not running (not configured, not started yet, or shut down).",
        HubState.WAITING_FOR_SESSION: "No brokerage session: events flow after login.",
        HubState.IDLE: "Logged in, but no upstream connection is wanted.",
        HubState.CONNECTING: "Opening the upstream account-event connection.",
        HubState.CONNECTED: "The upstream account-event connection is open.",
        HubState.RECONNECTING: "The connection failed or dropped: waiting out the backoff or trying again.",
    }
)


class FallbackStatus(BaseModel):
    """The stand-in poller of the account-event stream."""

    source: str = Field(description="What its events are marked with, e.g. alerts.")
    active: bool = Field(description="True while it polls (the upstream connection is down and a session exists).")
    interval_seconds: float = Field(description="Seconds between polls.")
    polls: int = Field(description="Polls made since the service started.")
    events: int = Field(description="Events it delivered.")
    last_poll_at: datetime | None = Field(description="When it last polled successfully.")
    last_error: str | None = Field(description="Why its last poll failed, if it did.")


class EventHubStatus(BaseModel):
    """The account-event stream as GET /streaming/status reports it."""

    state: HubState = Field(
        description="; ".join(f"{state.value}: {text}" for state, text in EVENT_STATE_DESCRIPTIONS.items())
    )
    since: datetime = Field(description="When the stream entered this state (UTC).")
    reconnect_count: int = Field(description="Connection attempts made after a failure or drop since start.")
    last_event_at: datetime | None = Field(description="When the upstream last delivered an event.")
    last_event_id: int = Field(
        description="Id of the newest event (0: none yet since the service started). Ids increase across restarts: "
        "the first of a run is the microseconds since the Unix epoch when it started."
    )
    last_error: str | None = Field(description="Why the last connection ended or could not be opened, if one did.")
    buffered: int = Field(description="Events kept for replay to clients that reconnect with Last-Event-ID.")
    consumers: list[EventConsumerStatus] = Field(description="Open account-event streams.")
    unavailable_reason: str | None = Field(
        description="Why the stream cannot run (e.g. missing FTSERVICE_BEPS_* settings); null when it can."
    )
    live: bool = Field(description="True when account events arrive as they happen: the upstream connection is open.")
    why_not: str | None = Field(description="When not live: why, in a sentence (and what stands in meanwhile).")
    detail: str | None = Field(
        default=None,
        description="Where the upstream connection's configuration comes from (BEPS: token, member id, host), "
        "without any secret.",
    )
    fallback: FallbackStatus | None = Field(
        default=None, description="The poller that stands in while the connection is down; null when there is none."
    )
    duplicates_dropped: int = Field(
        default=0, description="Events dropped because the same event had already been delivered from another source."
    )
