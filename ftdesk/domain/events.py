"""Account events, as carried by BEPS upstream and by the paper ledger.

Events are built with ``account_event``, which names them through the one table of
``ftdesk.domain.event_names``: ``event_type`` is the public name (``ORDER_FILL``, ...), ``desc.upstream_code``
the code the upstream used (``MFCEX``, ...), so the frame keeps the spec's shape (event_type, category, desc).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from ftdesk.domain.base import IsoDateTime, JsonObject, Record
from ftdesk.domain.event_names import EventCategory, EventName, UpstreamEventCode, name_of

__all__ = ("AccountEvent", "EventCategory", "EventName", "EventType", "UpstreamEventCode", "account_event")

EventType = UpstreamEventCode
"""The upstream (BEPS) event codes, under their earlier name: what the paper broker's events simulate."""


class AccountEvent(Record):
    """One account event; the hub assigns ``event_id`` when it fans the event out."""

    event_type: EventName = Field(
        description="What happened, the same name on every broker: ORDER_FILL, ORDER_PARTIAL_FILL, ORDER_CANCELED, "
        "ORDER_REJECTED, ORDER_EXPIRED, ORDER_REPLACED, ORDER_UPDATED, POSITION_CHANGED, COST_BASIS_UPDATED, "
        "BALANCE_UPDATED, the price alerts (PRICE_ALERT_ABOVE, ...), or OTHER for an upstream code ftdesk does not "
        "know (its code in desc.upstream_code). The table from upstream codes is in docs/api.md."
    )
    category: EventCategory
    desc: JsonObject = Field(
        description="Event details: upstream_code (the upstream's own code of the event, e.g. MFCEX for a fill, CXL01 "
        "for a cancel, TRPA for a price alert above; on paper, the code of the Fidelity event the simulated one "
        "stands for; null when the upstream sent none), acct_num, conf_num, symbol, qty, price, status, ..."
    )
    time: IsoDateTime = Field(description="ISO 8601 time the event was created.")
    source: str | None = Field(
        default=None,
        description="Where the event came from: beps (Fidelity's event stream), alerts (Fidelity's alert history, "
        "polled while BEPS is down) or paper.",
    )

    @property
    def upstream_code(self) -> str | None:
        """Return the upstream's own code of the event, kept in ``desc.upstream_code``."""
        code = self.desc.get("upstream_code")
        return code if isinstance(code, str) else None


def account_event(
    upstream_code: str | None, desc: Mapping[str, Any], *, time: str, source: str | None = None
) -> AccountEvent:
    """Build an account event from an upstream code and its details, named by the one table."""
    code = (upstream_code or "").strip() or None
    name, category = name_of(code, desc)
    return AccountEvent(
        event_type=name, category=category, desc={**desc, "upstream_code": code}, time=time, source=source
    )
