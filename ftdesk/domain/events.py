"""Account events, as carried by BEPS upstream and by the paper ledger."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from ftdesk.domain.base import Record


class EventCategory(StrEnum):
    """Category of an account event."""

    ORDER = "order"
    POSITION = "position"
    BALANCE = "balance"
    ALERT = "alert"
    OTHER = "other"  # an upstream event type not (yet) known to ftdesk


class EventType(StrEnum):
    """BEPS event types (upstream names)."""

    EXECUTION = "MFCEX"
    ORDER_UPDATE = "ORDUP"
    ORDER_CANCELED = "CXL01"
    POSITION_CHANGE = "SPPOS"
    BALANCE_UPDATE = "SPBSM"
    COST_BASIS_UPDATE = "CBUPD"
    PRICE_ABOVE = "TRPA"
    PRICE_BELOW = "TRPB"


class AccountEvent(Record):
    """One account event; the hub assigns ``event_id`` when it fans the event out."""

    event_type: str = Field(description="Upstream event type, e.g. MFCEX (fill), CXL01 (cancel), TRPA (price above).")
    category: EventCategory
    desc: dict[str, Any] = Field(description="Event details: acct_num, conf_num, symbol, qty, price, status, ...")
    time: str = Field(description="ISO 8601 time the event was created.")
    source: str | None = Field(
        default=None,
        description="Where the event came from: beps (Fidelity's event stream), alerts (Fidelity's alert history, "
        "polled while BEPS is down) or paper.",
    )
