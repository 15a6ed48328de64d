"""Fills (and the other alerts) from the alert history while BEPS is down: ``GetAlerts``.

The account-event hub polls this every ``interval`` seconds while its BEPS connection is not open, and once
more when it comes back. Each poll reads messages 1 to ``page`` of ``POST ecawsgateway/ftgw/alerts/services/
ATBTAlerts`` (SOAP, captured); every ``Document`` is an escaped ``ALERT`` XML document whose ``MSG_TYPE`` uses
the BEPS event codes (``MFCEX`` fill, ``CXL01`` cancel), so the events are named by the same table as BEPS's
own (``ORDER_FILL``, ``ORDER_PARTIAL_FILL``, ``ORDER_CANCELED``; the code in ``upstream_code``), with ``source``
``alerts``. The first poll of a session only notes what is already
there (history from before login is not news); after that, each ``MSG_ID`` not seen before is one event.

Unknowns and their guards:

- Whether the history is newest first, and how long it is: ``TotalMsgCount`` above ``page`` is logged once
  (an older alert past the page would be missed, a newer one would not if the list is newest first).
- The zone of ``ALERT_PUBLISHER_TMST`` (``2026-04-02-12.11.27.610000``) is not known, so ``time`` is when
  ftdesk read the alert and the raw value is kept as ``desc.alert_time``.
- BEPS's ``message`` format is not known, so an event seen by both sides is recognised by its order number
  and executed quantity wherever they can be read: the fallback's own fields, and a BEPS ``message`` that is
  JSON naming them or an ``ALERT`` document (a guess: the alert history uses that form). An event of BEPS whose message
  names neither cannot be matched; its ``desc.message`` still holds all BEPS sent.
"""

from __future__ import annotations

import html
import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity.http import FidelityHttp
from ftdesk.brokers.fidelity.user_data_alerts import ECAWS, soap_root
from ftdesk.domain.clock import Clock
from ftdesk.domain.events import AccountEvent, EventType, account_event

log = logging.getLogger(__name__)

HISTORY_URL = f"{ECAWS}/ftgw/alerts/services/ATBTAlerts"
# sic (captured); no SOAPAction
HISTORY_HEADERS = MappingProxyType({"Content-Type": "application/x-www-form-urlencoded"})
ALERTS_NAMESPACE = "http://xmlns.fmr.com/brokerage/fens/service/ALERTS/2009-09"
SOURCE = "alerts"
DEFAULT_INTERVAL = 15.0
"""Seconds between polls: one small SOAP call, only while BEPS is down."""
PAGE = 100
ORDER_TYPES = frozenset({EventType.EXECUTION, EventType.ORDER_UPDATE, EventType.ORDER_CANCELED})
"""The upstream codes of order events: the ones a duplicate is looked for."""


def history_envelope(first: int, last: int) -> str:
    """Return the GetAlerts SOAP request for messages ``first`` to ``last`` (1-based), as captured."""
    return (
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"'
        ' xmlns:prin="http://xmlns.fmr.com/institutional/common/headers/2012/09/PrincipalIdentity"'
        ' xmlns:prod="http://xmlns.fmr.com/institutional/common/headers/2011/08/ProductIdentity"'
        f' xmlns:ale="{ALERTS_NAMESPACE}">'
        "<soapenv:Header>"
        "<prin:PrincipalIdentity><prin:RequestorId>Fidelity</prin:RequestorId>"
        "<prin:RequestorType>Standard</prin:RequestorType><prin:AuthMethod>Basic</prin:AuthMethod>"
        "<prin:PrincipalDomain>Retail</prin:PrincipalDomain><prin:PrincipalRole>Owner</prin:PrincipalRole>"
        "</prin:PrincipalIdentity>"
        "<prod:ProductIdentity><prod:AppId>AP002304</prod:AppId><prod:AppName>ATP</prod:AppName>"
        "<prod:AppVersion>4.5.1</prod:AppVersion><prod:ProductId>ATP</prod:ProductId>"
        "<prod:SubSystem>ActiveTrader</prod:SubSystem></prod:ProductIdentity>"
        "</soapenv:Header>"
        f"<soapenv:Body><ale:GetAlerts><ale:MsgIndexFrom>{first}</ale:MsgIndexFrom>"
        f"<ale:MsgIndexTo>{last}</ale:MsgIndexTo></ale:GetAlerts></soapenv:Body>"
        "</soapenv:Envelope>"
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _fields(element: ET.Element) -> dict[str, str]:
    """Return every leaf under ``element`` by local name (first one wins)."""
    found: dict[str, str] = {}
    for child in element.iter():
        if len(child) == 0 and child.text is not None:
            found.setdefault(_local(child.tag), child.text.strip())
    return found


def parse_alert_document(text: str) -> dict[str, str] | None:
    """Return the leaves of one ``ALERT`` document (escaped once or twice), or None when it is not one."""
    stripped = text.strip()
    if not stripped.startswith("<"):
        stripped = html.unescape(stripped).strip()
    try:
        root = ET.fromstring(stripped)
    except ET.ParseError:
        return None
    return _fields(root) if _local(root.tag) == "ALERT" else None


def parse_history(root: ET.Element) -> tuple[int | None, list[dict[str, str]]]:
    """Return ``TotalMsgCount`` and the alert documents of a GetAlerts answer."""
    total: int | None = None
    documents: list[dict[str, str]] = []
    for element in root.iter():
        name = _local(element.tag)
        if name == "TotalMsgCount" and element.text and element.text.strip().isdigit():
            total = int(element.text.strip())
        elif name == "Document" and element.text:
            fields = parse_alert_document(element.text)
            if fields is None:
                log.warning("GetAlerts sent a Document that is not an ALERT; ignored")
            else:
                documents.append(fields)
    return total, documents


def _number(text: str | None) -> float | int | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def to_event(fields: dict[str, str], clock: Clock) -> AccountEvent:
    """Map one ALERT document to the account event BEPS would have sent for it, marked ``alerts``."""
    desc: dict[str, Any] = {
        "msg_id": fields.get("MSG_ID"),
        "acct_num": fields.get("ACCOUNT_NUM"),
        "conf_num": fields.get("ORDER_NUM"),
        "symbol": fields.get("DISP_MSG_SYMBOL") or fields.get("DISPLAY_SYMBOL"),
        "action": fields.get("ORDER_ACTION"),
        "qty": _number(fields.get("ORIGINAL_QTY")),
        "executed_qty": _number(fields.get("EXECUTED_QTY")),
        "fill_qty": _number(fields.get("EXEC_SHRS")),
        "price": _number(fields.get("PRICE")),
        "avg_price": _number(fields.get("AVG_PRICE")),
        "gross_amount": _number(fields.get("GROSS_AMT")),
        "exec_date": fields.get("EXEC_DATE"),
        "exchange": fields.get("EXCH_CODE"),
        "order_status": fields.get("ORDER_STATUS"),
        "sec_type": fields.get("SEC_TYPE"),
        "message": fields.get("DISPLAY_DATA"),
        "alert_time": fields.get("ALERT_PUBLISHER_TMST"),
    }
    return account_event(
        fields.get("MSG_TYPE"),
        {key: value for key, value in desc.items() if value is not None},
        time=clock.now().isoformat(),
        source=SOURCE,
    )


_ORDER_KEYS = ("conf_num", "order_num", "ordernum", "order_number", "confnum", "orderid")
_EXECUTED_KEYS = ("executed_qty", "executedqty", "cumqty", "cum_qty", "filledqty", "filled_qty")


def _order_fields(event: AccountEvent) -> tuple[str | None, Any]:
    """Return the order number and executed quantity an event names, from its desc or its BEPS message."""
    sources: list[dict[str, Any]] = [{key.lower(): value for key, value in event.desc.items()}]
    message = event.desc.get("message")
    if isinstance(message, str) and message.strip():
        document = parse_alert_document(message) if "ALERT" in message else None
        if document is not None:
            sources.append({"order_num": document.get("ORDER_NUM"), "executed_qty": document.get("EXECUTED_QTY")})
        else:
            try:
                parsed = json.loads(message)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                sources.append({str(key).lower(): value for key, value in parsed.items()})
    for fields in sources:
        order = next((fields[key] for key in _ORDER_KEYS if fields.get(key)), None)
        if order is not None:
            executed = next((fields[key] for key in _EXECUTED_KEYS if fields.get(key) is not None), None)
            return str(order).strip().upper(), executed
    return None, None


class FillsFallback:
    """The ``AccountEventFallback`` of the Fidelity broker (see the module docstring)."""

    source = SOURCE

    def __init__(
        self, http: Callable[[], FidelityHttp], clock: Clock, *, interval: float = DEFAULT_INTERVAL, page: int = PAGE
    ) -> None:
        self._http = http
        self._clock = clock
        self.interval = interval
        self._page = page
        self._seen: set[str] = set()
        self._primed = False
        self._warned_total = False

    def reset(self) -> None:
        """Forget what was seen: the next poll notes the new session's history without emitting it."""
        self._seen.clear()
        self._primed = False

    async def poll(self) -> list[AccountEvent]:
        """Read the alert history; return the alerts not seen before, oldest first (by publisher time)."""
        response = await self._http().call(
            "POST", HISTORY_URL, text=history_envelope(1, self._page), headers=HISTORY_HEADERS, read=True
        )
        total, documents = parse_history(soap_root(response, "alert history"))
        if total is not None and total > self._page and not self._warned_total:
            self._warned_total = True
            log.warning("The alert history holds %d alerts; ftdesk reads the first %d each poll", total, self._page)
        fresh = [doc for doc in documents if doc.get("MSG_ID") and doc["MSG_ID"] not in self._seen]
        self._seen.update(doc["MSG_ID"] for doc in fresh)
        if not self._primed:
            self._primed = True
            return []
        fresh.sort(key=lambda doc: doc.get("ALERT_PUBLISHER_TMST", ""))
        return [to_event(doc, self._clock) for doc in fresh]

    def dedupe_key(self, event: AccountEvent) -> str | None:
        """Return ``code|order|executed`` for order events whose order number can be read, else None.

        The key uses the upstream code, not the public name: BEPS may not state a fill's quantities where the
        alert history does, so the same fill can be ORDER_FILL from one and ORDER_PARTIAL_FILL from the other.
        """
        event_type = (event.upstream_code or "").upper()
        if event_type not in ORDER_TYPES:
            return None
        order, executed = _order_fields(event)
        if order is None:
            return None
        amount = _number(str(executed)) if executed is not None else None
        return f"{event_type}|{order}|{'' if amount is None else amount}"
