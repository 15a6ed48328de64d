"""Orders as they stand: status, detail, the journal, staged (saved) orders and trade agreements.

None of these places, changes or cancels an order; those go through the order desk (``OrderDesk.PLACE_RULES``).
"""

from __future__ import annotations

from pydantic import Field

from ftdesk.domain import errors as e
from ftdesk.domain.orders import (
    Order,
    OrderDetailResult,
    StagedOrderList,
    StagedOrderResult,
    TradeAgreementResult,
)
from ftdesk.service.docs.cache_headers import REUSED_ACCOUNT_READ_OPENAPI
from ftdesk.service.orders.bodies import (
    AcctNum,
    StagedSaveBody,
    TradeAgreementBody,
)
from ftdesk.service.orders.journal import JournalEntry
from ftdesk.service.routes.common import DateRangeQuery, context, in_orders
from ftdesk.service.routes.order_tickets import path_id
from ftdesk.service.web.routing import Call, QueryModel, RouteTable

routes = RouteTable(tag="orders")


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
    extra_openapi=REUSED_ACCOUNT_READ_OPENAPI,
)
async def get_order_status(call: Call[None, OrderStatusQuery]) -> list[Order]:
    """List working orders and those entered in the last 30 days, newest first, of one account or all.

    Each order has `id_detail.conf_num`, `status_detail` (status, status_desc, cancelable_ind,
    replaceable_ind, quantities, average price) and `order_detail` (what was ordered). An unknown `acct` is
    404 NOT_FOUND. In Fidelity mode, while account events are live, an identical read within a second may get the
    same answer, marked with `Age`; any order event or order action drops it.
    """
    acct = call.query.acct
    return await in_orders(call, lambda orders: orders.get_order_status(acct))


@routes.get("/orders/staged", summary="Staged (saved) orders", response=StagedOrderList, needs_session=True)
async def get_staged_orders(call: Call[None, None]) -> StagedOrderList:
    """List the orders saved with POST /orders/staged/save, oldest first; `staged_orders` is null when none."""
    return await in_orders(call, lambda orders: orders.get_staged_orders())


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
    order_id, acct = path_id(call, "order_id"), call.query.acct
    return await in_orders(call, lambda orders: orders.get_order_detail(order_id, acct))


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
    return await in_orders(call, lambda orders: orders.save_staged_order(draft))


@routes.delete(
    "/orders/staged/{stage_id}", summary="Delete a staged order", response=StagedOrderResult, needs_session=True
)
async def delete_staged_order(call: Call[None, None]) -> StagedOrderResult:
    """Delete a saved order. `is_success` is false, with an ERROR message, when there is no such `stage_id`
    (the status stays 200, as upstream). Not a place operation: allowed in dry-run mode, not journaled.
    """
    stage_id = path_id(call, "stage_id")
    return await in_orders(call, lambda orders: orders.delete_staged_order(stage_id))


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
    return await in_orders(call, lambda orders: orders.accept_trade_agreement(body.acct_num, body.agreement_id))
