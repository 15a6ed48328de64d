"""Entering orders: preview and place of equity, single-leg option, multi-leg option and conditional orders.

Each handler turns its body into an order command and hands it to the order desk, which applies the safety
rules (``OrderDesk.PLACE_RULES``, in the order they apply) and makes the one broker call.
"""

from __future__ import annotations

from aiohttp import web

from ftdesk.domain.orders import (
    ConditionalPreview,
    OrderPlacement,
    OrderPreview,
)
from ftdesk.service.orders.bodies import (
    ConditionalPlaceBody,
    ConditionalPreviewBody,
    EquityPlaceBody,
    EquityPreviewBody,
    MultiLegPlaceBody,
    MultiLegPreviewBody,
    OptionPlaceBody,
    OptionPreviewBody,
)
from ftdesk.service.orders.commands import (
    PlaceConditional,
    PlaceEquity,
    PlaceMultiLeg,
    PlaceOption,
    PreviewConditional,
    PreviewEquity,
    PreviewMultiLeg,
    PreviewOption,
)
from ftdesk.service.routes.order_tickets import (
    PLACE_ERRORS,
    PLACE_OPENAPI,
    PREVIEW_ERRORS,
    document,
    place,
    place_rules,
    preview,
)
from ftdesk.service.web.routing import Call, RouteTable

routes = RouteTable(tag="orders")


# --- equity ------------------------------------------------------------------------------------------------


@routes.post(
    "/orders/equity/preview",
    summary="Preview an equity order",
    body=EquityPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
)
async def preview_equity_order(call: Call[EquityPreviewBody, None]) -> OrderPreview:
    """Validate and price an equity order without sending it; returns the `conf_num` to place it with.

    The preview shows the quote it was priced with, estimated cost or proceeds, commission, fees and
    warnings. A limit order without `limitPrice`, a stop without `stopPrice`, a price the price type does not
    use, a fractional or non-positive `qty` or an unknown `orderActionCode` is 422 VALIDATION_ERROR and never
    reaches the broker; the broker's own refusals (unknown symbol, buying power, price far from the market)
    are 422 ORDER_REJECTED with `details.reason`, `details.broker_code` and `details.broker_message`.
    Previews work in dry-run mode and are journaled. Place with the same fields plus `confNum` within
    FTSERVICE_PREVIEW_TTL seconds.
    """
    return await preview(call, PreviewEquity(call.body.to_domain()))


@routes.post(
    "/orders/equity/place",
    summary="Place a previewed equity order",
    body=EquityPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
)
@document(place_rules("POST /api/v1/orders/equity/preview"))
async def place_equity_order(call: Call[EquityPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place an equity order: the fields of its preview, unchanged, plus that preview's `confNum`.

    Returns the broker's answer: `conf_num`, the order `status` (OPEN, FILLED, ...) and a message.
    """
    return await place(call, PlaceEquity(call.body.to_domain(), call.body.confNum or ""))


# --- single-leg option -------------------------------------------------------------------------------------


@routes.post(
    "/orders/option/preview",
    summary="Preview a single-leg option order",
    body=OptionPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
)
async def preview_option_order(call: Call[OptionPreviewBody, None]) -> OrderPreview:
    """Validate and price a single-leg option order (BC buy call, SC sell call, BP buy put, SP sell put).

    `symbol` is an option symbol (root + YYMMDD + C/P + strike, e.g. AAPL261218C200); `qty` is whole
    contracts; `priceTypeCode` defaults to M (market). Whether the trade opens or closes is decided by the
    position held. Returns the `conf_num` to place it with. Works in dry-run mode; journaled.
    """
    return await preview(call, PreviewOption(call.body.to_domain()))


@routes.post(
    "/orders/option/place",
    summary="Place a previewed single-leg option order",
    body=OptionPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
)
@document(place_rules("POST /api/v1/orders/option/preview"))
async def place_option_order(call: Call[OptionPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a single-leg option order: the fields of its preview, unchanged, plus that preview's `confNum`."""
    return await place(call, PlaceOption(call.body.to_domain(), call.body.confNum or ""))


# --- multi-leg option --------------------------------------------------------------------------------------


@routes.post(
    "/orders/options/preview",
    summary="Preview a multi-leg option order",
    body=MultiLegPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
)
async def preview_multileg_order(call: Call[MultiLegPreviewBody, None]) -> OrderPreview:
    """Validate and price a 2- to 4-leg option order (spread, straddle, combination) at a net price.

    Legs open or close explicitly (BO, SO, BC, SC). A limit order (`price_type` L) needs `net_price` and
    `debit_credit` (DB, CR or EV). The account may first need to accept the trade agreement
    MULTI_LEG_OPTIONS (POST /orders/trade-agreement); without it the broker answers 422 ORDER_REJECTED
    with `details.reason` TRADE_AGREEMENT_REQUIRED. Returns the `conf_num` to place it with. Journaled.

    The answer names the underlying, the net debit or credit and the number of spreads (`qty`), and lists
    `legs` in the order the request sent them: each as the broker understood it, its echoed action code and
    words verbatim (`broker_action_code`, `broker_action_desc`). Every echoed leg was checked against the
    request before the preview was returned: a leg the broker read with another side, intent, contract or
    quantity, or a missing leg, is refused with 502 ACTION_MISMATCH and nothing can be placed.

    Every field is also accepted in the camelCase of the equity and option bodies (`acctNum`,
    `priceTypeCode`, `netPrice`, `debitCredit`, `tifCode`, `confNum`; on a leg `orderActionCode`,
    `positionIntent`), with the same rules; a field given in both spellings, or an unknown field, is a 422.
    """
    return await preview(call, PreviewMultiLeg(call.body.to_domain()))


@routes.post(
    "/orders/options/place",
    summary="Place a previewed multi-leg option order",
    body=MultiLegPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
)
@document(place_rules("POST /api/v1/orders/options/preview"))
async def place_multileg_order(call: Call[MultiLegPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a multi-leg option order: the fields of its preview, unchanged, plus that preview's `conf_num`."""
    return await place(call, PlaceMultiLeg(call.body.to_domain(), call.body.conf_num or ""))


# --- conditional ---------------------------------------------------------------------------------------------


@routes.post(
    "/orders/conditional/preview",
    summary="Preview a conditional order (OTO, OCO, OTOCO)",
    body=ConditionalPreviewBody,
    response=ConditionalPreview,
    needs_session=True,
    errors=PREVIEW_ERRORS,
)
async def preview_conditional_order(call: Call[ConditionalPreviewBody, None]) -> ConditionalPreview:
    """Validate and price a conditional order of equity legs: one preview and one conf_num per leg.

    OTO: leg 1 waits until leg 0 is filled. OCO: both work; a fill of one cancels the other. OTOCO: leg 0,
    then legs 1 and 2 as an OCO pair (a bracket). Place it with all the returned `conf_nums`. Journaled.
    """
    return await preview(call, PreviewConditional(call.body.to_domain()))


@routes.post(
    "/orders/conditional/place",
    summary="Place a previewed conditional order",
    body=ConditionalPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=PLACE_ERRORS,
    extra_openapi=PLACE_OPENAPI,
)
@document(place_rules("POST /api/v1/orders/conditional/preview", plural=True))
async def place_conditional_order(call: Call[ConditionalPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a conditional order: the fields of its preview, unchanged, plus the preview's `conf_nums`.

    `conf_nums` are all of the preview's, in order (or all but the last, as the upstream SDK sends them).
    The answer's `conf_nums` name every leg.
    """
    return await place(call, PlaceConditional(call.body.to_domain(), list(call.body.conf_nums)))
