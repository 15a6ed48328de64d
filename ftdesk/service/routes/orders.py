"""Orders: status, detail, staged orders, previews and places of every order type, cancels, the journal.

Trading safety, in the order the service applies it to a place:

1. Idempotency-Key (optional header on the six place endpoints): a retried place with the same key and
   body returns the first answer (status and envelope, with ``Idempotent-Replayed: true``) without a second
   broker call, also after a restart; the key with another body is ``IDEMPOTENCY_KEY_REUSED`` (422); while
   the first request is in flight it is ``CONFLICT`` (409).
2. Live gate: while live trading is off (dry-run, the default) a place is ``LIVE_TRADING_DISABLED`` (403)
   before any broker call. Previews, cancel previews and cancels are never gated.
3. Bound preview: a place carries the conf_num(s) of an unexpired (FTSERVICE_PREVIEW_TTL), unused preview
   this service made of the same kind of order with the same fields; otherwise ``PREVIEW_REQUIRED`` or
   ``PREVIEW_MISMATCH`` (409), before any broker call.
4. Journal: each preview, place, cancel preview and cancel is written to the order journal before the broker
   call and updated after it (GET /orders/journal).
5. No retries: a place is sent to the broker once; if the session expired it answers SESSION_EXPIRED.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from aiohttp import web
from pydantic import Field

from ftdesk.domain import errors as e
from ftdesk.domain.orders import (
    CancelPreview,
    CancelResult,
    ConditionalPreview,
    Order,
    OrderDetailResult,
    OrderPlacement,
    OrderPreview,
    StagedOrderList,
    StagedOrderResult,
    TradeAgreementResult,
)
from ftdesk.service.orders_bodies import (
    AcctNum,
    CancelBody,
    ConditionalPlaceBody,
    ConditionalPreviewBody,
    ConditionalReplacePlaceBody,
    ConditionalReplacePreviewBody,
    EquityPlaceBody,
    EquityPreviewBody,
    MultiLegPlaceBody,
    MultiLegPreviewBody,
    OptionPlaceBody,
    OptionPreviewBody,
    OrderBodyMixin,
    ReplacePlaceBody,
    ReplacePreviewBody,
    StagedSaveBody,
    TradeAgreementBody,
)
from ftdesk.service.orders_desk import Operation, OrderTicket, P
from ftdesk.service.orders_journal import JournalAction, JournalEntry
from ftdesk.service.orders_previews import OrderKind
from ftdesk.service.routes.common import DateRangeQuery, context, in_session
from ftdesk.service.routing import Call, QueryModel, RouteTable

routes = RouteTable(tag="orders")

H = TypeVar("H", bound=Callable[..., Any])

IDEMPOTENCY_HEADER = "Idempotency-Key"
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_PATH_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

_PREVIEW_ERRORS: tuple[type[e.FtdeskError], ...] = (e.NotFound, e.ActionMismatch)
_PLACE_ERRORS: tuple[type[e.FtdeskError], ...] = (
    e.LiveTradingDisabled,
    e.PreviewRequired,
    e.PreviewMismatch,
    e.Conflict,
    e.IdempotencyKeyReused,
    e.NotFound,
)
_PLACE_OPENAPI: dict[str, Any] = {
    "parameters": [
        {
            "name": IDEMPOTENCY_HEADER,
            "in": "header",
            "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x21-\\x7e]+$"},
            "description": "Any unique string (a UUID) per intended order. A retry with the same key and body "
            "returns the first answer (with `Idempotent-Replayed: true`) instead of placing a second order, "
            "also after a restart; the same key with another body is IDEMPOTENCY_KEY_REUSED; while the first "
            "request is in flight, CONFLICT. Only answers from the broker are remembered: a refusal before the "
            "broker (LIVE_TRADING_DISABLED, PREVIEW_*, VALIDATION_ERROR, AUTH_REQUIRED) can be retried with the "
            "same key. Keys are kept 30 days.",
        }
    ]
}

_PLACE_RULES = """

Safety, in this order, all before the broker is called:
1. `Idempotency-Key` (optional header): the same key and body return the first answer without a second
   order (also after a restart); another body with the key is `IDEMPOTENCY_KEY_REUSED` (422); while the
   first request is in flight, `CONFLICT` (409).
2. Live gate: while live trading is off (dry-run, FTSERVICE_LIVE_TRADING=false, the default, or switched
   off in the tray) the place is refused with `LIVE_TRADING_DISABLED` (403).
3. Bound preview: the body must carry the conf_num{s} of a preview this service made at {preview} within
   FTSERVICE_PREVIEW_TTL seconds (default 300), not used before, with the same fields. Otherwise
   `PREVIEW_REQUIRED` (409; `details.reason` is missing, unknown, expired, already_used or in_use) or
   `PREVIEW_MISMATCH` (409; `details.fields` lists each differing field with the previewed and the given
   value). Previews do not survive a restart of the service.

The preview is used up by the first place that reaches the broker, even if the broker rejects the order
(`BROKER_ERROR`, 502, with the broker's `details.reason`): preview again to try again. The place is sent
once and never retried: when the broker reports an expired session it answers `SESSION_EXPIRED` (preview
and place again once the session is back).
Every attempt, refused ones included, is in the order journal (GET /api/v1/orders/journal)."""


def _place_rules(preview: str, plural: bool = False) -> str:
    return _PLACE_RULES.replace("{preview}", preview).replace("{s}", "s" if plural else "")


def _document(extra: str) -> Callable[[H], H]:
    """Append shared text to a handler's docstring (the OpenAPI description)."""

    def decorate(handler: H) -> H:
        handler.__doc__ = inspect.cleandoc(handler.__doc__ or "") + extra
        return handler

    return decorate


# --- request plumbing --------------------------------------------------------------------------------------


def _idempotency_key(call: Call[Any, Any]) -> str | None:
    value = call.request.headers.get(IDEMPOTENCY_HEADER)
    if value is None:
        return None
    value = value.strip()
    if not _IDEMPOTENCY_KEY.fullmatch(value):
        problem = "must be 1 to 255 visible ASCII characters (a UUID works)"
        raise e.ValidationFailed.for_fields(
            f"Invalid {IDEMPOTENCY_HEADER} header: {problem}", [(IDEMPOTENCY_HEADER, problem)], location="header"
        )
    return value


def _path_id(call: Call[Any, Any], name: str) -> str:
    value = call.path[name]
    if not _PATH_ID.fullmatch(value):
        problem = "must be 1 to 64 letters, digits, '-' or '_'"
        raise e.ValidationFailed.for_fields(f"Invalid path: {name} {problem}", [(name, problem)], location="path")
    return value


def _ticket(
    call: Call[Any, Any], action: JournalAction, kind: OrderKind | None, *, conf_nums: tuple[str, ...] = ()
) -> OrderTicket:
    ctx = context(call)
    body: OrderBodyMixin = call.body
    given = conf_nums or body.given_conf_nums()
    facts = body.journal_facts()
    if given:
        facts = replace(facts, conf_nums=given)
    return OrderTicket(
        request_id=call.request_id,
        endpoint=f"{call.request.method} {call.request.path}",
        action=action,
        kind=kind,
        facts=facts,
        body_hash=body.body_hash(),
        fields=body.previewed_fields() if kind is not None else {},
        conf_nums=given,
        idempotency_key=_idempotency_key(call) if action is JournalAction.PLACE else None,
        # Read per request: the tray flips live trading and may change the preview lifetime at runtime.
        live_trading=ctx.live.enabled,
        preview_ttl=ctx.settings.preview_ttl,
    )


async def _preview(call: Call[Any, Any], kind: OrderKind, operation: Operation[P]) -> P:
    """Journal a preview, run it in the session, and remember its conf_num(s) for the place."""
    run = functools.partial(in_session, call)
    return await context(call).orders.preview(_ticket(call, JournalAction.PREVIEW, kind), run, operation)


async def _place(
    call: Call[Any, Any], kind: OrderKind, operation: Operation[OrderPlacement]
) -> OrderPlacement | web.Response:
    """Place through the desk: Idempotency-Key, live gate, bound preview, journal, one broker call."""
    run = functools.partial(in_session, call, retry_on_expiry=False)
    return await context(call).orders.place(_ticket(call, JournalAction.PLACE, kind), run, operation)


# --- queries -----------------------------------------------------------------------------------------------


class OrderStatusQuery(QueryModel):
    """Which account's orders to list."""

    acct: AcctNum | None = Field(default=None, description="Only this account's orders (default: every account).")


class OrderDetailQuery(QueryModel):
    """The account the order belongs to."""

    acct: AcctNum | None = Field(
        default=None, description="Account number of the order (optional; an order of another account is 404)."
    )


class JournalQuery(DateRangeQuery):
    """Which journal entries to return: a range of UTC days and a limit."""

    limit: int = Field(default=100, ge=1, le=1000, description="Most entries to return (newest first).")


@routes.get(
    "/orders/status",
    summary="Open and recent orders",
    query=OrderStatusQuery,
    response=list[Order],
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_order_status(call: Call[None, OrderStatusQuery]) -> list[Order]:
    """List working orders and those entered in the last 30 days, newest first, of one account or all.

    Each order has `id_detail.conf_num`, `status_detail` (status, status_desc, cancelable_ind,
    replaceable_ind, quantities, average price) and `order_detail` (what was ordered). An unknown `acct` is
    404 NOT_FOUND.
    """
    acct = call.query.acct
    return await in_session(call, lambda b: b.get_order_status(acct))


@routes.get("/orders/staged", summary="Staged (saved) orders", response=StagedOrderList, needs_session=True)
async def get_staged_orders(call: Call[None, None]) -> StagedOrderList:
    """List the orders saved with POST /orders/staged/save, oldest first; `staged_orders` is null when none."""
    return await in_session(call, lambda b: b.get_staged_orders())


@routes.get("/orders/journal", summary="The order journal", query=JournalQuery, response=list[JournalEntry])
async def get_order_journal(call: Call[None, JournalQuery]) -> list[JournalEntry]:
    """Return what this service did with orders, newest first: every preview, place, cancel preview and cancel
    (replace and conditional variants included), refused attempts too.

    Each entry is written before the broker call (outcome `pending`) and updated after it: `accepted`,
    `rejected` (the broker said no), `refused` (ftdesk refused before the broker: live-trading gate, preview
    binding, Idempotency-Key), `error` (the call failed, e.g. AUTH_REQUIRED), or `unknown`: the service
    stopped while the broker call was in flight, so check the order at the broker. The journal keeps the
    listed facts and a SHA-256 of the body, never the body. `start_date`/`end_date` select UTC days. Needs
    no brokerage session; entries are kept until you delete `journal.sqlite3` in the data dir.
    """
    query = call.query
    return await context(call).orders.entries(limit=query.limit, start=query.start_date, end=query.end_date)


@routes.get(
    "/orders/{order_id}/detail",
    summary="One order",
    query=OrderDetailQuery,
    response=OrderDetailResult,
    needs_session=True,
    errors=(e.NotFound,),
)
async def get_order_detail(call: Call[None, OrderDetailQuery]) -> OrderDetailResult:
    """Return one order by its conf_num: `orders` (the order, then the other legs of its conditional group)
    and `order` (the first). An unknown conf_num, or one of another account than `acct`, is 404 NOT_FOUND.
    """
    order_id, acct = _path_id(call, "order_id"), call.query.acct
    return await in_session(call, lambda b: b.get_order_detail(order_id, acct))


# --- equity ------------------------------------------------------------------------------------------------


@routes.post(
    "/orders/equity/preview",
    summary="Preview an equity order",
    body=EquityPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_equity_order(call: Call[EquityPreviewBody, None]) -> OrderPreview:
    """Validate and price an equity order without sending it; returns the `conf_num` to place it with.

    The preview shows the quote it was priced with, estimated cost or proceeds, commission, fees and
    warnings. A limit order without `limitPrice`, a stop without `stopPrice`, a price the price type does not
    use, a fractional or non-positive `qty` or an unknown `orderActionCode` is 422 VALIDATION_ERROR and never
    reaches the broker; the broker's own refusals (unknown symbol, buying power, price far from the market)
    are BROKER_ERROR with `details.reason`. Previews work in dry-run mode and are journaled. Place with the
    same fields plus `confNum` within FTSERVICE_PREVIEW_TTL seconds.
    """
    order = call.body.to_domain()
    return await _preview(call, OrderKind.EQUITY, lambda b: b.preview_equity_order(order))


@routes.post(
    "/orders/equity/place",
    summary="Place a previewed equity order",
    body=EquityPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/equity/preview"))
async def place_equity_order(call: Call[EquityPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place an equity order: the fields of its preview, unchanged, plus that preview's `confNum`.

    Returns the broker's answer: `conf_num`, the order `status` (OPEN, FILLED, ...) and a message.
    """
    order, conf_num = call.body.to_domain(), call.body.confNum or ""
    return await _place(call, OrderKind.EQUITY, lambda b: b.place_equity_order(order, conf_num))


# --- single-leg option -------------------------------------------------------------------------------------


@routes.post(
    "/orders/option/preview",
    summary="Preview a single-leg option order",
    body=OptionPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_option_order(call: Call[OptionPreviewBody, None]) -> OrderPreview:
    """Validate and price a single-leg option order (BC buy call, SC sell call, BP buy put, SP sell put).

    `symbol` is an option symbol (root + YYMMDD + C/P + strike, e.g. AAPL261218C200); `qty` is whole
    contracts; `priceTypeCode` defaults to M (market). Whether the trade opens or closes is decided by the
    position held. Returns the `conf_num` to place it with. Works in dry-run mode; journaled.
    """
    order = call.body.to_domain()
    return await _preview(call, OrderKind.OPTION, lambda b: b.preview_option_order(order))


@routes.post(
    "/orders/option/place",
    summary="Place a previewed single-leg option order",
    body=OptionPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/option/preview"))
async def place_option_order(call: Call[OptionPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a single-leg option order: the fields of its preview, unchanged, plus that preview's `confNum`."""
    order, conf_num = call.body.to_domain(), call.body.confNum or ""
    return await _place(call, OrderKind.OPTION, lambda b: b.place_option_order(order, conf_num))


# --- multi-leg option --------------------------------------------------------------------------------------


@routes.post(
    "/orders/options/preview",
    summary="Preview a multi-leg option order",
    body=MultiLegPreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_multileg_order(call: Call[MultiLegPreviewBody, None]) -> OrderPreview:
    """Validate and price a 2- to 4-leg option order (spread, straddle, combination) at a net price.

    Legs open or close explicitly (BO, SO, BC, SC). A limit order (`price_type` L) needs `net_price` and
    `debit_credit` (DB, CR or EV). The account may first need to accept the trade agreement
    MULTI_LEG_OPTIONS (POST /orders/trade-agreement); without it the broker answers BROKER_ERROR with
    `details.reason` TRADE_AGREEMENT_REQUIRED. Returns the `conf_num` to place it with. Journaled.
    """
    order = call.body.to_domain()
    return await _preview(call, OrderKind.MULTI_LEG, lambda b: b.preview_multileg_order(order))


@routes.post(
    "/orders/options/place",
    summary="Place a previewed multi-leg option order",
    body=MultiLegPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/options/preview"))
async def place_multileg_order(call: Call[MultiLegPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a multi-leg option order: the fields of its preview, unchanged, plus that preview's `conf_num`."""
    order, conf_num = call.body.to_domain(), call.body.conf_num or ""
    return await _place(call, OrderKind.MULTI_LEG, lambda b: b.place_multileg_order(order, conf_num))


# --- cancel --------------------------------------------------------------------------------------------------


@routes.post(
    "/orders/{conf_num}/cancel/preview",
    summary="Preview a cancel",
    body=CancelBody,
    response=CancelPreview,
    needs_session=True,
    errors=(e.NotFound, e.Conflict),
)
async def preview_cancel(call: Call[CancelBody, None]) -> CancelPreview:
    """Say what canceling the order would do: remaining and executed quantity and warnings in
    `cancel_preview_detail[].order_confirm_msgs` (a partial fill in progress, linked conditional legs).

    Never gated by dry-run mode and not required before a cancel (a cancel is never blocked). An order
    that is already finished is 409 CONFLICT; an unknown one 404 NOT_FOUND. Journaled.
    """
    conf_num, body = _path_id(call, "conf_num"), call.body
    ticket = _ticket(call, JournalAction.CANCEL_PREVIEW, None, conf_nums=(conf_num,))
    return await context(call).orders.journaled(
        ticket,
        functools.partial(in_session, call),
        lambda b: b.preview_cancel(conf_num, body.acct_num, body.action_code),
    )


@routes.post(
    "/orders/{conf_num}/cancel",
    summary="Cancel an order",
    body=CancelBody,
    response=CancelResult,
    needs_session=True,
    errors=(e.NotFound, e.Conflict),
)
async def cancel_order(call: Call[CancelBody, None]) -> CancelResult:
    """Cancel a working order (and the conditional legs linked to it); what already filled stands.

    Never gated by dry-run mode and needs no preview: a cancel is never blocked by the service (a cancel
    preview first shows warnings such as a partial fill). An order that is already filled, canceled or
    replaced is 409 CONFLICT; an unknown one 404 NOT_FOUND. Journaled before and after the broker call. A
    cancel whose session expired is retried once after re-authentication (a second cancel cannot place
    anything).
    """
    conf_num, body = _path_id(call, "conf_num"), call.body
    ticket = _ticket(call, JournalAction.CANCEL, None, conf_nums=(conf_num,))
    return await context(call).orders.journaled(
        ticket,
        functools.partial(in_session, call),
        lambda b: b.cancel_order(conf_num, body.acct_num, body.action_code),
    )


# --- cancel-replace ------------------------------------------------------------------------------------------


@routes.post(
    "/orders/replace/preview",
    summary="Preview a cancel-and-replace",
    body=ReplacePreviewBody,
    response=OrderPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_replace(call: Call[ReplacePreviewBody, None]) -> OrderPreview:
    """Validate an atomic cancel-and-replace of a working equity order (`orig_conf_num`, also accepted as
    `orderNumOrig`) by a new order given with the equity fields (camelCase, as for equity orders).

    The symbol and action stay those of the original order; quantity, prices, price type and time in force
    may change. Only orders with `replaceable_ind` can be replaced (option orders: cancel and place anew).
    Returns the `conf_num` to place the replace with. Journaled.
    """
    replace_order = call.body.to_domain()
    return await _preview(call, OrderKind.REPLACE, lambda b: b.preview_replace(replace_order))


@routes.post(
    "/orders/replace/place",
    summary="Place a previewed cancel-and-replace",
    body=ReplacePlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/replace/preview"))
async def place_replace(call: Call[ReplacePlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a cancel-and-replace: the fields of its preview (with `orig_conf_num`), unchanged, plus `confNum`.

    The original order becomes REPLACED (`id_detail.replaced_by`) and the new one takes its place.
    """
    replace_order, conf_num = call.body.to_domain(), call.body.confNum or ""
    return await _place(call, OrderKind.REPLACE, lambda b: b.place_replace(replace_order, conf_num))


# --- conditional ---------------------------------------------------------------------------------------------


@routes.post(
    "/orders/conditional/preview",
    summary="Preview a conditional order (OTO, OCO, OTOCO)",
    body=ConditionalPreviewBody,
    response=ConditionalPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_conditional_order(call: Call[ConditionalPreviewBody, None]) -> ConditionalPreview:
    """Validate and price a conditional order of equity legs: one preview and one conf_num per leg.

    OTO: leg 1 waits until leg 0 is filled. OCO: both work; a fill of one cancels the other. OTOCO: leg 0,
    then legs 1 and 2 as an OCO pair (a bracket). Place it with all the returned `conf_nums`. Journaled.
    """
    order = call.body.to_domain()
    return await _preview(call, OrderKind.CONDITIONAL, lambda b: b.preview_conditional_order(order))


@routes.post(
    "/orders/conditional/place",
    summary="Place a previewed conditional order",
    body=ConditionalPlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/conditional/preview", plural=True))
async def place_conditional_order(call: Call[ConditionalPlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a conditional order: the fields of its preview, unchanged, plus the preview's `conf_nums`.

    `conf_nums` are all of the preview's, in order (or all but the last, as the upstream SDK sends them).
    The answer's `conf_nums` name every leg.
    """
    order, conf_nums = call.body.to_domain(), list(call.body.conf_nums)
    return await _place(call, OrderKind.CONDITIONAL, lambda b: b.place_conditional_order(order, conf_nums))


@routes.post(
    "/orders/conditional/replace/preview",
    summary="Preview a conditional replace",
    body=ConditionalReplacePreviewBody,
    response=ConditionalPreview,
    needs_session=True,
    errors=_PREVIEW_ERRORS,
)
async def preview_conditional_replace(call: Call[ConditionalReplacePreviewBody, None]) -> ConditionalPreview:
    """Validate a replacement of working legs of a conditional order.

    `orig_conf_nums` names the legs to replace (of one conditional order); `legs` is the whole modified
    order, same type and number of legs, each replaced leg keeping its symbol and action. Returns one
    conf_num per replaced leg. Journaled.
    """
    replace_order = call.body.to_domain()
    return await _preview(call, OrderKind.CONDITIONAL_REPLACE, lambda b: b.preview_conditional_replace(replace_order))


@routes.post(
    "/orders/conditional/replace/place",
    summary="Place a previewed conditional replace",
    body=ConditionalReplacePlaceBody,
    response=OrderPlacement,
    needs_session=True,
    errors=_PLACE_ERRORS,
    extra_openapi=_PLACE_OPENAPI,
)
@_document(_place_rules("POST /api/v1/orders/conditional/replace/preview", plural=True))
async def place_conditional_replace(call: Call[ConditionalReplacePlaceBody, None]) -> OrderPlacement | web.Response:
    """Place a conditional replace: the fields of its preview (with `orig_conf_nums`), unchanged, plus the
    preview's `conf_nums`. The replaced legs become REPLACED.
    """
    replace_order, conf_nums = call.body.to_domain(), list(call.body.conf_nums)
    return await _place(
        call, OrderKind.CONDITIONAL_REPLACE, lambda b: b.place_conditional_replace(replace_order, conf_nums)
    )


# --- staged orders, trade agreement ----------------------------------------------------------------------------


@routes.post(
    "/orders/staged/save",
    summary="Save a staged order",
    body=StagedSaveBody,
    response=StagedOrderResult,
    needs_session=True,
)
async def save_staged_order(call: Call[StagedSaveBody, None]) -> StagedOrderResult:
    """Save an order for later; returns `stage_id`. Nothing is sent to the market.

    Not a place operation: allowed in dry-run mode, needs no preview and is not journaled. `order` is kept
    as given (preview it when you want to trade it). `is_success` is false, with an ERROR message, when the
    broker refuses to save it (e.g. an unknown account).
    """
    draft = call.body.to_domain()
    return await in_session(call, lambda b: b.save_staged_order(draft))


@routes.delete(
    "/orders/staged/{stage_id}", summary="Delete a staged order", response=StagedOrderResult, needs_session=True
)
async def delete_staged_order(call: Call[None, None]) -> StagedOrderResult:
    """Delete a saved order. `is_success` is false, with an ERROR message, when there is no such `stage_id`
    (the status stays 200, as upstream). Not a place operation: allowed in dry-run mode, not journaled.
    """
    stage_id = _path_id(call, "stage_id")
    return await in_session(call, lambda b: b.delete_staged_order(stage_id))


@routes.post(
    "/orders/trade-agreement",
    summary="Accept a trade agreement",
    body=TradeAgreementBody,
    response=TradeAgreementResult,
    needs_session=True,
    errors=(e.NotFound,),
)
async def accept_trade_agreement(call: Call[TradeAgreementBody, None]) -> TradeAgreementResult:
    """Record that the account accepts a trade agreement required before certain order types (e.g.
    MULTI_LEG_OPTIONS before multi-leg option orders). Idempotent; `accepted_at` is the first acceptance.

    Not a place operation: allowed in dry-run mode and not journaled. An unknown agreement is 422
    VALIDATION_ERROR naming `agreement_id`; an unknown account 404 NOT_FOUND.
    """
    body = call.body
    return await in_session(call, lambda b: b.accept_trade_agreement(body.acct_num, body.agreement_id))
