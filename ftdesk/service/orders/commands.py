"""The order commands the desk takes, and the one table that says what each is and which broker call it makes.

A route (or the kill switch, or the cockpit) builds a command from a validated body (``PlaceEquity(order,
conf_num)``) and hands it to ``OrderDesk``; the desk looks the command up in ``DISPATCH`` for its journal action,
the kind of preview it binds to, and the one call of the broker's orders group it makes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from ftdesk.brokers.capabilities import OrdersApi
from ftdesk.domain.orders import (
    CancelPreview,
    CancelResult,
    ConditionalOrder,
    ConditionalPreview,
    ConditionalReplace,
    EquityOrder,
    MultiLegOptionOrder,
    OptionOrder,
    OrderPlacement,
    OrderPreview,
    ReplaceOrder,
)
from ftdesk.service.orders.journal import JournalAction
from ftdesk.service.orders.previews import OrderKind

R = TypeVar("R")


class Command(Generic[R]):
    """An order action the desk runs; ``R`` is what the broker answers."""


# --- previews and places -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewEquity(Command[OrderPreview]):
    order: EquityOrder


@dataclass(frozen=True)
class PlaceEquity(Command[OrderPlacement]):
    order: EquityOrder
    conf_num: str


@dataclass(frozen=True)
class PreviewOption(Command[OrderPreview]):
    order: OptionOrder


@dataclass(frozen=True)
class PlaceOption(Command[OrderPlacement]):
    order: OptionOrder
    conf_num: str


@dataclass(frozen=True)
class PreviewMultiLeg(Command[OrderPreview]):
    order: MultiLegOptionOrder


@dataclass(frozen=True)
class PlaceMultiLeg(Command[OrderPlacement]):
    order: MultiLegOptionOrder
    conf_num: str


@dataclass(frozen=True)
class PreviewConditional(Command[ConditionalPreview]):
    order: ConditionalOrder


@dataclass(frozen=True)
class PlaceConditional(Command[OrderPlacement]):
    order: ConditionalOrder
    conf_nums: Sequence[str]


@dataclass(frozen=True)
class PreviewReplace(Command[OrderPreview]):
    order: ReplaceOrder


@dataclass(frozen=True)
class PlaceReplace(Command[OrderPlacement]):
    order: ReplaceOrder
    conf_num: str


@dataclass(frozen=True)
class PreviewConditionalReplace(Command[ConditionalPreview]):
    order: ConditionalReplace


@dataclass(frozen=True)
class PlaceConditionalReplace(Command[OrderPlacement]):
    order: ConditionalReplace
    conf_nums: Sequence[str]


# --- cancels -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewCancel(Command[CancelPreview]):
    conf_num: str
    acct_num: str
    action_code: str


@dataclass(frozen=True)
class CancelOrder(Command[CancelResult]):
    conf_num: str
    acct_num: str
    action_code: str


@dataclass(frozen=True)
class Dispatch:
    """What a command is to the desk: its journal action, the preview kind it binds to, its broker call."""

    action: JournalAction
    kind: OrderKind | None
    send: Callable[[OrdersApi, Any], Awaitable[Any]]


_PREVIEW, _PLACE = JournalAction.PREVIEW, JournalAction.PLACE
_K = OrderKind

DISPATCH: MappingProxyType[type[Command[Any]], Dispatch] = MappingProxyType(
    {
        PreviewEquity: Dispatch(_PREVIEW, _K.EQUITY, lambda api, c: api.preview_equity_order(c.order)),
        PlaceEquity: Dispatch(_PLACE, _K.EQUITY, lambda api, c: api.place_equity_order(c.order, c.conf_num)),
        PreviewOption: Dispatch(_PREVIEW, _K.OPTION, lambda api, c: api.preview_option_order(c.order)),
        PlaceOption: Dispatch(_PLACE, _K.OPTION, lambda api, c: api.place_option_order(c.order, c.conf_num)),
        PreviewMultiLeg: Dispatch(_PREVIEW, _K.MULTI_LEG, lambda api, c: api.preview_multileg_order(c.order)),
        PlaceMultiLeg: Dispatch(_PLACE, _K.MULTI_LEG, lambda api, c: api.place_multileg_order(c.order, c.conf_num)),
        PreviewConditional: Dispatch(_PREVIEW, _K.CONDITIONAL, lambda api, c: api.preview_conditional_order(c.order)),
        PlaceConditional: Dispatch(
            _PLACE, _K.CONDITIONAL, lambda api, c: api.place_conditional_order(c.order, c.conf_nums)
        ),
        PreviewReplace: Dispatch(_PREVIEW, _K.REPLACE, lambda api, c: api.preview_replace(c.order)),
        PlaceReplace: Dispatch(_PLACE, _K.REPLACE, lambda api, c: api.place_replace(c.order, c.conf_num)),
        PreviewConditionalReplace: Dispatch(
            _PREVIEW, _K.CONDITIONAL_REPLACE, lambda api, c: api.preview_conditional_replace(c.order)
        ),
        PlaceConditionalReplace: Dispatch(
            _PLACE, _K.CONDITIONAL_REPLACE, lambda api, c: api.place_conditional_replace(c.order, c.conf_nums)
        ),
        PreviewCancel: Dispatch(
            JournalAction.CANCEL_PREVIEW, None, lambda api, c: api.preview_cancel(c.conf_num, c.acct_num, c.action_code)
        ),
        CancelOrder: Dispatch(
            JournalAction.CANCEL, None, lambda api, c: api.cancel_order(c.conf_num, c.acct_num, c.action_code)
        ),
    }
)


def dispatch(command: Command[Any]) -> Dispatch:
    """Return the table's row of a command."""
    return DISPATCH[type(command)]


def order_of(command: Command[Any]) -> object | None:
    """Return the domain order a preview or place carries (what the risk limits read), or None for a cancel."""
    return getattr(command, "order", None)
