"""Watchlists, preferences, alerts and reference data (the ten further endpoints)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from ftdesk.domain.base import IsoDate, IsoDateTime, IsoDateTimeOrEmpty, Record, UpstreamRecord


class Watchlist(UpstreamRecord):
    """A named list of symbols."""

    watchlist_id: str
    name: str
    symbols: list[str]
    update_date: IsoDateTimeOrEmpty


class WatchlistDraft(Record):
    """A watchlist to create (no id) or replace (with id)."""

    watchlist_id: str | None = None
    name: str = Field(min_length=1, max_length=100)
    symbols: list[str] = Field(default_factory=list, max_length=500)


class TriggerDirection(StrEnum):
    """Whether a price trigger fires when the price rises to or falls to its level."""

    ABOVE = "ABOVE"
    BELOW = "BELOW"


class TriggerBasis(StrEnum):
    """What a price trigger's ``price`` is: a price level, or a percent move from the previous close."""

    PRICE = "PRICE"
    PERCENT = "PERCENT"


class TriggerStatus(StrEnum):
    """State of a price trigger."""

    ACTIVE = "ACTIVE"
    TRIGGERED = "TRIGGERED"


class PriceTrigger(UpstreamRecord):
    """A price alert."""

    trigger_id: str
    symbol: str
    direction: TriggerDirection
    price: float = Field(description="The level in dollars, or with basis PERCENT the percent move.")
    basis: TriggerBasis = TriggerBasis.PRICE
    status: TriggerStatus
    note: str = ""
    create_time: IsoDateTimeOrEmpty
    triggered_time: IsoDateTime | None = None
    triggered_price: float | None = None


class PriceTriggerDraft(Record):
    """A price alert to create."""

    symbol: str = Field(min_length=1)
    direction: TriggerDirection
    price: float = Field(gt=0)
    basis: TriggerBasis = TriggerBasis.PRICE
    note: str = Field(default="", max_length=500)


class AlertSubscription(Record):
    """The result of activating alert delivery (never carries upstream credentials)."""

    active: bool
    delivery: str = Field(description="Where alerts arrive, e.g. '/api/v1/streaming/events'.")
    active_triggers: int = Field(description="Price and percent alerts waiting to fire, at the time of the answer.")


class Holiday(UpstreamRecord):
    """A market holiday or early close."""

    date: IsoDate
    name: str
    status: str = Field(description="CLOSED or EARLY_CLOSE.")
    close_time: str | None = Field(default=None, description="Local close time on an early-close day, e.g. '13:00'.")
