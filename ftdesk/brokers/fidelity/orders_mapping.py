"""Mapping of the Fidelity order answers to domain records (docs/fidelity-protocol.md, Orders).

Pure functions, unit-tested on captured sample payloads. Order-entry answers come in several
wrappers (``preview``, ``place``, ``multiLegOptionResponse``, ``cancelandreplace``); the mappers find the
``orderConfirmDetail`` wherever it sits. A ``respTypeCode "E"`` anywhere becomes ``OrderRejected`` with the
upstream's own text (the ``Text=`` part of ``Code=...,Text=...,Source=...``) and its codes in the details.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity import values as v
from ftdesk.brokers.fidelity.orders_actions import (
    Asked,
    ReadBack,
    check_legs,
    check_single,
    preview_legs,
    read_back,
)
from ftdesk.brokers.fidelity.upstream_answer import parse_upstream_detail, raise_for_business_error
from ftdesk.brokers.fidelity.values import option_contract
from ftdesk.domain.errors import BrokerError, OrderRejected
from ftdesk.domain.order_actions import ActionKind
from ftdesk.domain.orders import (
    CancelConfirmDetail,
    CancelPreview,
    CancelPreviewDetail,
    CancelResult,
    ConditionalPreview,
    ConditionalType,
    MessageDetail,
    Order,
    OrderBaseDetail,
    OrderIdDetail,
    OrderLegDetail,
    OrderPlacement,
    OrderPreview,
    OrderStatus,
    OrderStatusDetail,
    PositionIntent,
    PriceType,
    QuoteAtPreview,
    StagedOrder,
    StagedOrderList,
    StagedOrderResult,
    TimeInForce,
)

REJECTED_REASON = "UPSTREAM_REJECTED"
"""The stable reason of ``OrderRejected`` when Fidelity answers ``respTypeCode "E"``; details carry its codes."""

# The decompiled status enum on the spec's lifecycle.
_STATUS = MappingProxyType(
    {
        "OPEN": OrderStatus.OPEN,
        "TRIGGERED_OPEN": OrderStatus.OPEN,
        "EXECUTION_PENDING": OrderStatus.OPEN,
        "PENDING_CANCEL": OrderStatus.OPEN,
        "FILLED": OrderStatus.FILLED,
        "SETTLEMENT_PENDING": OrderStatus.FILLED,
        "PARTIAL_FILL": OrderStatus.PARTIALLY_FILLED,
        "PENDING_CANCEL_PARTIAL_FILL": OrderStatus.PARTIALLY_FILLED,
        "VERIFIED_CANCEL": OrderStatus.CANCELED,
        "VERIFIED_CANCEL_PARTIAL_FILL": OrderStatus.CANCELED,
        "UNTRIGGERED_AWAITS_PRIMARY_TRIGGER": OrderStatus.PENDING_TRIGGER,
        "UNTRIGGERED_AWAITS_CONTINGENT_TRIGGER": OrderStatus.PENDING_TRIGGER,
        "ERROR": OrderStatus.REJECTED,
    }
)
# Words that classify a status code outside the enum (or its description), first match wins.
_STATUS_WORDS = (
    ("REPLACE", OrderStatus.REPLACED),
    ("CANCEL", OrderStatus.CANCELED),
    ("EXPIRE", OrderStatus.EXPIRED),
    ("REJECT", OrderStatus.REJECTED),
    ("PARTIAL", OrderStatus.PARTIALLY_FILLED),
    ("FILL", OrderStatus.FILLED),
    ("TRIGGER", OrderStatus.PENDING_TRIGGER),
)
_PRICE_TYPES = MappingProxyType(
    {"L": PriceType.LIMIT, "M": PriceType.MARKET, "S": PriceType.STOP, "SL": PriceType.STOP_LIMIT}
)
_TIFS = MappingProxyType({"D": TimeInForce.DAY, "G": TimeInForce.GTC})


# --- errors and messages ------------------------------------------------------------------------


def raise_for_rejection(payload: Any, what: str) -> None:
    """Raise ``OrderRejected`` when the answer says ``respTypeCode "E"``, with the upstream's codes and words.

    A ``respTypeCode "E"`` on order entry is the broker refusing the order for a business reason (price too far
    from the last trade, buying power, symbol...): a client error. ``broker_code`` and ``broker_message`` are
    the upstream's ``Code=`` and ``Text=`` (several joined with "; ").
    """
    try:
        raise_for_business_error(payload, what)
    except BrokerError as exc:
        codes = exc.details.get("upstream_codes", []) if isinstance(exc.details, dict) else []
        raise OrderRejected(
            exc.message,
            reason=REJECTED_REASON,
            details=exc.details,
            broker_code="; ".join(codes) or None,
            broker_message="; ".join(upstream_messages(payload, ["error"])) or None,
        ) from None


def upstream_messages(payload: Any, kinds: Iterable[str]) -> list[str]:
    """Return the distinct texts of the ``sysMsg``/``orderConfirmMessage`` records of the given types."""
    wanted = {kind.lower() for kind in kinds}
    found: list[str] = []
    for record in v.walk_dicts(payload):
        kind = (v.text(record.get("type")) or v.text(record.get("severity")) or "").lower()
        detail = v.text(record.get("detail")) or v.text(record.get("message"))
        if kind not in wanted or not detail:
            continue
        message = parse_upstream_detail(detail)[1]
        if message and message not in found:
            found.append(message)
    return found


def confirm_detail(payload: Any) -> dict[str, Any]:
    """Return the first ``orderConfirmDetail`` of an order-entry answer, whatever wraps it."""
    for record in v.records_with(payload, "orderConfirmDetail"):
        detail = v.obj(record, "orderConfirmDetail")
        if detail:
            return detail
    return {}


def answer_acct_num(payload: Any, fallback: str) -> str:
    """Return the account number an order-entry answer names, or ``fallback``."""
    for record in v.records_with(payload, "acctNum"):
        acct = v.text(record.get("acctNum"))
        if acct:
            return acct
    return fallback


def _as_dict(payload: Any) -> dict[str, Any]:
    return payload if isinstance(payload, dict) else {"value": payload}


# --- previews and places -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    """What was asked for, in the spec's terms: the preview echoes it where the upstream answer is silent."""

    acct_num: str
    symbol: str
    action: str
    qty: float
    price_type: PriceType
    limit_price: float | None
    stop_price: float | None
    tif: TimeInForce
    buy: bool
    asked: tuple[Asked, ...] = ()
    """What the broker's echo is checked against: the order, or each multi-leg leg (``multileg``)."""
    multileg: bool = False
    position_intent: PositionIntent | None = None
    debit_credit: str | None = None


def map_preview(payload: Any, intent: Intent, *, what: str = "order preview") -> OrderPreview:
    """Map an equity, option, multi-leg or replace preview answer (``respTypeCode "V"``)."""
    raise_for_rejection(payload, what)
    detail = confirm_detail(payload)
    conf_num = v.text(detail.get("confNum"))
    if not conf_num:
        raise BrokerError(f"Fidelity answered the {what} without a confirmation number", details={"raw": payload})
    preview = map_confirm(detail, intent, what=what)
    warnings = upstream_messages(payload, ("warning",))
    warnings += [w for w in preview.warnings if w not in warnings]
    return preview.model_copy(
        update={"acct_num": answer_acct_num(payload, intent.acct_num), "warnings": warnings, "raw": _as_dict(payload)}
    )


def check_echo(detail: dict[str, Any], intent: Intent, what: str) -> tuple[str | None, str | None, list[str]]:
    """Check what the broker says it understood against the request (``ActionMismatch`` on a contradiction).

    Return the broker's action code and words to show, and the warnings of the check.
    """
    order = v.obj(detail, "orderDetail")
    base = v.obj(order, "baseOrderDetail")
    conf_num = v.text(detail.get("confNum"))
    if intent.multileg:
        tradable = v.obj(order, "tradableSecOrderDetail")
        legs = _complex_legs(order)
        echoed = v.text(tradable.get("dbCrEvenCode"))
        extra = []
        if echoed is not None and intent.debit_credit is not None and echoed.upper() != intent.debit_credit:
            extra.append(f"asked for a net {intent.debit_credit}, the broker understood {echoed}")
        # The answer's netAmount is the limit (captured: 0.92 for 0.92); its sign convention is unknown, its size not.
        net = v.number(detail.get("netAmount"))
        if net is not None and intent.limit_price is not None and abs(abs(net) - intent.limit_price) > 1e-6:
            extra.append(f"asked for a net limit of {intent.limit_price:g}, the broker understood {net:g}")
        warnings = check_legs(intent.asked, legs, what, conf_num, extra)
        words = ", ".join(
            f"{v.text_or(leg.get('actionCodeDesc')) or v.text_or(leg.get('orderActionCode'))} "
            f"{v.text_or(v.first(leg, 'securityDetail.symbol')).lstrip('-')}"
            for leg in legs
        )
        return echoed, words or None, warnings
    warnings = check_single(intent.asked[0], detail, what) if intent.asked else []
    return v.text(base.get("orderActionCode")), v.text(base.get("actionCodeDesc")), warnings


def map_confirm(detail: dict[str, Any], intent: Intent, *, what: str = "order preview") -> OrderPreview:
    """Map one ``orderConfirmDetail`` (estimates and the quote at preview time) to an ``OrderPreview``.

    The broker's echo is checked against the request first: a contradiction raises ``ActionMismatch``.
    """
    broker_code, broker_desc, checked = check_echo(detail, intent, what)
    order = v.obj(detail, "orderDetail")
    base = v.obj(order, "baseOrderDetail")
    price = v.obj(detail, "priceDetail")
    commission = v.number(v.first(detail, "estCommissionDetail.estCommission", "totalEstCommission"))
    if commission is None:
        commission = v.number_or(v.first(detail, "estCommDetail.estComm", "estCommDetail.amt"))
    fees = v.number_or(detail.get("dtcEstFee"))
    net = v.number(v.first(detail, "finalTotalValOfOrder", "netAmount", "totalCost", "netAmt"))
    reference_price = intent.limit_price or intent.stop_price or v.number(price.get("price")) or 0.0
    principal = v.number(v.first(base, "valOfOrder", "valueOfOrder"))
    if principal is None:
        principal = reference_price * intent.qty
    if intent.buy:
        cost = abs(net) if net is not None else principal + commission + fees
        proceeds = 0.0
    else:
        cost = 0.0
        inclusive = v.number(detail.get("netProceedsInclusive"))
        proceeds = abs(
            inclusive if inclusive is not None else net if net is not None else principal - commission - fees
        )
    quote = None
    last = v.number(price.get("price"))
    if last is not None:
        quote = QuoteAtPreview(
            price=last,
            bid=v.number_or(price.get("bidPrice")),
            ask=v.number_or(price.get("askPrice")),
            time=v.iso_time(price.get("priceDateTime")) or "",
        )
    symbol = v.text(v.first(base, "securityDetail.symbol", "secDetail.symbol")) or intent.symbol
    return OrderPreview(
        conf_num=v.text_or(detail.get("confNum")),
        acct_num=v.text(detail.get("acctNum")) or intent.acct_num,
        resp_type_code=v.text(detail.get("respTypeCode")) or "V",
        symbol=symbol.lstrip("-"),
        action=intent.action,
        action_desc=broker_desc or intent.action,
        qty=intent.qty,
        price_type=intent.price_type,
        limit_price=intent.limit_price,
        stop_price=intent.stop_price,
        tif=intent.tif,
        position_intent=intent.position_intent,
        broker_action_code=broker_code,
        broker_action_desc=broker_desc,
        legs=preview_legs(intent.asked, _complex_legs(order)) if intent.multileg else None,
        quote=quote,
        est_commission=commission,
        est_fees=fees,
        est_cost=round(cost, 4),
        est_proceeds=round(proceeds, 4),
        warnings=upstream_messages(order, ("warning",)) + checked,
        raw=detail,
    )


def map_placement(payload: Any, acct_num: str, conf_num: str, *, what: str = "order") -> OrderPlacement:
    """Map a place answer (``respTypeCode "A"``): the order is working upstream from now on."""
    raise_for_rejection(payload, what)
    detail = confirm_detail(payload)
    code = v.text(detail.get("respTypeCode"))
    if code not in ("A", None) or not detail:
        raise BrokerError(
            f"Fidelity did not accept the {what} (response type {code or 'missing'})", details={"raw": payload}
        )
    placed = v.text(detail.get("confNum")) or conf_num
    notes = upstream_messages(payload, ("warning", "info"))
    return OrderPlacement(
        conf_num=placed,
        acct_num=answer_acct_num(payload, acct_num),
        resp_type_code="A",
        status=OrderStatus.OPEN,
        conf_nums=[placed],
        message="; ".join(notes) or "Order accepted",
        raw=_as_dict(payload),
    )


# --- conditional ----------------------------------------------------------------------------------------


def conditional_legs(payload: Any) -> list[dict[str, Any]]:
    """Return the ``orderConfirmDetail`` of each leg, in request order."""
    for record in v.records_with(payload, "condOrderDetails"):
        legs = [v.obj(leg, "orderConfirmDetail") for leg in v.items(record, "condOrderDetails")]
        if any(legs):
            return legs
    return []


def map_conditional_preview(
    payload: Any, acct_num: str, kind: ConditionalType, intents: list[Intent], *, what: str = "conditional preview"
) -> ConditionalPreview:
    """Map a conditional preview: one preview per leg, every leg's conf_num."""
    raise_for_rejection(payload, what)
    legs = conditional_legs(payload)
    if len(legs) != len(intents) or not all(v.text(leg.get("confNum")) for leg in legs):
        raise BrokerError(
            f"Fidelity answered the {what} with {len(legs)} confirmed legs for {len(intents)}", details={"raw": payload}
        )
    previews = [map_confirm(leg, intent, what=what) for leg, intent in zip(legs, intents, strict=True)]
    roots = v.records_with(payload, "condOrderDetails")
    top_level = {key: value for key, value in (roots[0] if roots else {}).items() if key != "condOrderDetails"}
    return ConditionalPreview(
        acct_num=answer_acct_num(payload, acct_num),
        cond_order_type_code=kind,
        conf_nums=[p.conf_num for p in previews],
        legs=previews,
        warnings=upstream_messages(top_level, ("warning",)),
        raw=_as_dict(payload),
    )


def map_conditional_placement(payload: Any, acct_num: str, *, what: str = "conditional order") -> OrderPlacement:
    """Map a conditional place: accepted when every leg says ``A``; the primary leg's conf_num leads."""
    raise_for_rejection(payload, what)
    legs = conditional_legs(payload)
    codes = [v.text(leg.get("respTypeCode")) for leg in legs]
    if not legs or any(code not in ("A", None) for code in codes):
        raise BrokerError(f"Fidelity did not accept every leg of the {what} ({codes})", details={"raw": payload})
    conf_nums = [v.text_or(leg.get("confNum")) for leg in legs]
    notes = upstream_messages(payload, ("warning",))
    return OrderPlacement(
        conf_num=conf_nums[0],
        acct_num=answer_acct_num(payload, acct_num),
        resp_type_code="A",
        status=OrderStatus.OPEN,
        conf_nums=conf_nums,
        message="; ".join(notes) or "Conditional order accepted",
        raw=_as_dict(payload),
    )


# --- cancel -----------------------------------------------------------------------------------------------


def _cancel_entries(payload: Any, *keys: str) -> list[dict[str, Any]]:
    for record in v.records_with(payload, *keys):
        for key in keys:
            entries = v.items(record, key)
            if entries:
                return entries
    return []


def _cancel_entry_fields(entry: dict[str, Any], conf_num: str, acct_num: str) -> dict[str, Any]:
    """Return the fields a cancel entry and a cancel preview entry share; the order's ids fill gaps."""
    return {
        "resp_type_code": v.text_or(entry.get("respTypeCode")),
        "conf_num": v.text(entry.get("confNum")) or conf_num,
        "acct_num": v.text(entry.get("acctNum")) or acct_num,
        "action_code": v.text_or(entry.get("actionCode")),
        "orig_qty": v.number_or(entry.get("origQty")),
        "exec_qty": v.number_or(entry.get("execQty")),
        "remaining_qty": v.number_or(entry.get("remainingQty")),
    }


def map_cancel(payload: Any, conf_num: str, acct_num: str) -> CancelResult:
    """Map a cancel answer: accepted when any ``cancelConfirmDetail`` says ``A``."""
    raise_for_rejection(payload, f"cancel of order {conf_num}")
    entries = _cancel_entries(payload, "cancelConfirmDetail")
    details = [CancelConfirmDetail(**_cancel_entry_fields(entry, conf_num, acct_num)) for entry in entries]
    accepted = any(d.resp_type_code == "A" for d in details)
    if not accepted:
        raise OrderRejected(
            f"Fidelity did not accept the cancel of order {conf_num}", reason=REJECTED_REASON, details={"raw": payload}
        )
    return CancelResult(cancel_confirm_detail=details, is_accepted=True)


def map_cancel_preview(payload: Any, conf_num: str, acct_num: str) -> CancelPreview:
    """Map the (uncaptured) cancel preview: entries like the cancel's, with proceeds, commission and messages."""
    raise_for_rejection(payload, f"cancel preview of order {conf_num}")
    entries = _cancel_entries(payload, "cancelPreviewDetail", "cancelConfirmDetail", "cancelOrderDetail")
    messages = upstream_messages(payload, ("warning", "info", "error"))
    details = [
        CancelPreviewDetail(
            **_cancel_entry_fields(entry, conf_num, acct_num),
            est_proceeds=v.number_or(v.first(entry, "estProceeds", "netProceeds", "estNetProceeds")),
            commission=v.number_or(v.first(entry, "commission", "estCommission", "estCommissionDetail.estCommission")),
            order_confirm_msgs=messages,
        )
        for entry in entries
    ]
    return CancelPreview(cancel_preview_detail=details, is_accepted=any(d.is_accepted for d in details))


# --- order status -------------------------------------------------------------------------------------------


def order_status(code: str | None, desc: str | None) -> OrderStatus:
    """Map an upstream status code (or, for codes outside the known enum, its words) to the lifecycle."""
    upper = (code or "").strip().upper()
    if upper in _STATUS:
        return _STATUS[upper]
    for text in (upper, (desc or "").upper()):
        for word, status in _STATUS_WORDS:
            if word in text:
                return status
    return OrderStatus.OPEN


def map_orders(payload: Any, acct_nums: Iterable[str] | None = None) -> list[Order]:
    """Map the status summary; orders of accounts outside ``acct_nums`` (when given) are dropped."""
    wanted = set(acct_nums) if acct_nums is not None else None
    orders: list[Order] = []
    for raw in v.items(v.obj(payload, "order"), "orderDetails") or v.records_with(payload, "idDetail"):
        order = map_order(raw)
        if order.id_detail.conf_num and (wanted is None or order.acct_num in wanted):
            orders.append(order)
    return orders


def map_order(raw: dict[str, Any]) -> Order:
    """Map one ``orderDetail`` of the status summary."""
    status_raw = v.obj(raw, "statusDetail")
    amount = v.obj(status_raw, "amountDetail")
    ids = v.obj(raw, "idDetail")
    base = v.obj(raw, "baseOrderDetail")
    security = v.obj(base, "securityDetail")
    tradable = v.obj(raw, "tradableSecOrderDetail")
    price_detail = v.obj(tradable, "priceTypeDetail")
    special = v.obj(base, "specialOrderDetail")
    status = order_status(v.text(status_raw.get("statusCode")), v.text(status_raw.get("statusDesc")))
    symbol = v.text_or(security.get("symbol")).lstrip("-")
    complex_order = (
        v.text(special.get("specialOrderCode")) == "C"
        or "COMPLEX" in v.text_or(special.get("specialOrderName")).upper()
    )
    if complex_order:
        security_type = "MULTI_LEG"
    elif v.obj(tradable, "optionDetail") or option_contract(symbol) is not None:
        security_type = "OPTION"
    else:
        security_type = "EQUITY"
    code = v.text_or(base.get("orderActionCode"))
    contract = option_contract(symbol)
    option_type = contract.option_type.value.lower() if contract is not None else None
    dbcr = v.text(tradable.get("dbCrEvenCode"))
    avg_price = v.number(amount.get("avgExecPrice"))
    if security_type == "MULTI_LEG":
        # A spread's fill is a net debit or credit: the magnitude goes in avg_exec_price, the side in the action
        # (DB/CR, as paper reports it). Without dbCrEvenCode a negative price is read as a credit [INF].
        if not dbcr and avg_price is not None and avg_price < 0:
            dbcr = "CR"
        avg_price = abs(avg_price) if avg_price is not None else None
    if security_type == "MULTI_LEG" and dbcr:
        said = ReadBack(dbcr.upper(), None, False, dbcr.upper())  # a spread's action is its net debit or credit
    else:
        kind = ActionKind.EQUITY if security_type == "EQUITY" else ActionKind.OPTION
        said = read_back(kind, code, v.text(base.get("actionCodeDesc")), option_type)
    qty = v.number(amount.get("qty"))
    if qty is None:
        qty = v.number_or(v.first(base, "qty", "origQty"))
    qty_exec = v.number_or(amount.get("qtyExec"))
    remaining = v.number(amount.get("qtyRemaining"))
    if remaining is None:
        remaining = max(qty - qty_exec, 0.0) if status.is_working else 0.0
    limit_price = v.number(price_detail.get("limitPrice"))
    stop_price = v.number(price_detail.get("stopPrice"))
    price_type = _PRICE_TYPES.get(v.text_or(price_detail.get("priceTypeCode")).upper())
    if price_type is None:
        price_type = PriceType.LIMIT if limit_price is not None else PriceType.MARKET
    cancelable = v.flag_or(status_raw.get("cancelableInd"), status.is_working) and status.is_working
    replaceable = (
        v.flag_or(status_raw.get("replaceableInd"), status.is_working and security_type == "EQUITY")
        and status.is_working
    )
    legs = [_leg_detail(leg) for leg in _complex_legs(raw)]
    cond = v.text(v.first(raw, "condOrderTypeCode", "baseOrderDetail.condOrderTypeCode"))
    status_desc = v.text(status_raw.get("statusDesc")) or status.value.replace("_", " ").capitalize()
    return Order(
        acct_num=v.text_or(raw.get("acctNum")),
        id_detail=OrderIdDetail(conf_num=v.text_or(ids.get("confNum"))),
        status_detail=OrderStatusDetail(
            status=status,
            status_desc=status_desc,
            cancelable_ind=cancelable,
            replaceable_ind=replaceable,
            qty=qty,
            qty_exec=qty_exec,
            qty_remaining=remaining,
            avg_exec_price=avg_price if qty_exec else None,
            commission=v.number_or(amount.get("commission")),
            reject_reason=status_desc if status is OrderStatus.REJECTED else None,
        ),
        order_detail=OrderBaseDetail(
            symbol=symbol,
            action=said.action,
            action_desc=v.text(base.get("actionCodeDesc")) or said.desc or said.action,
            qty=qty,
            price_type=price_type,
            limit_price=limit_price,
            stop_price=stop_price,
            tif=_TIFS.get(v.text_or(tradable.get("tifCode")).upper(), TimeInForce.DAY),
            position_intent=said.intent,
            broker_action_code=(dbcr if security_type == "MULTI_LEG" and dbcr else code) or None,
            action_unrecognized=said.unrecognized,
            security_type=security_type,
            entry_time=v.iso_time(base.get("entryDatetime")) or "",
            cond_order_type_code=ConditionalType(cond)
            if cond is not None and cond in ConditionalType.__members__
            else None,
            legs=legs,
        ),
        raw=raw,
    )


def _leg_detail(leg: dict[str, Any]) -> OrderLegDetail:
    """Map one complex-order leg; its action is read with the leg table (an answer's BC/SC names only the side)."""
    code = v.text_or(leg.get("orderActionCode"))
    said = read_back(ActionKind.LEG, code, v.text(leg.get("actionCodeDesc")))
    return OrderLegDetail(
        symbol=v.text_or(v.first(leg, "securityDetail.symbol", "symbol")).lstrip("-"),
        action=said.action,
        qty=v.number_or(leg.get("qty")),
        position_intent=said.intent,
        broker_action_code=code or None,
    )


def _complex_legs(raw: dict[str, Any]) -> list[dict[str, Any]]:
    for record in v.records_with(raw, "complexOrderDetails"):
        legs = v.items(record, "complexOrderDetails")
        if legs:
            return legs
    return []


# --- staged orders --------------------------------------------------------------------------------------------


def staged_messages(payload: Any) -> list[MessageDetail]:
    """Return the ``messages[{code, severity, message}]`` of a staging answer."""
    out: list[MessageDetail] = []
    for record in v.records_with(payload, "severity"):
        message = v.text(record.get("message"))
        if message:
            out.append(MessageDetail(severity=v.text_or(record.get("severity"), "INFO").upper(), message=message))
    return out


def map_staged_orders(payload: Any) -> StagedOrderList:
    """Map the staged-order list; the captured "no data" answer (code 204) is null, as the spec says."""
    staged = [
        StagedOrder(
            stage_id=v.text_or(record.get("stageId")),
            acct_num=v.text_or(v.first(record, "acctNum", "orderDetail.acctNum")),
            created=v.iso_time(v.first(record, "createdTime", "createTime", "createDate", "stageDate")) or "",
            description=v.text_or(v.first(record, "description", "stageDesc")),
            order=v.obj(record, "orderDetail") or dict(record),
        )
        for record in v.records_with(payload, "stageId")
        if v.text(record.get("stageId"))
    ]
    return StagedOrderList(staged_orders=staged or None)


def map_staged_result(payload: Any, stage_id: str | None) -> StagedOrderResult:
    """Map a staging save or delete: a success unless an ERROR message (or ``respTypeCode "E"``) says otherwise."""
    messages = staged_messages(payload)
    failed = any(m.severity == "ERROR" for m in messages) or any(
        v.text(record.get("respTypeCode")) == "E" for record in v.walk_dicts(payload)
    )
    found = next(
        (v.text(r.get("stageId")) for r in v.records_with(payload, "stageId") if v.text(r.get("stageId"))), None
    )
    return StagedOrderResult(is_success=not failed, stage_id=found or stage_id, messages=messages)
