"""Cancel an order the service listed itself (not one a client named): the kill switch and the cockpit.

Both take an order from the broker's own order status and cancel it through the order desk, exactly as
``POST /orders/{conf_num}/cancel`` does: journaled before and after the broker call, never gated by dry-run mode
or a halt, and never retried. The session runner is told not to repeat the call after a session expiry, since a
cancel the broker may already have carried out must not be sent twice.
"""

from __future__ import annotations

import hashlib
import json

from ftdesk.domain.cancel_codes import MULTI_LEG, side_of
from ftdesk.domain.orders import CancelResult, Order
from ftdesk.service.context import ServiceContext
from ftdesk.service.orders.desk import OrderTicket
from ftdesk.service.orders.journal import JournalAction, OrderFacts


def cancel_code(order: Order) -> str:
    """Return the action code a cancel of this order sends: its own code, or a multi-leg order's first leg's."""
    detail = order.order_detail
    if detail.security_type.upper() == MULTI_LEG and detail.legs:
        code = detail.legs[0].action.strip().upper()
        return side_of(code) if code in ("BUY", "SELL") else code
    return detail.action


async def cancel_listed_order(ctx: ServiceContext, order: Order, *, request_id: str, endpoint: str) -> CancelResult:
    """Cancel one listed order through the order desk, once; raise the broker's refusal."""
    conf_num, acct_num, code = order.id_detail.conf_num, order.acct_num, cancel_code(order)
    body = {"conf_num": conf_num, "acct_num": acct_num, "action_code": code}
    ticket = OrderTicket(
        request_id=request_id,
        endpoint=endpoint,
        action=JournalAction.CANCEL,
        kind=None,
        facts=OrderFacts(acct_num=acct_num, symbol=order.order_detail.symbol, side=code, conf_nums=(conf_num,)),
        body_hash=hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(),
        conf_nums=(conf_num,),
        live_trading=ctx.live.enabled,
    )
    return await ctx.orders.journaled(
        ticket,
        lambda operation: ctx.session.run(lambda broker: operation(broker.orders), retry_on_expiry=False),
        lambda group: group.cancel_order(conf_num, acct_num, code),
    )
