"""Request bodies of the Fidelity order endpoints (docs/fidelity-protocol.md, Orders).

Pure functions from domain orders to the upstream's JSON, one per endpoint family, so each envelope style
(A ``request.parameter``, C top-level ``parameters``, D flat) is unit-tested on its own. Where a request
shape was never captured (cancel preview, conditional replace, staged save/delete, trade agreement) the
body is our assumption and docs/fidelity-gaps.md says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from ftdesk.brokers.fidelity.http import DPSERVICE
from ftdesk.domain.order_actions import ActionKind, leg_intent, row_for
from ftdesk.domain.orders import (
    ConditionalLeg,
    ConditionalOrder,
    DebitCredit,
    EquityAction,
    EquityOrder,
    LegAction,
    MultiLegOptionOrder,
    OptionOrder,
    PriceType,
)

DP = f"{DPSERVICE}/ftgw/dp"
STATUS_SUMMARY_URL = f"{DP}/retail-order-status/v3/accounts/orders/status-summary"
EQUITY_PREVIEW_URL = f"{DP}/orderentry/equity/preview/v1"
EQUITY_PLACE_URL = f"{DP}/orderentry/equity/place/v1"
OPTION_PREVIEW_URL = f"{DP}/orderentry/option/preview/v2"
OPTION_PLACE_URL = f"{DP}/orderentry/option/place/v2"
MULTILEG_PREVIEW_URL = f"{DP}/orderentry/multilegoption/preview/v1"
MULTILEG_PLACE_URL = f"{DP}/orderentry/multilegoption/place/v1"
CANCEL_PREVIEW_URL = f"{DP}/orderentry/cancel/preview/v1"
CANCEL_PLACE_URL = f"{DP}/orderentry/cancel/place/v1"
REPLACE_PREVIEW_URL = f"{DP}/orderentry/cancelandreplace/preview/v1"
REPLACE_PLACE_URL = f"{DP}/orderentry/cancelandreplace/place/v1"
CONDITIONAL_PREVIEW_URL = f"{DP}/orderentry/conditional/preview/v1"
CONDITIONAL_PLACE_URL = f"{DP}/orderentry/conditional/place/v1"
# [DEC] paths whose middle the decompilation summary abbreviated ("..."): the segments are our guess.
CONDITIONAL_REPLACE_PREVIEW_URL = f"{DP}/retail-condition-replace/v1/accounts/orders/conditional/replace/preview"
CONDITIONAL_REPLACE_PLACE_URL = f"{DP}/retail-condition-replace/v1/accounts/orders/conditional/replace/place"
STAGED_GET_URL = f"{DP}/ent-research-staging/v1/customers/staged-order/get"
STAGED_SAVE_URL = f"{DP}/ent-research-staging/v1/customers/staged-order/save"
STAGED_DELETE_URL = f"{DP}/ent-research-staging/v1/customers/staged-order/delete"
TRADE_AGREEMENT_URL = f"{DP}/trade/useragreement/modify/v1"

# The app sends it to order status; the upstream accepts calls without it.
STATUS_HEADERS = MappingProxyType({"CL": "3"})
STAGED_STAGE_TYPE = "saveD_ORDER"  # the upstream's own spelling


def tracking_headers() -> dict[str, str]:
    """Return the ``FID-LOG-TRACKING-ID`` header the app sends to the staging endpoints."""
    return {"FID-LOG-TRACKING-ID": f"REQ{uuid.uuid4().hex}"}


def equity_action_code(action: EquityAction | str) -> str:
    """Return the upstream code of an equity action from the action table (sell short ``SH``, buy to cover ``BH``)."""
    return row_for(ActionKind.EQUITY, EquityAction(action).value).upstream


def option_action_code(order: OptionOrder) -> str:
    """Return the upstream code of a single-leg option action and its position intent, from the action table."""
    return row_for(ActionKind.OPTION, order.action.value, order.position_intent).upstream


def leg_action_code(action: LegAction) -> str:
    """Return the upstream code of a multi-leg leg action, from the action table."""
    return row_for(ActionKind.LEG, action.value, leg_intent(action)).upstream


def cancel_action_code(action_code: str) -> str:
    """Return the upstream code a cancel echoes when the order's own code could not be read from its status.

    The spec's equity ``SS`` (sell short) is upstream ``SH``; other codes are passed as given.
    """
    code = action_code.strip().upper()
    return "SH" if code == EquityAction.SELL_SHORT.value else code


def quantity(value: float) -> int | float:
    """Send whole quantities as JSON integers, as the app does."""
    return int(value) if float(value).is_integer() else value


def acct_type_code(margin: bool) -> str:
    """Return the order-entry account type: ``M`` margin or ``C`` cash."""
    return "M" if margin else "C"


def price_type_detail(price_type: PriceType, limit_price: float | None, stop_price: float | None) -> dict[str, Any]:
    """Return ``priceTypeDetail``: the code with the prices it needs (stop-limit's ``SL`` is assumed)."""
    detail: dict[str, Any] = {"priceTypeCode": price_type.value}
    if price_type in (PriceType.LIMIT, PriceType.STOP_LIMIT) and limit_price is not None:
        detail["limitPrice"] = limit_price
    if price_type in (PriceType.STOP, PriceType.STOP_LIMIT) and stop_price is not None:
        detail["stopPrice"] = stop_price
    return detail


# --- order status ----------------------------------------------------------------------------------


def status_summary_body(acct_nums: Sequence[str]) -> dict[str, Any]:
    """Return the style-A status-summary request: every filter an explicit null (note ``accType``)."""
    filters = [
        *("fbOpenInd", "fbUSDInd", "fbFigurationInd", "fbDisbursementInd", "fbIncludeOptionInd"),
        *("fbPriceImprovementInd", "fvOrderStatusType", "fvSymbolWithOption", "fvExecCode", "fvSymbol"),
        *("fvOrderTypeCode", "orderId", "symbolOptIndCode"),
    ]
    parameter: dict[str, Any] = dict.fromkeys(filters)
    parameter["acctDetails"] = {"acctDetail": [{"acctNum": acct, "accType": None} for acct in acct_nums]}
    return {"request": {"parameter": parameter}}


# --- equity and cancel-replace --------------------------------------------------------------------------


def equity_parameter(order: EquityOrder, margin: bool) -> dict[str, Any]:
    """Return the ``request.parameter`` of an equity preview."""
    return {
        "baseOrderDetail": {
            "orderActionCode": equity_action_code(order.action),
            "acctTypeCode": acct_type_code(margin),
            "qty": quantity(order.qty),
            "qtyTypeCode": "S",
            "securityDetail": {"symbol": order.symbol.strip().upper()},
        },
        "tradableSecOrderDetail": {
            "tifCode": order.tif.value,
            "priceTypeDetail": price_type_detail(order.price_type, order.limit_price, order.stop_price),
            "mktRouteCode": "",
        },
        "priceDetail": {},
        "acctNum": order.acct_num,
    }


def equity_preview_body(order: EquityOrder, margin: bool) -> dict[str, Any]:
    """Return the equity preview request."""
    return {"request": {"parameter": equity_parameter(order, margin)}}


def equity_place_body(order: EquityOrder, margin: bool, conf_num: str) -> dict[str, Any]:
    """Return the equity place request: the preview's body, its ``confNum``, and both indicators true."""
    parameter = equity_parameter(order, margin)
    parameter["baseOrderDetail"]["confNum"] = conf_num
    parameter["previewInd"] = True
    parameter["confInd"] = True
    return {"request": {"parameter": parameter}}


def replace_preview_body(orig_conf_num: str, order: EquityOrder, margin: bool) -> dict[str, Any]:
    """Return the cancel-and-replace preview request (no ``priceDetail``; ``orderNumOrig`` names the old order)."""
    parameter = equity_parameter(order, margin)
    del parameter["priceDetail"]
    parameter["orderNumOrig"] = orig_conf_num
    return {"request": {"parameter": parameter}}


def replace_place_body(orig_conf_num: str, order: EquityOrder, margin: bool, conf_num: str) -> dict[str, Any]:
    """Return the cancel-and-replace place request: ``confNum``, indicators true, and no ``mktRouteCode``."""
    parameter = replace_preview_body(orig_conf_num, order, margin)["request"]["parameter"]
    parameter["baseOrderDetail"]["confNum"] = conf_num
    del parameter["tradableSecOrderDetail"]["mktRouteCode"]
    parameter["previewInd"] = True
    parameter["confInd"] = True
    return {"request": {"parameter": parameter}}


# --- single-leg option ----------------------------------------------------------------------------------


def option_parameter(order: OptionOrder, margin: bool) -> dict[str, Any]:
    """Return the ``request.parameter`` of a single-leg option preview (v2)."""
    return {
        "baseOrderDetail": {
            "orderActionCode": option_action_code(order),
            "acctTypeCode": acct_type_code(margin),
            "qty": order.qty,
            "qtyTypeCode": "S",
            "securityDetail": {"symbol": order.symbol.strip().upper().lstrip("-")},
            "specificShrDetail": {},
        },
        "tradableSecOrderDetail": {
            "tifCode": order.tif.value,
            "priceTypeDetail": price_type_detail(order.price_type, order.limit_price, order.stop_price),
            "mktRouteCode": "",
            "destinationCode": "",
            "optionDetail": {"type": "O"},
        },
        "priceDetail": {},
        "acctNum": order.acct_num,
    }


def option_preview_body(order: OptionOrder, margin: bool) -> dict[str, Any]:
    """Return the single-leg option preview request."""
    return {"request": {"parameter": option_parameter(order, margin)}}


def option_place_body(order: OptionOrder, margin: bool, conf_num: str) -> dict[str, Any]:
    """Return the single-leg option place request: ``confNum`` and both indicators **false**."""
    parameter = option_parameter(order, margin)
    parameter["baseOrderDetail"]["confNum"] = conf_num
    parameter["previewInd"] = False
    parameter["confInd"] = False
    return {"request": {"parameter": parameter}}


# --- multi-leg option -----------------------------------------------------------------------------------


def leg_price_detail(underlying_price: float, price_time: int, bid: float, ask: float) -> dict[str, Any]:
    """Return a leg's ``priceDetail``: the underlying's price, the quote time (unix s), the leg's bid and ask."""
    return {"price": underlying_price, "priceDateTime": price_time, "bidPrice": bid, "askPrice": ask}


def signed_net(order: MultiLegOptionOrder) -> float | None:
    """Return the net limit with its debit (+) or credit (-) sign; None for a market spread."""
    if order.net_price is None or order.price_type is not PriceType.LIMIT:
        return None
    return -order.net_price if order.debit_credit is DebitCredit.CREDIT and order.net_price else order.net_price


def multileg_body(
    order: MultiLegOptionOrder,
    margin: bool,
    leg_prices: Sequence[dict[str, Any]],
    conf_num: str | None = None,
) -> dict[str, Any]:
    """Return the style-C multi-leg request: ``reqTypeCode`` ``N`` to preview, ``P`` with ``confNum`` to place.

    Every leg carries its ``priceDetail`` (from the quote at preview time, as captured); the place must
    repeat the preview's, so the caller passes the same ``leg_prices`` to both. ``netAmount`` is the net limit
    per spread, signed like ``dbCrEvenCode``: a debit positive (captured: 0.92 with ``DB``), a credit negative
    (not captured). The signed form fails safe: an upstream that wants a positive credit refuses a negative
    limit, whereas one that reads the sign would take a positive credit limit for a debit it may pay. The
    preview answer's ``dbCrEvenCode`` and the size of its ``netAmount`` are checked against the request.
    """
    tradable: dict[str, Any] = {"tifCode": order.tif.value, "dbCrEvenCode": order.debit_credit.value}
    if order.price_type is PriceType.LIMIT:
        tradable["netAmount"] = signed_net(order)
    else:
        # Only limit spreads were captured; a market spread is assumed to name its price type.
        tradable["priceTypeDetail"] = {"priceTypeCode": PriceType.MARKET.value}
    tradable["destinationCode"] = ""
    base: dict[str, Any] = {
        "acctTypeCode": acct_type_code(margin),
        "reqTypeCode": "N" if conf_num is None else "P",
        "optionDetail": {
            "strategyType": "CU",
            "numOfLegs": len(order.legs),
            "complexOrderDetails": [
                {
                    "type": "O",
                    "orderActionCode": leg_action_code(leg.action),
                    "qty": leg.qty,
                    "securityDetail": {"symbolCUSIPCode": "S", "symbol": leg.symbol.strip().upper().lstrip("-")},
                    "priceDetail": dict(price),
                }
                for leg, price in zip(order.legs, leg_prices, strict=True)
            ],
        },
    }
    if conf_num is not None:
        base["confNum"] = conf_num
    return {
        "parameters": {
            "acctNum": order.acct_num,
            "tradableSecOrderDetail": tradable,
            "expDateDefaultInd": True,
            "expTimeDefaultInd": True,
            "baseOrderDetail": base,
        }
    }


# --- cancel -----------------------------------------------------------------------------------------------


def cancel_body(conf_num: str, acct_num: str, action_code: str, *, preview: bool) -> dict[str, Any]:
    """Return the cancel request (place captured; the preview is assumed to differ only by ``previewInd``)."""
    detail = {"confNum": conf_num, "acctNum": acct_num, "actionCode": cancel_action_code(action_code)}
    return {"request": {"parameter": {"cancelOrderDetail": [detail], "previewInd": preview, "confInd": False}}}


# --- conditional ------------------------------------------------------------------------------------------


def conditional_leg(leg: ConditionalLeg, margin: bool) -> dict[str, Any]:
    """Return one ``condOrderDetails`` entry: note ``secDetail``, not ``securityDetail``."""
    return {
        "baseOrderDetail": {
            "acctTypeCode": acct_type_code(margin),
            "orderActionCode": equity_action_code(leg.action),
            "qty": quantity(leg.qty),
            "secDetail": {"symbol": leg.symbol.strip().upper()},
        },
        "tradableSecOrderDetail": {
            "tifCode": leg.tif.value,
            "priceTypeDetail": price_type_detail(leg.price_type, leg.limit_price, leg.stop_price),
        },
    }


def conditional_preview_body(order: ConditionalOrder, margin: bool) -> dict[str, Any]:
    """Return the style-C conditional preview request; leg 0 is the primary."""
    return {
        "parameters": {
            "condOrderTypeCode": order.cond_order_type_code.value,
            "acctNum": order.acct_num,
            "cntgntDetails": [],
            "condOrderDetail": {},
            "condOrderDetails": [conditional_leg(leg, margin) for leg in order.legs],
        }
    }


def conditional_place_body(order: ConditionalOrder, margin: bool, conf_nums: Sequence[str]) -> dict[str, Any]:
    """Return the conditional place request: indicators false and a ``confNum`` on legs 1..n only.

    As in the captured place, leg *i* carries the preview's *(i-1)*-th conf_num, so the caller may
    pass all the preview's conf_nums or only the first n-1.
    """
    body = conditional_preview_body(order, margin)
    parameters = body["parameters"]
    legs = parameters["condOrderDetails"]
    for index, leg in enumerate(legs[1:], start=1):
        if index - 1 < len(conf_nums):
            leg["baseOrderDetail"]["confNum"] = conf_nums[index - 1]
    parameters["previewInd"] = False
    parameters["confInd"] = False
    return body


def conditional_replace_body(
    orig_conf_nums: Sequence[str], order: ConditionalOrder, margin: bool, conf_nums: Sequence[str] | None
) -> dict[str, Any]:
    """Return the (assumed) conditional-replace request: the conditional body plus ``orderNumOrig`` per leg."""
    if conf_nums is None:
        body = conditional_preview_body(order, margin)
    else:
        body = conditional_place_body(order, margin, conf_nums)
    for leg, orig in zip(body["parameters"]["condOrderDetails"], orig_conf_nums, strict=False):
        leg["orderNumOrig"] = orig
    body["parameters"]["orderNumOrigs"] = list(orig_conf_nums)
    return body


# --- staged orders and trade agreement --------------------------------------------------------------------


def staged_get_body() -> dict[str, Any]:
    """Return the staged-order list request (style D)."""
    return {"stagedOrders": [{"stageType": STAGED_STAGE_TYPE, "stageIds": []}]}


def staged_save_body(acct_num: str, description: str, order: dict[str, Any]) -> dict[str, Any]:
    """Return the (assumed) staged-order save request."""
    staged = {"stageType": STAGED_STAGE_TYPE, "acctNum": acct_num, "description": description, "orderDetail": order}
    return {"stagedOrders": [staged]}


def staged_delete_body(stage_id: str) -> dict[str, Any]:
    """Return the (assumed) staged-order delete request, shaped like the get."""
    return {"stagedOrders": [{"stageType": STAGED_STAGE_TYPE, "stageIds": [stage_id]}]}


def trade_agreement_body(acct_num: str, agreement_id: str) -> dict[str, Any]:
    """Return the (assumed) trade-agreement acceptance request."""
    return {"acctNum": acct_num, "agreementTypeCode": agreement_id, "acceptInd": True}
