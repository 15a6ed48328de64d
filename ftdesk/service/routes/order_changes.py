"""Changing working orders: cancel (never gated nor blocked), cancel-and-replace, conditional replace.

A replace is placed like a new order (bound preview, live gate, Idempotency-Key, journal); a cancel is
journaled, needs no preview and is never gated by dry-run mode.
"""

from __future__ import annotations

from aiohttp import web

from ftdesk.domain import errors as e
from ftdesk.domain.orders import (
    CancelPreview,
    CancelResult,
    ConditionalPreview,
    OrderPlacement,
    OrderPreview,
)
from ftdesk.service.orders.bodies import (
    CancelBody,
    ConditionalReplacePlaceBody,
    ConditionalReplacePreviewBody,
    ReplacePlaceBody,
    ReplacePreviewBody,
)
from ftdesk.service.orders.commands import (
    CancelOrder,
    PlaceConditionalReplace,
    PlaceReplace,
    PreviewCancel,
    PreviewConditionalReplace,
    PreviewReplace,
)
from ftdesk.service.routes.order_tickets import (
    PLACE_ERRORS,
    PLACE_OPENAPI,
    PREVIEW_ERRORS,
    cancel,
    document,
    path_id,
    place,
    place_rules,
    preview,
)
from ftdesk.service.web.routing import Call, RouteTable

routes = RouteTable(tag="orders")


# --- cancel --------------------------------------------------------------------------------------------------


@routes.post(
    "/orders/{conf_num}/cancel/preview",
    summary="Preview a cancel",
    body=CancelBody,
    response=CancelPreview,
    needs_session=True,
    errors=(e.NotFound, e.Conflict, e.OrderRejected),
    operation_id="preview_cancel_order",
)
async def preview_cancel(call: Call[CancelBody, None]) -> CancelPreview:
    """Say what canceling the order would do: remaining and executed quantity and warnings in
    `cancel_preview_detail[].order_confirm_msgs` (a partial fill in progress, linked conditional legs).

    Never gated by dry-run mode and not required before a cancel (a cancel is never blocked). An order
    that is already finished is 409 CONFLICT; an unknown one 404 NOT_FOUND. Journaled.

    `action_code` must match the order, as for the cancel itself: its own action code or the side it trades,
    `B` or `S`. A mismatch is 422 VALIDATION_ERROR naming `action_code`, with the accepted codes in
    `details[0].allowed`.
    """
    conf_num, body = path_id(call, "conf_num"), call.body
    return await cancel(call, PreviewCancel(conf_num, body.acct_num, body.action_code), conf_num)


@routes.post(
    "/orders/{conf_num}/cancel",
    summary="Cancel an order",
    body=CancelBody,
    response=CancelResult,
    needs_session=True,
    errors=(e.NotFound, e.Conflict, e.OrderRejected),
)
async def cancel_order(call: Call[CancelBody, None]) -> CancelResult:
    """Cancel a working order (and the conditional legs linked to it); what already filled stands.

    Never gated by dry-run mode and needs no preview: a cancel is never blocked by the service (a cancel
    preview first shows warnings such as a partial fill). An order that is already filled, canceled or
    replaced is 409 CONFLICT; an unknown one 404 NOT_FOUND; a cancel the broker itself refuses is 422
    ORDER_REJECTED with its `details.broker_code` and `details.broker_message`. Journaled before and after the
    broker call. A cancel whose session expired is retried once after re-authentication (a second cancel
    cannot place anything).

    `action_code` must match the order being canceled: its own action code or the side it trades, `B` (buy)
    or `S` (sell). Equity `B` and `BC` (buy to cover) are buys, `S` and `SS` (sell short) sells; option `BC`
    and `BP` buys, `SC` and `SP` sells; a multi-leg order accepts its legs' codes (`BO`, `SO`, `BC`, `SC`) and
    the side of any leg. A mismatch is 422 VALIDATION_ERROR naming `action_code`, with the accepted codes in
    `details[0].allowed`: nothing is canceled and nothing is sent to the broker. On Fidelity the check reads the
    order's status; when the status cannot be read the cancel goes out unchecked (a cancel is never blocked).
    """
    conf_num, body = path_id(call, "conf_num"), call.body
    return await cancel(call, CancelOrder(conf_num, body.acct_num, body.action_code), conf_num)


# --- cancel-replace, conditional replace -----------------------------------------------------------------------


@routes.post(
    "/orders/replace/preview",
    summary="Preview a cancel-and-replace",
    body=ReplacePreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
    operation_id="preview_replace_order",
)
async def preview_replace(call: Call[ReplacePreviewBody, None]) -> OrderPreview:
    """Validate an atomic cancel-and-replace of a working equity order (`orig_conf_num`, also accepted as
    `orderNumOrig`) by a new order given with the equity fields (camelCase, as for equity orders).

    The symbol and action stay those of the original order; quantity, prices, price type and time in force
    may change. Only orders with `replaceable_ind` can be replaced (option orders: cancel and place anew).
    Returns the `conf_num` to place the replace with. Journaled.
    """
    return await preview(call, PreviewReplace(call.body.to_domain()))


@routes.post(
    "/orders/replace/place",
    summary="Place a previewed cancel-and-replace",
    body=ReplacePlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
    operation_id="replace_order",
)
@document(place_rules("POST /api/v1/orders/replace/preview"))
async def place_replace(call: Call[ReplacePlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a cancel-and-replace: the fields of its preview (with `orig_conf_num`), unchanged, plus `confNum`.

    The original order becomes REPLACED (`id_detail.replaced_by`) and the new one takes its place.
    """
    return await place(call, PlaceReplace(call.body.to_domain(), call.body.confNum or ""))


@routes.post(
    "/orders/conditional/replace/preview",
    summary="Preview a conditional replace",
    body=ConditionalReplacePreviewBody,
    response=ConditionalPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
    operation_id="preview_replace_conditional_order",
)
async def preview_conditional_replace(call: Call[ConditionalReplacePreviewBody, None]) -> ConditionalPreview:
    """Validate a replacement of working legs of a conditional order.

    `orig_conf_nums` names the legs to replace (of one conditional order); `legs` is the whole modified
    order, same type and number of legs, each replaced leg keeping its symbol and action. Returns one
    conf_num per replaced leg. Journaled.
    """
    return await preview(call, PreviewConditionalReplace(call.body.to_domain()))


@routes.post(
    "/orders/conditional/replace/place",
    summary="Place a previewed conditional replace",
    body=ConditionalReplacePlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
    operation_id="replace_conditional_order",
)
@document(place_rules("POST /api/v1/orders/conditional/replace/preview", plural=True))
async def place_conditional_replace(call: Call[ConditionalReplacePlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a conditional replace: the fields of its preview (with `orig_conf_nums`), unchanged, plus the
    preview's `conf_nums`. The replaced legs become REPLACED and their replacements take their places in the
    order, atomically: legs waiting for a replaced primary wait for (and trigger on) its replacement, and a
    replaced OCO leg stays one-cancels-other with its partner.
    """
    return await place(call, PlaceConditionalReplace(call.body.to_domain(), list(call.body.conf_nums)))
