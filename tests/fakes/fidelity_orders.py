"""The fake Fidelity upstream's order entry and status: an order book per account.

Behaviour: a preview checks the symbol and the limit's distance from the last trade, answers ``V``
with a fresh 8-character ``confNum`` and remembers the previewed body; a place must carry an unused
preview's ``confNum`` with the same body and the indicators of its kind, answers ``A`` with the
same ``confNum`` and books an ``OPEN`` order; cancel moves it to ``VERIFIED_CANCEL``; cancel-replace
cancels ``orderNumOrig`` and books the new order. Refusals are HTTP 200 with ``respTypeCode "E"`` and an
``orderConfirmMsgs`` error in the ``Code=...,Text=...`` form. Numbers mix JSON numbers and strings.
"""

from __future__ import annotations

import copy
import json
import secrets
import string
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import fidelity_orders_actions as fa
from tests.fakes import fidelity_orders_payloads as op
from tests.fakes.fidelity_routes import GroupRoutes

if TYPE_CHECKING:
    from tests.fakes.fidelity_server import FakeFidelity

DP = "dpservice.fidelity.com"
BASE = "/ftgw/dp/orderentry"
STATUS_PATH = "/ftgw/dp/retail-order-status/v3/accounts/orders/status-summary"
COND_REPLACE = "/ftgw/dp/retail-condition-replace/v1/accounts/orders/conditional/replace"
STAGING = "/ftgw/dp/ent-research-staging/v1/customers/staged-order"
AGREEMENT_PATH = "/ftgw/dp/trade/useragreement/modify/v1"

LAST_PRICES = {"AAPL": 182.50, "LGVN": 0.93, "SPAXX": 1.00, "QS": 6.18, "TSLA": 250.00, "SPY": 646.41}
OPTION_PRICES = {
    "QS270115C7": 1.54,
    "QS270115P5": 0.85,
    "QS280121C7": 2.55,
    "QS280121C12": 1.62,
    "UNH260618C350": 4.65,
}
# Only the captured codes are known: stop-limit "SL" and an "even" spread "EV" are our guesses,
# so the fake refuses them as the upstream may, and the adapter has to surface that refusal.
KNOWN_PRICE_TYPES = ("L", "M", "S")
KNOWN_DEBIT_CREDIT = ("DB", "CR")
# Place indicators per kind: equity and replace true/true, option false/false, multi-leg none.
_INDICATORS = {"equity": True, "replace": True, "option": False}
_PLACE_ONLY = ("confNum", "previewInd", "confInd", "mktRouteCode", "reqTypeCode")


def new_conf_num() -> str:
    """Return an 8-character upper-case alphanumeric confirmation number."""
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(8))


def _strip(value: Any) -> Any:
    """Return a body without the keys a place adds or drops, to compare it with its preview."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _PLACE_ONLY}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_strip(value), sort_keys=True)


@dataclass
class FakeOrder:
    """One order in the fake's book."""

    conf_num: str
    acct_num: str
    symbol: str
    action: str
    qty: float
    price_type: str
    limit_price: float | None
    stop_price: float | None
    tif: str
    entered: int  # epoch seconds on the fake's clock
    status: str = "OPEN"
    status_desc: str = "Open"
    complex_legs: list[dict[str, Any]] = field(default_factory=list)
    avg_exec_price: float | None = None  # set when the order filled


@dataclass
class Preview:
    """A preview waiting for its place."""

    kind: str
    acct_num: str
    body: str
    used: bool = False
    orig: str | None = None


class FakeOrders:
    """State and routes of this group; routes() maps (host, path) to a handler."""

    def __init__(self, upstream: FakeFidelity) -> None:
        self.upstream = upstream
        self.book: dict[str, FakeOrder] = {}
        self.previews: dict[str, Preview] = {}
        self.staged: dict[str, dict[str, Any]] = {}
        self.agreements: set[tuple[str, str]] = set()
        self.world = fa.CAPTURED
        """Which reading of single-leg BC/SC this upstream has (``fa.CAPTURED`` or ``fa.DECOMPILED``)."""
        self.misread: dict[str, Any] = {}
        """``baseOrderDetail`` fields the next preview answer echoes instead of the request's: a broker that misread."""
        self.buying_power: float | None = None
        """Dollars a buy may cost, else refused (``Code=`` shape captured; ``BP0001`` and its words the fake's)."""

    def routes(self) -> GroupRoutes:
        """Return this group's handlers by (host, path)."""
        return {
            (DP, STATUS_PATH): _route(self._status),
            (DP, f"{BASE}/equity/preview/v1"): _route(lambda b: self._preview(b, "equity")),
            (DP, f"{BASE}/equity/place/v1"): _route(lambda b: self._place(b, "equity")),
            (DP, f"{BASE}/option/preview/v2"): _route(lambda b: self._preview(b, "option")),
            (DP, f"{BASE}/option/place/v2"): _route(lambda b: self._place(b, "option")),
            (DP, f"{BASE}/cancelandreplace/preview/v1"): _route(lambda b: self._preview(b, "replace")),
            (DP, f"{BASE}/cancelandreplace/place/v1"): _route(lambda b: self._place(b, "replace")),
            (DP, f"{BASE}/multilegoption/preview/v1"): _route(lambda b: self._multileg(b, place=False)),
            (DP, f"{BASE}/multilegoption/place/v1"): _route(lambda b: self._multileg(b, place=True)),
            (DP, f"{BASE}/cancel/preview/v1"): _route(lambda b: self._cancel(b, preview=True)),
            (DP, f"{BASE}/cancel/place/v1"): _route(lambda b: self._cancel(b, preview=False)),
            (DP, f"{BASE}/conditional/preview/v1"): _route(lambda b: self._conditional(b, place=False)),
            (DP, f"{BASE}/conditional/place/v1"): _route(lambda b: self._conditional(b, place=True)),
            (DP, f"{COND_REPLACE}/preview"): _route(lambda b: self._conditional(b, place=False)),
            (DP, f"{COND_REPLACE}/place"): _route(lambda b: self._conditional(b, place=True)),
            (DP, f"{STAGING}/get"): _route(self._staged_get),
            (DP, f"{STAGING}/save"): _route(self._staged_save),
            (DP, f"{STAGING}/delete"): _route(self._staged_delete),
            (DP, AGREEMENT_PATH): _route(self._agreement),
        }

    # --- status -------------------------------------------------------------------------------------

    def _status(self, body: dict[str, Any]) -> dict[str, Any]:
        parameter = body["request"]["parameter"]
        accts = [d["acctNum"] for d in parameter["acctDetails"]["acctDetail"]]
        orders = [o for o in reversed(self.book.values()) if o.acct_num in accts]
        return {
            "order": {
                "acctDetails": {
                    "acctDetail": [
                        {
                            "acctNum": acct,
                            "acctLevel": "B",
                            "orderSummary": {
                                "orderCount": sum(o.acct_num == acct for o in orders),
                                "openCount": sum(o.acct_num == acct and o.status == "OPEN" for o in orders),
                            },
                        }
                        for acct in accts
                    ]
                },
                "orderDetails": {"orderDetail": [self._status_entry(o) for o in orders]},
            }
        }

    def _status_entry(self, order: FakeOrder) -> dict[str, Any]:
        working = order.status in ("OPEN", "UNTRIGGERED_AWAITS_PRIMARY_TRIGGER")
        price: dict[str, Any] = {"priceTypeCode": order.price_type}
        if order.limit_price is not None:
            price["limitPrice"] = f"{order.limit_price:.2f}"
        if order.stop_price is not None:
            price["stopPrice"] = order.stop_price
        tradable: dict[str, Any] = {"priceTypeDetail": price, "tifCode": order.tif, "marketSessionCode": "S"}
        base: dict[str, Any] = {
            "entryDatetime": order.entered,
            "orderActionCode": order.action,
            "actionCodeDesc": fa.status_words(self.world, order.action, order.symbol, order.symbol in OPTION_PRICES),
            "qty": order.qty,
            "origQty": str(order.qty),
            "acctTypeCode": 2,
            "acctTypeDesc": "Margin",
            "securityDetail": {"symbol": order.symbol, "secType": "8" if order.symbol in OPTION_PRICES else "1"},
        }
        if order.complex_legs:
            base["specialOrderDetail"] = {"specialOrderCode": "C", "specialOrderName": "COMPLEX_OPTION"}
            tradable["optionDetail"] = {"strategyCode": "CUSTOM"}
        return {
            "acctNum": order.acct_num,
            "statusDetail": {
                "statusCode": order.status,
                "statusDesc": order.status_desc,
                "cancelableInd": working,
                "replaceableInd": working and not order.complex_legs and order.symbol not in OPTION_PRICES,
                "amountDetail": {
                    "qtyRemaining": str(order.qty) if working else "0",
                    "qty": order.qty,
                    "qtyExec": str(order.qty) if order.avg_exec_price is not None else "0",
                    "commission": "0.00",
                    **({"avgExecPrice": f"{order.avg_exec_price:.2f}"} if order.avg_exec_price is not None else {}),
                },
            },
            "idDetail": {
                "confNum": order.conf_num,
                "systemOrderId": f"26089{order.conf_num[:5]}",
                "orderSource": "WO#",
            },
            "baseOrderDetail": base,
            "tradableSecOrderDetail": tradable,
        }

    def fill(self, conf_num: str, price: float) -> None:
        """Fill a booked single-leg order whole at a price: its status then says so as captured ("Filled at $x")."""
        order = self.book[conf_num]
        order.status, order.status_desc, order.avg_exec_price = "FILLED", f"Filled at ${price:,.2f}", price

    # --- equity, option, replace --------------------------------------------------------------------------

    def _preview(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        parameter = body["request"]["parameter"]
        wrapper = "cancelandreplace" if kind == "replace" else "preview"
        acct = parameter["acctNum"]
        refusal = self._check_order(parameter, wrapper, kind)
        if refusal is not None:
            return refusal
        orig = parameter.get("orderNumOrig")
        if kind == "replace":
            old = self.book.get(orig or "")
            if old is None or old.acct_num != acct or old.status != "OPEN":
                return op.rejection(wrapper, acct, "RP0001", f"Order {orig} cannot be replaced")
        conf = new_conf_num()
        self.previews[conf] = Preview(kind, acct, _canonical(parameter), orig=orig)
        answer = self._confirm(parameter, conf, "V", kind)
        answer["orderConfirmDetail"]["orderDetail"]["baseOrderDetail"].update(self.misread)
        self.misread = {}
        if kind == "replace":
            answer["orderNumOrig"] = orig
        return {wrapper: answer}

    def _place(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        parameter = body["request"]["parameter"]
        wrapper = "cancelandreplace" if kind == "replace" else "place"
        acct = parameter["acctNum"]
        conf = parameter["baseOrderDetail"].get("confNum", "")
        preview = self.previews.get(conf)
        expected = _INDICATORS[kind]
        if (
            preview is None
            or preview.used
            or preview.kind != kind
            or preview.acct_num != acct
            or preview.body != _canonical(parameter)
            or parameter.get("previewInd") is not expected
            or parameter.get("confInd") is not expected
        ):
            return op.rejection(wrapper, acct, "OC0001", "The order does not match a current preview", conf)
        if kind == "replace" and "mktRouteCode" in parameter["tradableSecOrderDetail"]:
            return op.rejection(wrapper, acct, "OC0002", "mktRouteCode is not allowed on a replace", conf)
        preview.used = True
        if kind == "replace" and preview.orig in self.book:
            old = self.book[preview.orig]
            old.status, old.status_desc = "VERIFIED_CANCEL", f"Canceled (replaced by {conf})"
        self._book(conf, acct, parameter)
        answer = self._confirm(parameter, conf, "A", kind)
        # The captured place omits these preview-only fields.
        for key in ("dtcEstFee", "netProceedsInclusive"):
            answer["orderConfirmDetail"].pop(key, None)
        if kind == "replace":
            answer["orderNumOrig"] = preview.orig
        return {wrapper: answer}

    def _check_order(self, parameter: dict[str, Any], wrapper: str, kind: str) -> dict[str, Any] | None:
        acct = parameter["acctNum"]
        symbol = parameter["baseOrderDetail"]["securityDetail"]["symbol"]
        prices = OPTION_PRICES if kind == "option" else LAST_PRICES
        if symbol not in prices:
            return op.rejection(wrapper, acct, "SY0001", f"The symbol {symbol} is not valid. Please re-enter.")
        limit = parameter["tradableSecOrderDetail"]["priceTypeDetail"].get("limitPrice")
        last = prices[symbol]
        price_type = parameter["tradableSecOrderDetail"]["priceTypeDetail"].get("priceTypeCode")
        if price_type not in KNOWN_PRICE_TYPES:
            return op.rejection(wrapper, acct, "PT0001", f"The order type {price_type} is not valid.")
        code = parameter["baseOrderDetail"]["orderActionCode"]
        echoed = fa.option_echo(self.world, code, symbol) if kind == "option" else fa.equity_echo(code)
        if echoed is None:
            return op.rejection(wrapper, acct, "AC0001", f"The action {code} is not valid for {symbol}.")
        if limit is not None and not last / 5 <= float(limit) <= last * 3:
            text = (
                "The limit price entered is too far away from the last trade for this security. "
                "Please correct and re-submit your order."
            )
            return op.rejection(wrapper, acct, "MA5010", text)
        cost = float(parameter["baseOrderDetail"]["qty"]) * float(limit or last) * (100 if kind == "option" else 1)
        if self.buying_power is not None and code.startswith("B") and cost > self.buying_power:
            text = f"This order exceeds your available buying power of ${self.buying_power:,.2f}."
            return op.rejection(wrapper, acct, "BP0001", text)
        return None

    def _confirm(self, parameter: dict[str, Any], conf: str, code: str, kind: str) -> dict[str, Any]:
        base = parameter["baseOrderDetail"]
        symbol = base["securityDetail"]["symbol"]
        price_detail = parameter["tradableSecOrderDetail"]["priceTypeDetail"]
        option = kind == "option"
        last = (OPTION_PRICES if option else LAST_PRICES)[symbol]
        unit = float(price_detail.get("limitPrice") or price_detail.get("stopPrice") or last)
        multiplier = 100 if option else 1
        value = round(unit * float(base["qty"]) * multiplier, 2)
        commission = round(0.65 * float(base["qty"]), 2) if option else 0.0
        sent = base["orderActionCode"]
        echoed = fa.option_echo(self.world, sent, symbol) if option else fa.equity_echo(sent)
        action, words = echoed or (sent, sent)
        selling = action.startswith("S")
        fee = round(value * 0.0000278, 2) if selling else 0.0
        net = round(value - commission - fee, 2) if selling else round(value + commission + fee, 2)
        return {
            "acctNum": parameter["acctNum"],
            "orderConfirmDetail": {
                "respTypeCode": code,
                "confNum": conf,
                "acctNum": parameter["acctNum"],
                "acctTypeCode": base["acctTypeCode"],
                "priceDetail": {
                    "price": last,
                    "priceDateTime": int(self.upstream.now().timestamp()),
                    "bidPrice": str(round(last - 0.01, 2)),
                    "askPrice": round(last + 0.01, 2),
                },
                "estCommissionDetail": {"estCommission": f"{commission:.2f}", "typeCode": "3" if option else "30"},
                "dtcEstFee": fee,
                "netAmount": str(net),
                "netProceedsInclusive": net,
                "orderDetail": {
                    "acctNum": parameter["acctNum"],
                    "baseOrderDetail": {
                        "orderActionCode": action,
                        "actionCodeDesc": words,
                        "qty": base["qty"],
                        "qtyTypeCode": "S",
                        "valOfOrder": value,
                        "securityDetail": {"symbol": symbol, "cusip": "000000000", "secDesc": f"{symbol} SECURITY"},
                    },
                    "tradableSecOrderDetail": copy.deepcopy(parameter["tradableSecOrderDetail"]),
                },
            },
        }

    def _book(self, conf: str, acct: str, parameter: dict[str, Any], status: str = "OPEN") -> FakeOrder:
        base = parameter["baseOrderDetail"]
        tradable = parameter["tradableSecOrderDetail"]
        price = tradable.get("priceTypeDetail") or {}
        security = base.get("securityDetail") or base.get("secDetail") or {}
        action = base["orderActionCode"]
        if security.get("symbol") in OPTION_PRICES:  # the book keeps the broker's reading of the code
            action = (fa.option_echo(self.world, action, security["symbol"]) or (action, ""))[0]
        order = FakeOrder(
            conf_num=conf,
            acct_num=acct,
            symbol=security.get("symbol", ""),
            action=action,
            qty=float(base["qty"]),
            price_type=price.get("priceTypeCode", "M"),
            limit_price=price.get("limitPrice"),
            stop_price=price.get("stopPrice"),
            tif=tradable["tifCode"],
            entered=int(self.upstream.now().timestamp()),
            status=status,
            status_desc="Open" if status == "OPEN" else "Waiting for the primary order",
        )
        self.book[conf] = order
        return order

    # --- multi-leg --------------------------------------------------------------------------------------

    def _multileg(self, body: dict[str, Any], *, place: bool) -> dict[str, Any]:
        parameters = body["parameters"]
        acct = parameters["acctNum"]
        base = parameters["baseOrderDetail"]
        legs = base["optionDetail"]["complexOrderDetails"]
        wrapper = "multiLegOptionResponse"
        unknown = [
            leg["securityDetail"]["symbol"] for leg in legs if leg["securityDetail"]["symbol"] not in OPTION_PRICES
        ]
        if unknown:
            return op.rejection(wrapper, acct, "SY0001", f"The symbol {unknown[0]} is not valid. Please re-enter.")
        # Every captured leg carries its priceDetail (the underlying's price, the time, the leg's bid and ask).
        unpriced = [
            leg["securityDetail"]["symbol"]
            for leg in legs
            if not {"price", "priceDateTime", "bidPrice", "askPrice"} <= set(leg.get("priceDetail") or {})
        ]
        if unpriced:
            return op.rejection(wrapper, acct, "ML0002", f"Price details are missing for leg {unpriced[0]}.")
        if parameters["tradableSecOrderDetail"].get("dbCrEvenCode") not in KNOWN_DEBIT_CREDIT:
            code = parameters["tradableSecOrderDetail"].get("dbCrEvenCode")
            return op.rejection(wrapper, acct, "ML0003", f"The net price type {code} is not valid.")
        bad = [leg for leg in legs if fa.leg_echo(self.world, leg["orderActionCode"], "") is None]
        if bad:
            return op.rejection(wrapper, acct, "AC0001", f"The action {bad[0]['orderActionCode']} is not valid.")
        if place:
            conf = base.get("confNum", "")
            preview = self.previews.get(conf)
            if (
                base.get("reqTypeCode") != "P"
                or preview is None
                or preview.used
                or preview.kind != "multileg"
                or preview.body != _canonical(parameters)
            ):
                return op.rejection(wrapper, acct, "OC0001", "The order does not match a current preview", conf)
            preview.used = True
            order = FakeOrder(
                conf_num=conf,
                acct_num=acct,
                symbol=legs[0]["securityDetail"]["symbol"],
                action=legs[0]["orderActionCode"],
                qty=float(legs[0]["qty"]),
                price_type="L",
                limit_price=parameters["tradableSecOrderDetail"].get("netAmount"),
                stop_price=None,
                tif=parameters["tradableSecOrderDetail"]["tifCode"],
                entered=int(self.upstream.now().timestamp()),
                complex_legs=legs,
            )
            self.book[conf] = order
        elif base.get("reqTypeCode") != "N":
            return op.rejection(wrapper, acct, "OC0003", "reqTypeCode must be N to preview")
        else:
            conf = new_conf_num()
            self.previews[conf] = Preview("multileg", acct, _canonical(parameters))
        answer = copy.deepcopy(op.MULTILEG_PREVIEW_SAMPLE)
        response = answer[wrapper]
        response["acctNum"] = acct
        detail = response["orderConfirmDetail"]
        detail.update(respTypeCode="A" if place else "V", confNum=conf)
        net = float(parameters["tradableSecOrderDetail"].get("netAmount") or 0.92)
        detail["netAmount"] = str(net)
        detail["finalTotalValOfOrder"] = round(net * 100 + 1.30, 2)
        tradable = parameters["tradableSecOrderDetail"]
        echoed_tradable = detail["orderDetail"]["tradableSecOrderDetail"]
        echoed_tradable["dbCrEvenCode"] = tradable["dbCrEvenCode"]
        echoed_tradable["priceTypeDetail"] = {"priceTypeCode": "L" if "netAmount" in tradable else "M"}
        # In the captured world request BO/SO come back as BC/SC; the decompiled world echoes them as sent.
        detail["orderDetail"]["baseOrderDetail"]["optionDetail"]["complexOrderDetails"] = [
            {
                "orderActionCode": fa.leg_echo(self.world, leg["orderActionCode"], leg["securityDetail"]["symbol"]),
                "type": "O",
                "qty": leg["qty"],
                "securityDetail": {"symbol": leg["securityDetail"]["symbol"], "etfInd": False},
                "priceDetail": {
                    "price": leg["priceDetail"]["price"],
                    "bidPrice": leg["priceDetail"]["bidPrice"],
                    "askPrice": leg["priceDetail"]["askPrice"],
                },
                **self.misread,
            }
            for leg in legs
        ]
        self.misread = {}
        return answer

    # --- cancel -----------------------------------------------------------------------------------------

    def _cancel(self, body: dict[str, Any], *, preview: bool) -> dict[str, Any]:
        parameter = body["request"]["parameter"]
        entry = parameter["cancelOrderDetail"][0]
        conf, acct = entry["confNum"], entry["acctNum"]
        wrapper = "preview" if preview else "place"
        order = self.book.get(conf)
        if parameter.get("previewInd") is not preview or parameter.get("confInd") is not False:
            return op.rejection(wrapper, acct, "CX0003", "Bad cancel indicators", conf)
        if order is None or order.acct_num != acct:
            return op.rejection(wrapper, acct, "CX0001", f"Order {conf} was not found", conf)
        if order.status not in ("OPEN", "UNTRIGGERED_AWAITS_PRIMARY_TRIGGER"):
            return op.rejection(wrapper, acct, "CX0002", f"Order {conf} can no longer be canceled", conf)
        detail: dict[str, Any] = {
            "respTypeCode": "A",
            "confNum": conf,
            "acctNum": acct,
            "actionCode": entry["actionCode"],
            "actionCodeDesc": fa.status_words(
                self.world, entry["actionCode"], order.symbol, order.symbol in OPTION_PRICES
            ),
            "origQty": order.qty,
            "execQty": "0",
            "remainingQty": str(order.qty),
        }
        if preview:
            detail.update(estProceeds="0.00", commission=0)
            return {wrapper: {"cancelPreviewDetail": [detail]}}
        order.status, order.status_desc = "VERIFIED_CANCEL", "Canceled"
        return {wrapper: {"cancelConfirmDetail": [detail]}}

    # --- conditional -------------------------------------------------------------------------------------

    def _conditional(self, body: dict[str, Any], *, place: bool) -> dict[str, Any]:
        parameters = body["parameters"]
        acct = parameters["acctNum"]
        kind = parameters["condOrderTypeCode"]
        legs = parameters["condOrderDetails"]
        wrapper = "place" if place else "preview"
        for leg in legs:
            symbol = leg["baseOrderDetail"]["secDetail"]["symbol"]
            if symbol not in LAST_PRICES:
                return op.rejection(wrapper, acct, "SY0001", f"The symbol {symbol} is not valid. Please re-enter.")
            price_type = leg["tradableSecOrderDetail"]["priceTypeDetail"].get("priceTypeCode")
            if price_type not in KNOWN_PRICE_TYPES:
                return op.rejection(wrapper, acct, "PT0001", f"The order type {price_type} is not valid.")
        if not place:
            confs = [new_conf_num() for _ in legs]
            for conf in confs:
                self.previews[conf] = Preview("conditional", acct, _canonical(parameters), orig=",".join(confs))
        else:
            sent = [leg["baseOrderDetail"].get("confNum") for leg in legs]
            group = self.previews.get(sent[1] or "")
            all_confs = (group.orig or "").split(",") if group else []
            # Both readings of the captured conditional place are accepted: leg i carries preview leg i-1's
            # conf_num, or its own.
            if (
                group is None
                or group.used
                or sent[0] is not None
                or group.body != _canonical(parameters)
                or sent[1:] not in (all_confs[: len(legs) - 1], all_confs[1:])
                or parameters.get("previewInd") is not False
            ):
                return op.rejection(wrapper, acct, "OC0001", "The order does not match a current preview")
            confs = all_confs
            for conf in confs:
                self.previews[conf].used = True
            for index, (conf, leg) in enumerate(zip(confs, legs, strict=True)):
                waits = index > 0 and kind in ("OTO", "OTOCO")
                self._book(conf, acct, leg, "UNTRIGGERED_AWAITS_PRIMARY_TRIGGER" if waits else "OPEN")
        answers = []
        for conf, leg in zip(confs, legs, strict=True):
            base = leg["baseOrderDetail"]
            price = leg["tradableSecOrderDetail"]["priceTypeDetail"]
            unit = float(price.get("limitPrice") or price.get("stopPrice") or LAST_PRICES[base["secDetail"]["symbol"]])
            value = round(unit * float(base["qty"]), 2)
            answers.append(
                {
                    "orderConfirmDetail": {
                        "respTypeCode": "A" if place else "V",
                        "confNum": conf,
                        "acctTypeCode": base["acctTypeCode"],
                        "netAmt": str(value),
                        "totalCost": value,
                        "orderDetail": {
                            "baseOrderDetail": {**base, "valueOfOrder": value},
                            "tradableSecOrderDetail": leg["tradableSecOrderDetail"],
                        },
                        "estCommDetail": {"amt": 0, "typeCode": "3", "estComm": 0},
                    }
                }
            )
        answer: dict[str, Any] = {"acctNum": acct, "condOrderDetails": answers}
        if not place:
            answer["sysMsgs"] = copy.deepcopy(op.CONDITIONAL_PREVIEW_SAMPLE["preview"]["sysMsgs"])
            answer["sysMsgs"]["sysMsg"].append(
                {
                    "message": "Other",
                    "detail": "Code=354020, Text=(354020) If you plan to day-trade, you must have sufficient funds",
                    "source": "ConditionalOrder",
                    "code": "1999",
                    "type": "warning",
                }
            )
        return {wrapper: answer}

    # --- staged orders and the trade agreement -----------------------------------------------------------

    def _staged_get(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["stagedOrders"][0]["stageType"] != "saveD_ORDER" or not self.staged:
            return copy.deepcopy(op.STAGED_EMPTY_SAMPLE)
        return {"stagedOrders": list(self.staged.values())}

    def _staged_save(self, body: dict[str, Any]) -> dict[str, Any]:
        entry = body["stagedOrders"][0]
        stage_id = f"STG{len(self.staged) + 1:04d}"
        created = int(self.upstream.now().timestamp() * 1000)
        self.staged[stage_id] = {**entry, "stageId": stage_id, "createdTime": created}
        return {
            "stagedOrders": [{"stageId": stage_id}],
            "messages": [{"code": "200", "severity": "INFO", "message": "SAVED"}],
        }

    def _staged_delete(self, body: dict[str, Any]) -> dict[str, Any]:
        stage_id = body["stagedOrders"][0]["stageIds"][0]
        if self.staged.pop(stage_id, None) is None:
            return {"messages": [{"code": "404", "severity": "ERROR", "message": f"STAGE ID {stage_id} NOT FOUND"}]}
        return {"messages": [{"code": "200", "severity": "INFO", "message": "DELETED"}]}

    def _agreement(self, body: dict[str, Any]) -> dict[str, Any]:
        self.agreements.add((body["acctNum"], body["agreementTypeCode"]))
        return {
            "acctNum": body["acctNum"],
            "sysMsgs": {"sysMsg": [{"message": "Success", "code": "0999", "type": "info"}]},
        }


def _route(answer: Any) -> Any:
    """Wrap a body -> JSON function as a route handler; a body of the wrong shape is a 400, as upstream."""

    async def handle(upstream: FakeFidelity, request: web.Request, body: Any) -> web.StreamResponse:
        try:
            return web.json_response(answer(body))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            return web.json_response({"message": f"bad request body: {exc!r}"}, status=400)

    return handle
