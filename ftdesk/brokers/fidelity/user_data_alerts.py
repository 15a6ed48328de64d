"""Alerts: the legacy SOAP alert subscription on ecawsgateway and price triggers on dpservice.

``CustomerSignOn`` switches on the ``ATBT`` alert code and answers with TIBCO EMS credentials for the
legacy alert bus. ftdesk reads only whether the activation succeeded: alerts reach clients as account
events (BEPS), and the credentials are never kept, logged or returned. The alert history (``GetAlerts``)
is not read: no Broker method needs it.

Price triggers: a list per status (``active`` / ``expired``), create, and delete. Only an empty list and a
create answer were captured; list entries are read like the create answer's entries, and the fields the
reference SDK's tests guessed (``triggerId``, ``triggerType``, ``triggerPrice``) are accepted too.
Percent triggers (``greaterThanPercent``/``lessThanPercent``, captured in a create) are ``PriceTrigger``s
with basis ``PERCENT``: ``price`` is then the percent (4 for "4 %"), measured, we infer, from the previous
close, as paper measures it.
"""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.http import DPSERVICE, FidelityHttp
from ftdesk.brokers.fidelity.upstream_answer import (
    UpstreamResponse,
    raise_for_business_error,
    raise_for_status,
    upstream_message,
)
from ftdesk.domain.errors import BrokerError, NotFound, SessionExpired
from ftdesk.domain.user_data import PriceTrigger, PriceTriggerDraft, TriggerBasis, TriggerDirection, TriggerStatus

ECAWS = "https://ecawsgateway.fidelity.com"
SUBSCRIPTION_URL = f"{ECAWS}/ftgw/alerts/services/ATBTSubscription"
TRIGGERS_URL = f"{DPSERVICE}/ftgw/dp/retail-price-triggers/v1/investments/research/alert/price-triggers"
LIST_URL = f"{TRIGGERS_URL}/list"
CREATE_URL = f"{TRIGGERS_URL}/create"
DELETE_URL = f"{TRIGGERS_URL}/delete"
# Where Trader+ asks Fidelity to deliver its alerts (as captured).
DEVICES = (MappingProxyType({"name": "Active Trader Pro"}), MappingProxyType({"name": "Fidelity mobile applications"}))
OPERATORS = MappingProxyType(
    {
        (TriggerDirection.ABOVE, TriggerBasis.PRICE): "greaterThan",
        (TriggerDirection.BELOW, TriggerBasis.PRICE): "lessThan",
        (TriggerDirection.ABOVE, TriggerBasis.PERCENT): "greaterThanPercent",
        (TriggerDirection.BELOW, TriggerBasis.PERCENT): "lessThanPercent",
    }
)
_DIRECTIONS = MappingProxyType({"greaterthan": TriggerDirection.ABOVE, "lessthan": TriggerDirection.BELOW,
               "price_above": TriggerDirection.ABOVE, "price_below": TriggerDirection.BELOW,
               "greaterthanpercent": TriggerDirection.ABOVE, "lessthanpercent": TriggerDirection.BELOW})  # fmt: skip
LIST_STATUSES = MappingProxyType({"active": TriggerStatus.ACTIVE, "expired": TriggerStatus.TRIGGERED})
_MAX_PAGES = 20
_NEVER = datetime.max.replace(tzinfo=UTC)

SIGN_ON_HEADERS = MappingProxyType(
    {"Content-Type": "application/x-www-form-urlencoded", "SOAPAction": "CustomerSignOn"}
)
# Fixed text: no value of the user goes into it (the cookies authenticate the call).
SIGN_ON_ENVELOPE = (
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"'
    ' xmlns:prin="http://xmlns.fmr.com/institutional/common/headers/2012/09/PrincipalIdentity"'
    ' xmlns:prod="http://xmlns.fmr.com/institutional/common/headers/2011/08/ProductIdentity"'
    ' xmlns:aut="http://xmlns.fmr.com/institutional/eca/fens/2014/06/AutoSubscription">'
    "<soapenv:Header>"
    "<prin:PrincipalIdentity><prin:RequestorId>fidelity</prin:RequestorId><prin:AuthMethod>Basic</prin:AuthMethod>"
    "<prin:PrincipalDomain>Retail</prin:PrincipalDomain><prin:PrincipalRole>Owner</prin:PrincipalRole>"
    "</prin:PrincipalIdentity>"
    "<prod:ProductIdentity><prod:AppId>AP002304</prod:AppId><prod:AppName>ATP</prod:AppName>"
    "<prod:AppVersion>0.0.1</prod:AppVersion><prod:ProductId>ATP</prod:ProductId>"
    "<prod:SubSystem>ActiveTrader</prod:SubSystem></prod:ProductIdentity>"
    "</soapenv:Header>"
    "<soapenv:Body><aut:CustomerSignOn><aut:AlertCode>ATBT</aut:AlertCode></aut:CustomerSignOn></soapenv:Body>"
    "</soapenv:Envelope>"
)


# --- alert subscription -------------------------------------------------------------------------


@dataclass(frozen=True)
class AlertActivation:
    """What ftdesk keeps of a ``CustomerSignOnResponse``: the verdict, never the EMS credentials."""

    result_code: str
    activation_status: str | None

    @property
    def active(self) -> bool:
        """Say whether alerts are switched on (``ActivationStatus`` 1, or absent on a SUCCESS)."""
        return self.result_code == "SUCCESS" and self.activation_status in (None, "1")


async def sign_on(http: FidelityHttp) -> AlertActivation:
    """Activate the ATBT alert subscription; raise ``BrokerError`` when Fidelity refuses it."""
    response = await http.call("POST", SUBSCRIPTION_URL, text=SIGN_ON_ENVELOPE, headers=SIGN_ON_HEADERS, read=False)
    activation = map_sign_on(soap_root(response, "alert subscription"))
    if activation.result_code != "SUCCESS":
        raise BrokerError(
            f"Fidelity refused the alert subscription (ResultCode {activation.result_code or 'missing'})",
            details={"upstream_codes": [activation.result_code] if activation.result_code else []},
        )
    return activation


def soap_root(response: UpstreamResponse, what: str) -> ET.Element:
    """Return the parsed SOAP answer; map expiry, faults and HTTP errors to domain errors."""
    if response.status in (401, 403):
        raise_for_status(response, what)
    head = response.body.lstrip()[:200].lower()
    if "html" in response.content_type or head.startswith((b"<!doctype html", b"<html")):
        raise SessionExpired("Fidelity answered with a web page instead of data: the session has expired")
    try:
        root = ET.fromstring(response.body)
    except ET.ParseError:
        raise_for_status(response, what)
        raise BrokerError(f"Fidelity sent a {what} answer that is not XML (HTTP {response.status})") from None
    fault = next((element for element in root.iter() if _local(element.tag) == "Fault"), None)
    if fault is not None:
        reason = _child_text(fault, "faultstring") or _child_text(fault, "Text") or "SOAP fault"
        raise BrokerError(f"Fidelity refused the {what}: {reason}", details={"upstream_status": response.status})
    raise_for_status(response, what)
    return root


def map_sign_on(root: ET.Element) -> AlertActivation:
    """Read the verdict of a ``CustomerSignOnResponse`` (namespace prefixes vary: local names are matched)."""
    return AlertActivation(
        result_code=(_child_text(root, "ResultCode") or "").upper(),
        activation_status=_child_text(root, "ActivationStatus"),
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child_text(root: ET.Element, name: str) -> str | None:
    """Return the stripped text of the first element named ``name`` (any namespace) under ``root``."""
    for element in root.iter():
        if _local(element.tag) == name:
            text = (element.text or "").strip()
            return text or None
    return None


# --- price triggers -----------------------------------------------------------------------------


async def fetch_trigger_entries(http: FidelityHttp, status: str, *, fresh: bool = False) -> list[dict[str, Any]]:
    """Return the raw triggers of one list (``active`` or ``expired``), following ``offset`` pages."""
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        # Every symbol: no symbol parameter at all (the capture filtered one symbol; an empty one may match none).
        url = f"{LIST_URL}?status={status}&offset={len(entries)}"
        payload = await http.json("GET", url, read=not fresh, what="price trigger list")
        block = v.obj(payload, "priceTrigger")
        page = [raw for raw in v.items(block, "triggers") if (trigger_id(raw) or "") not in seen]
        entries.extend(page)
        seen.update(trigger_id(raw) or "" for raw in page)
        # Paging is assumed (one page was captured): stop on an empty page, a repeated page, or the total.
        total = v.integer(block.get("totalAccount")) or 0
        if not page or len(entries) >= total:
            break
    return entries


async def fetch_triggers(http: FidelityHttp, statuses: tuple[str, ...] = tuple(LIST_STATUSES)) -> list[PriceTrigger]:
    """Return the price triggers of the given lists, in the order they were created."""
    lists = await asyncio.gather(*(fetch_trigger_entries(http, status) for status in statuses))
    triggers = [
        trigger
        for status, entries in zip(statuses, lists, strict=True)
        for raw in entries
        if (trigger := map_trigger(raw, LIST_STATUSES[status])) is not None
    ]
    ranked = sorted(enumerate(triggers), key=lambda pair: (v.timestamp(pair[1].create_time) or _NEVER, pair[0]))
    return [trigger for _, trigger in ranked]


def trigger_id(raw: dict[str, Any]) -> str | None:
    """Return a trigger entry's id."""
    return v.text(v.first(raw, "id", "triggerId"))


def map_trigger(raw: dict[str, Any], listed_as: TriggerStatus) -> PriceTrigger | None:
    """Map one trigger entry (a price level or a percent move); None for one without an id or a value."""
    identifier = trigger_id(raw)
    operator = v.text_or(v.first(raw, "operator", "triggerType")).lower()
    direction = _DIRECTIONS.get(operator)
    price = v.number(v.first(raw, "value", "triggerPrice"))
    if identifier is None or direction is None or price is None:
        return None
    status = _status(v.text(raw.get("status")), listed_as)
    triggered_time = v.first(raw, "triggeredTime", "triggerTime", "firedTime")
    if triggered_time is None and status is TriggerStatus.TRIGGERED:
        triggered_time = raw.get("updateTime")  # an expired trigger's last update is when it fired [INF]
    return PriceTrigger(
        trigger_id=identifier,
        symbol=v.text_or(raw.get("symbol")).upper(),
        direction=direction,
        price=price,
        basis=TriggerBasis.PERCENT if operator.endswith("percent") else TriggerBasis.PRICE,
        status=status,
        note=v.text_or(v.first(raw, "notes", "note")),
        create_time=v.iso_time(v.first(raw, "createTime", "createdDate")) or "",
        triggered_time=v.iso_time(triggered_time) if status is TriggerStatus.TRIGGERED else None,
        triggered_price=v.number(v.first(raw, "triggeredPrice", "triggeredValue")),
        raw=raw,
    )


def _status(upstream: str | None, listed_as: TriggerStatus) -> TriggerStatus:
    text = (upstream or "").upper()
    if text == "ACTIVE":
        return TriggerStatus.ACTIVE
    if text in ("EXPIRED", "TRIGGERED", "FIRED", "INACTIVE"):
        return TriggerStatus.TRIGGERED
    return listed_as


def create_request(draft: PriceTriggerDraft) -> dict[str, Any]:
    """Return the create body (flat, as captured)."""
    trigger = {
        "currency": "USD",
        "notes": draft.note,
        "operator": OPERATORS[(draft.direction, draft.basis)],
        "symbol": draft.symbol.strip().upper(),
        "value": draft.price,
    }
    return {"triggers": [trigger], "devices": [dict(device) for device in DEVICES]}


async def create_trigger(http: FidelityHttp, draft: PriceTriggerDraft) -> PriceTrigger:
    """Create an active price trigger and return it with its upstream id."""
    body = create_request(draft)
    payload = await http.json("POST", CREATE_URL, body=body, read=False, what="price trigger")
    created = next((raw for raw in v.items(payload, "triggers") if trigger_id(raw)), None)
    if created is None:
        reason = _reason(payload)
        raise BrokerError(f"Fidelity did not create the price trigger{f': {reason}' if reason else ''}")
    # Fields the answer leaves out are the ones just sent.
    trigger = map_trigger({**body["triggers"][0], **created}, TriggerStatus.ACTIVE)
    if trigger is None:
        raise BrokerError("Fidelity created a price trigger ftdesk cannot read", details={"raw": created})
    return trigger


async def delete_trigger(http: FidelityHttp, identifier: str) -> None:
    """Delete a price trigger, active or expired; raise ``NotFound`` for an id Fidelity does not list."""
    # The delete answer was never captured, so whether the id existed is learnt from the lists first.
    known: set[str] = set()
    for status in LIST_STATUSES:
        known.update(trigger_id(raw) or "" for raw in await fetch_trigger_entries(http, status, fresh=True))
    if identifier not in known:
        raise NotFound(f"No price alert with id {identifier}")
    response = await http.call("POST", DELETE_URL, body={"triggers": [{"id": identifier}]}, read=False)
    if response.status == 404:
        raise NotFound(f"No price alert with id {identifier}")
    raise_for_status(response, "price trigger delete")
    payload = response.json()
    raise_for_business_error(payload, "price trigger delete")
    outcome = v.text_or(v.obj(payload).get("status")).lower()
    if outcome in ("fail", "failed", "failure", "error"):
        reason = upstream_message(response)
        raise BrokerError(f"Fidelity did not delete the price trigger{f': {reason}' if reason else ''}")


def _reason(payload: Any) -> str | None:
    """Return the first human message inside an answer, if any."""
    for record in v.walk_dicts(payload):
        for key in ("message", "errorMessage", "detail"):
            text = v.text(record.get(key))
            if text:
                return text[:300]
    return None
