"""What the desktop cockpit reads and does: accounts, positions, the order book, and journaled cancels.

The cockpit in the status window shows positions with their P&L, the open orders (each with a Cancel), and
today's fills, on either broker. Each call reaches one capability group through the brokerage session, as a
route does, and returns domain records. A cancel goes through the order desk like ``POST /orders/{conf_num}/
cancel``: journaled before and after the broker call, never gated by dry-run mode, never retried after the
broker answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TypeVar

from ftdesk.brokers.capabilities import AccountsApi, OrdersApi
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.clock import TRADING_ZONE, trading_day
from ftdesk.domain.orders import CancelResult, Order
from ftdesk.service.context import ServiceContext
from ftdesk.service.orders.listed_cancels import listed_cancel

T = TypeVar("T")


@dataclass(frozen=True)
class OrderBook:
    """The orders of every account as one read of the broker saw them."""

    open: list[Order]  # working: open, partly filled, or waiting for a trigger
    filled_today: list[Order]  # any quantity executed, entered on the trading day, or still working
    trading_day: date


def entered_on(order: Order, day: date) -> bool:
    """Say whether the order was entered on the trading day (an unreadable time counts as not)."""
    try:
        entered = datetime.fromisoformat(order.order_detail.entry_time)
    except ValueError:
        return False
    if entered.tzinfo is None:  # a broker time without an offset is the exchange's local time
        entered = entered.replace(tzinfo=TRADING_ZONE)
    return trading_day(entered) == day


def order_book(orders: list[Order], day: date) -> OrderBook:
    """Split the broker's order list into the open orders and those that filled (partly or wholly) today."""
    working = [order for order in orders if order.status_detail.status.is_working]
    filled = [
        order
        for order in orders
        if order.status_detail.qty_exec > 0 and (order.status_detail.status.is_working or entered_on(order, day))
    ]
    return OrderBook(open=working, filled_today=filled, trading_day=day)


class CockpitAccess:
    """The cockpit's reads and cancels on the running service (``ServiceControl.cockpit``)."""

    def __init__(self, context: Callable[[], ServiceContext]) -> None:
        # A getter, not a context: a restart builds a new one, and each call uses the run of its time.
        self._context = context

    async def _accounts_call(self, operation: Callable[[AccountsApi], Awaitable[T]]) -> T:
        return await self._context().session.run(lambda broker: operation(broker.accounts))

    async def _orders_call(self, operation: Callable[[OrdersApi], Awaitable[T]]) -> T:
        return await self._context().session.run(lambda broker: operation(broker.orders))

    async def accounts(self) -> list[Account]:
        """Return the brokerage accounts."""
        return await self._accounts_call(lambda accounts: accounts.get_accounts())

    async def positions(self, acct_num: str) -> list[Position]:
        """Return an account's positions, with the broker's day and total gain and loss."""
        return await self._accounts_call(lambda accounts: accounts.get_positions(acct_num))

    async def order_book(self) -> OrderBook:
        """Return every account's open orders and today's fills (one order-status read)."""
        orders = await self._orders_call(lambda group: group.get_order_status(None))
        return order_book(orders, trading_day(self._context().clock.now()))

    async def cancel(self, order: Order, *, source: str) -> CancelResult:
        """Cancel a working order through the order desk (journaled; never gated); raise the broker's refusal."""
        command, ticket = listed_cancel(
            order, request_id=f"desktop-{uuid.uuid4().hex[:16]}", endpoint=f"DESKTOP cancel ({source})"
        )
        return await self._context().orders.cancel(command, ticket, resend_after_reauth=False)
