"""What the desktop cockpit reads and does: accounts, positions, the order book, and journaled cancels.

The cockpit in the status window shows positions with their P&L, the open orders (each with a Cancel), and
today's fills, on either broker.

Today's fills go by fill time. Neither broker's order status carries an execution time (only the entry time),
so the fill events of the account-event stream say which orders filled today and when: an order is listed when
it executed something and was entered today, is still working, or has a fill event today. What a restart
forgets: the events of an earlier run are gone, so an order entered on an earlier day (GTC) that filled today
before this run started is not listed, and the fill time shown for an order of today is then its entry time;
the same holds for fills older than the stream's replay buffer (its last 1,000 events).

Each call reaches one capability group through the brokerage session, as a route does, and returns domain
records. A cancel goes through the order desk like ``POST /orders/{conf_num}/
cancel``: journaled before and after the broker call, never gated by dry-run mode, never retried after the
broker answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TypeVar

from ftdesk.brokers.capabilities import AccountsApi, OrdersApi
from ftdesk.domain.accounts import Account, Position
from ftdesk.domain.clock import trading_day
from ftdesk.domain.day_pnl import fill_times, filled_today
from ftdesk.domain.orders import CancelResult, Order
from ftdesk.service.context import ServiceContext
from ftdesk.service.orders.listed_cancels import listed_cancel

T = TypeVar("T")


@dataclass(frozen=True)
class OrderBook:
    """The orders of every account as one read of the broker saw them."""

    open: list[Order]  # working: open, partly filled, or waiting for a trigger
    filled_today: list[Order]  # any quantity executed: entered on the trading day, still working, or filled today
    trading_day: date
    fill_times: Mapping[str, datetime] = field(default_factory=dict)  # conf_num -> its last fill event today


def order_book(orders: list[Order], day: date, filled_at: Mapping[str, datetime] | None = None) -> OrderBook:
    """Split the broker's order list into the open orders and those that filled (partly or wholly) today."""
    filled_at = filled_at or {}
    working = [order for order in orders if order.status_detail.status.is_working]
    filled = filled_today(orders, day, filled_at)
    times = {o.id_detail.conf_num: filled_at[o.id_detail.conf_num] for o in filled if o.id_detail.conf_num in filled_at}
    return OrderBook(open=working, filled_today=filled, trading_day=day, fill_times=times)


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
        context = self._context()
        orders = await self._orders_call(lambda group: group.get_order_status(None))
        day = trading_day(context.clock.now())
        return order_book(orders, day, fill_times((item.event for item in context.events.buffered()), day))

    async def cancel(self, order: Order, *, source: str) -> CancelResult:
        """Cancel a working order through the order desk (journaled; never gated); raise the broker's refusal."""
        command, ticket = listed_cancel(
            order, request_id=f"desktop-{uuid.uuid4().hex[:16]}", endpoint=f"DESKTOP cancel ({source})"
        )
        return await self._context().orders.cancel(command, ticket, resend_after_reauth=False)
