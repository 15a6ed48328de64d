"""The public names of account events: one table from the upstream's event codes to the names scripts see.

The spec names the fill event ``ORDER_FILL`` in category ``order``; the upstream (Fidelity's BEPS stream and
its alert history) calls it ``MFCEX``. Every broker builds its events through this module (via
``ftdesk.domain.events.account_event``), so the same thing has the same ``event_type`` on paper and on
Fidelity, and the upstream's own code stays in the event's ``upstream_code``. docs/api.md shows the table.

Three rules, in this order:

1. ``UPSTREAM_EVENTS`` gives the name and category of each known upstream code. A code not in it (BEPS has
   about 20 event types; 15 are named) is ``OTHER`` in category ``other``: passed on, never dropped, with its
   code in ``upstream_code``.
2. An execution (``ORDER_FILL`` by the table) is ``ORDER_PARTIAL_FILL`` when the event itself shows that part of
   the order is still open: ``desc.partial`` true, or an executed quantity (``cum_qty`` / ``executed_qty``)
   below the ordered ``qty``. An execution that does not state its quantities (a BEPS message in an unknown
   format) stays ``ORDER_FILL``.
3. An order update (``ORDUP``) whose ``desc.status`` states an outcome takes that outcome's name
   (``CANCELED`` -> ``ORDER_CANCELED``, ``REJECTED``, ``EXPIRED``, ``REPLACED``); other updates (accepted,
   triggered, reduced by an OCO partner...) are ``ORDER_UPDATED`` with the new status in ``desc.status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any

__all__ = (
    "FILL_NAMES",
    "ORDER_STATUS_NAMES",
    "UPSTREAM_EVENTS",
    "EventCategory",
    "EventName",
    "UpstreamEventCode",
    "name_of",
)


class EventCategory(StrEnum):
    """Category of an account event."""

    ORDER = "order"
    POSITION = "position"
    BALANCE = "balance"
    ALERT = "alert"
    OTHER = "other"  # an upstream event type not (yet) known to ftdesk


class EventName(StrEnum):
    """The ``event_type`` of an account event, the same on every broker."""

    ORDER_FILL = "ORDER_FILL"
    ORDER_PARTIAL_FILL = "ORDER_PARTIAL_FILL"
    ORDER_CANCELED = "ORDER_CANCELED"
    ORDER_REJECTED = "ORDER_REJECTED"
    ORDER_EXPIRED = "ORDER_EXPIRED"
    ORDER_REPLACED = "ORDER_REPLACED"
    ORDER_UPDATED = "ORDER_UPDATED"
    POSITION_CHANGED = "POSITION_CHANGED"
    COST_BASIS_UPDATED = "COST_BASIS_UPDATED"
    BALANCE_UPDATED = "BALANCE_UPDATED"
    PRICE_ALERT_ABOVE = "PRICE_ALERT_ABOVE"
    PRICE_ALERT_BELOW = "PRICE_ALERT_BELOW"
    MA50_CROSSED_ABOVE = "MA50_CROSSED_ABOVE"
    MA50_CROSSED_BELOW = "MA50_CROSSED_BELOW"
    MA200_CROSSED_ABOVE = "MA200_CROSSED_ABOVE"
    MA200_CROSSED_BELOW = "MA200_CROSSED_BELOW"
    FIFTY_TWO_WEEK_HIGH = "FIFTY_TWO_WEEK_HIGH"
    FIFTY_TWO_WEEK_LOW = "FIFTY_TWO_WEEK_LOW"
    VOLUME_ALERT = "VOLUME_ALERT"
    OTHER = "OTHER"


class UpstreamEventCode(StrEnum):
    """The upstream (BEPS) event codes; the paper broker's events carry the code of what they simulate."""

    EXECUTION = "MFCEX"
    ORDER_UPDATE = "ORDUP"
    ORDER_CANCELED = "CXL01"
    POSITION_CHANGE = "SPPOS"
    BALANCE_UPDATE = "SPBSM"
    COST_BASIS_UPDATE = "CBUPD"
    PRICE_ABOVE = "TRPA"
    PRICE_BELOW = "TRPB"
    MA50_ABOVE = "MA50A"
    MA50_BELOW = "MA50B"
    MA200_ABOVE = "MA200A"
    MA200_BELOW = "MA200B"
    HIGH_52_WEEK = "52WHA"
    LOW_52_WEEK = "52WHB"
    VOLUME = "VOLAL"


_C = UpstreamEventCode
_N = EventName
UPSTREAM_EVENTS: Mapping[str, tuple[EventName, EventCategory]] = MappingProxyType(
    {
        _C.EXECUTION: (_N.ORDER_FILL, EventCategory.ORDER),
        _C.ORDER_UPDATE: (_N.ORDER_UPDATED, EventCategory.ORDER),
        _C.ORDER_CANCELED: (_N.ORDER_CANCELED, EventCategory.ORDER),
        _C.POSITION_CHANGE: (_N.POSITION_CHANGED, EventCategory.POSITION),
        _C.COST_BASIS_UPDATE: (_N.COST_BASIS_UPDATED, EventCategory.POSITION),
        _C.BALANCE_UPDATE: (_N.BALANCE_UPDATED, EventCategory.BALANCE),
        _C.PRICE_ABOVE: (_N.PRICE_ALERT_ABOVE, EventCategory.ALERT),
        _C.PRICE_BELOW: (_N.PRICE_ALERT_BELOW, EventCategory.ALERT),
        _C.MA50_ABOVE: (_N.MA50_CROSSED_ABOVE, EventCategory.ALERT),
        _C.MA50_BELOW: (_N.MA50_CROSSED_BELOW, EventCategory.ALERT),
        _C.MA200_ABOVE: (_N.MA200_CROSSED_ABOVE, EventCategory.ALERT),
        _C.MA200_BELOW: (_N.MA200_CROSSED_BELOW, EventCategory.ALERT),
        _C.HIGH_52_WEEK: (_N.FIFTY_TWO_WEEK_HIGH, EventCategory.ALERT),
        _C.LOW_52_WEEK: (_N.FIFTY_TWO_WEEK_LOW, EventCategory.ALERT),
        _C.VOLUME: (_N.VOLUME_ALERT, EventCategory.ALERT),
    }
)
"""Upstream code -> (event_type, category). Rules 2 and 3 of the module docstring refine two of them."""

ORDER_STATUS_NAMES: Mapping[str, EventName] = MappingProxyType(
    {
        "CANCELED": _N.ORDER_CANCELED,
        "REJECTED": _N.ORDER_REJECTED,
        "EXPIRED": _N.ORDER_EXPIRED,
        "REPLACED": _N.ORDER_REPLACED,
    }
)
"""An order update's ``desc.status`` -> the name of that outcome (rule 3)."""

FILL_NAMES = frozenset({_N.ORDER_FILL, _N.ORDER_PARTIAL_FILL})
"""The names of an execution: what a fill notification listens for."""

_EXECUTED_KEYS = ("cum_qty", "executed_qty")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _partial(desc: Mapping[str, Any]) -> bool:
    """Say whether an execution's details show part of the order still open (rule 2)."""
    if desc.get("partial") is True:
        return True
    ordered = _number(desc.get("qty"))
    executed = next((_number(desc[key]) for key in _EXECUTED_KEYS if desc.get(key) is not None), None)
    return ordered is not None and executed is not None and 0 < executed < ordered


def name_of(upstream_code: str | None, desc: Mapping[str, Any]) -> tuple[EventName, EventCategory]:
    """Return the public name and category of an upstream event code and its details."""
    code = (upstream_code or "").strip().upper()
    name, category = UPSTREAM_EVENTS.get(code, (EventName.OTHER, EventCategory.OTHER))
    if name is EventName.ORDER_FILL and _partial(desc):
        return EventName.ORDER_PARTIAL_FILL, category
    if name is EventName.ORDER_UPDATED:
        status = desc.get("status")
        if isinstance(status, str) and status.upper() in ORDER_STATUS_NAMES:
            return ORDER_STATUS_NAMES[status.upper()], category
    return name, category
