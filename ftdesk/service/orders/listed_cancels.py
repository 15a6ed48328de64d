"""Cancel an order the service listed itself (not one a client named): the kill switch and the cockpit.

Both take an order from the broker's own order status and cancel it as ``POST /orders/{conf_num}/cancel``
does: the same ``CancelOrder`` command, journaled before and after the broker call, never gated by dry-run mode
or a halt, and never retried. Both run it without a resend after a session expiry, since a cancel the broker may
already have carried out must not be sent twice.
"""

from __future__ import annotations

import hashlib
import json

from ftdesk.domain.cancel_codes import MULTI_LEG, side_of
from ftdesk.domain.orders import Order
from ftdesk.service.orders.commands import CancelOrder
from ftdesk.service.orders.journal import OrderFacts
from ftdesk.service.orders.recorder import OrderTicket


def cancel_code(order: Order) -> str:
    """Return the action code a cancel of this order sends: its own code, or a multi-leg order's first leg's."""
    detail = order.order_detail
    if detail.security_type.upper() == MULTI_LEG and detail.legs:
        code = detail.legs[0].action.strip().upper()
        return side_of(code) if code in ("BUY", "SELL") else code
    return detail.action


def listed_cancel(order: Order, *, request_id: str, endpoint: str) -> tuple[CancelOrder, OrderTicket]:
    """Return the cancel command of a listed order and its journal ticket."""
    conf_num, acct_num, code = order.id_detail.conf_num, order.acct_num, cancel_code(order)
    body = {"conf_num": conf_num, "acct_num": acct_num, "action_code": code}
    ticket = OrderTicket(
        request_id=request_id,
        endpoint=endpoint,
        facts=OrderFacts(acct_num=acct_num, symbol=order.order_detail.symbol, side=code, conf_nums=(conf_num,)),
        body_hash=hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(),
        conf_nums=(conf_num,),
    )
    return CancelOrder(conf_num, acct_num, code), ticket
