"""The fake alert history: ``GetAlerts`` on ecawsgateway, answered as captured.

Tests add alerts with ``add_fill()`` / ``add_cancel()``; each becomes an ``ALERT`` document (the captured
execution document's fields) carried escaped in a ``Document`` of a ``GetAlertsResponse``. The request must be
the SOAP ``GetAlerts`` with ``MsgIndexFrom``/``MsgIndexTo``; messages are answered oldest first (the real
order is not known) within that range. ``polls`` counts the requests.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from aiohttp import web

from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

ECAWS = "ecawsgateway.fidelity.com"
HISTORY = "/ftgw/alerts/services/ATBTAlerts"
NAMESPACE = "http://xmlns.fmr.com/brokerage/fens/service/ALERTS/2009-09"


def alert_document(
    msg_type: str, *, acct: str, order: str, symbol: str, action: str, qty: int, executed: int, price: float, n: int
) -> str:
    """Return an ALERT document shaped like the captured execution."""
    stamp = f"2026-11-16-10.{n // 60:02d}.{n % 60:02d}.000000"
    status = "1" if msg_type == "MFCEX" else "5"
    verb = "filled" if msg_type == "MFCEX" else "canceled"
    return (
        f"<ALERT><MSG_HDR><MSG_ID>MF.EX   .{stamp}</MSG_ID><MSG_TYPE>{msg_type}</MSG_TYPE>"
        f"<MSG_PRIORITY>6</MSG_PRIORITY><SYSTEM_FLAG>3</SYSTEM_FLAG>"
        f"<ALERT_PUBLISHER_TMST>{stamp}</ALERT_PUBLISHER_TMST></MSG_HDR>"
        f"<DISPLAY_DETAIL><DISPLAY_DATA_ENCODING>TEXT</DISPLAY_DATA_ENCODING>"
        f"<DISPLAY_DATA>Order to {action} {qty} {symbol}: {executed} {verb} @ ${price:.2f}. Order Number: {order}"
        f"</DISPLAY_DATA><DISPLAY_SYMBOL>{symbol}</DISPLAY_SYMBOL></DISPLAY_DETAIL>"
        f"<MSG_DETAIL><ACCOUNT_NUM>{acct}</ACCOUNT_NUM><ORDER_ACTION>{action[0]}</ORDER_ACTION>"
        f"<ORIGINAL_QTY>{qty}</ORIGINAL_QTY><EXECUTED_QTY>{executed}</EXECUTED_QTY><ORDER_NUM>{order}</ORDER_NUM>"
        f"<ORDER_STATUS>{status}</ORDER_STATUS><DISP_MSG_SYMBOL>{symbol}</DISP_MSG_SYMBOL>"
        f"<AVG_PRICE>{price}</AVG_PRICE><PRICE>{price}</PRICE><EXEC_SHRS>{executed}</EXEC_SHRS>"
        f"<EXEC_DATE>20261116</EXEC_DATE><EXCH_CODE>XNYS</EXCH_CODE><GROSS_AMT>{price * executed:g}</GROSS_AMT>"
        f"<SEC_TYPE>1</SEC_TYPE></MSG_DETAIL></ALERT>"
    )


class FakeAlertHistory:
    """The alert history of one fake upstream (see the module docstring)."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream
        self.documents: list[str] = []
        self.polls = 0
        self._serial = itertools.count(1)

    def routes(self) -> GroupRoutes:
        """Return the routes this group answers."""
        return {(ECAWS, HISTORY): self._history}

    def add_fill(
        self, *, acct: str, order: str, symbol: str, qty: int, executed: int, price: float, action: str = "BUY"
    ) -> str:
        """Record an execution alert; return its document (what BEPS may carry as its message)."""
        return self._add("MFCEX", acct, order, symbol, action, qty, executed, price)

    def add_cancel(self, *, acct: str, order: str, symbol: str, qty: int, action: str = "BUY") -> str:
        """Record a cancellation alert; return its document."""
        return self._add("CXL01", acct, order, symbol, action, qty, 0, 0.0)

    def _add(
        self, kind: str, acct: str, order: str, symbol: str, action: str, qty: int, executed: int, price: float
    ) -> str:
        document = alert_document(
            kind,
            acct=acct,
            order=order,
            symbol=symbol,
            action=action,
            qty=qty,
            executed=executed,
            price=price,
            n=next(self._serial),
        )
        self.documents.append(document)
        return document

    async def _history(self, upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        self.polls += 1
        try:
            root = ET.fromstring(await request.text())
        except ET.ParseError:
            return web.Response(status=500, text="<Fault>Unparseable request</Fault>", content_type="text/xml")
        values = {element.tag.rsplit("}", 1)[-1]: (element.text or "") for element in root.iter()}
        if "GetAlerts" not in values or not values.get("MsgIndexFrom", "").isdigit():
            return web.Response(status=500, text="<Fault>Unknown operation</Fault>", content_type="text/xml")
        first, last = int(values["MsgIndexFrom"]), int(values.get("MsgIndexTo") or 0)
        page = self.documents[first - 1 : last]
        messages = "".join(f"<Message><Document>{escape(doc)}</Document></Message>" for doc in page)
        answer = (
            '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
            f'<GetAlertsResponse xmlns="{NAMESPACE}"><TotalMsgCount>{len(self.documents)}</TotalMsgCount>'
            f"<Messages>{messages}</Messages></GetAlertsResponse></soapenv:Body></soapenv:Envelope>"
        )
        return web.Response(text=answer, content_type="text/xml")
