"""Captured Fidelity order payloads, and builders the fake answers with.

Numbers are mixed JSON numbers and strings, as the upstream sends them. The ``*_SAMPLE`` constants are the
captured shapes (trimmed); the functions build the same shapes for the fake's own orders.
"""

from __future__ import annotations

from typing import Any

EQUITY_PREVIEW_SAMPLE: dict[str, Any] = {
    "preview": {
        "acctNum": "Z21772945",
        "orderConfirmDetail": {
            "respTypeCode": "V",
            "confNum": "24A0L75J",
            "acctNum": "Z21772945",
            "acctTypeCode": "M",
            "priceDetail": {"price": 0.965, "priceDateTime": 1774969802, "bidPrice": "0.954", "askPrice": 0.97},
            "estCommissionDetail": {"estCommission": "0.00", "typeCode": "30"},
            "dtcEstFee": 0,
            "netAmount": 1,
            "netProceedsInclusive": 1,
            "orderDetail": {
                "acctNum": "Z21772945",
                "baseOrderDetail": {
                    "orderActionCode": "B",
                    "actionCodeDesc": "Buy",
                    "qty": 1,
                    "qtyTypeCode": "S",
                    "valOfOrder": 1,
                    "securityDetail": {"symbol": "LGVN", "cusip": "54303L203", "secDesc": "LONGEVERON CLASS A"},
                },
                "tradableSecOrderDetail": {
                    "priceTypeDetail": {"priceTypeCode": "L", "priceTypeDesc": "Limit", "limitPrice": 1},
                    "tifCode": "D",
                    "mktRouteCode": "",
                },
            },
        },
    }
}

EQUITY_PLACE_SAMPLE: dict[str, Any] = {
    "place": {
        "acctNum": "Z21772945",
        "orderConfirmDetail": {
            "respTypeCode": "A",
            "confNum": "24A0L75J",
            "acctNum": "Z21772945",
            "acctTypeCode": "M",
            "priceDetail": {"price": 0.965, "priceDateTime": 1774969802, "bidPrice": 0.954, "askPrice": 0.97},
            "estCommissionDetail": {"estCommission": 0.00},
            "netAmount": 1,
            "orderDetail": {
                "acctNum": "Z21772945",
                "baseOrderDetail": {
                    "orderActionCode": "B",
                    "actionCodeDesc": "Buy",
                    "qty": 1,
                    "securityDetail": {"symbol": "LGVN", "cusip": "54303L203", "secDesc": "LONGEVERON CLASS A"},
                },
                "tradableSecOrderDetail": {
                    "priceTypeDetail": {"priceTypeCode": "L", "priceTypeDesc": "Limit", "limitPrice": 1},
                    "tifCode": "D",
                },
            },
        },
    }
}

REPLACE_ERROR_SAMPLE: dict[str, Any] = {
    "cancelandreplace": {
        "acctNum": "Z21772945",
        "orderNumOrig": "24C0SZD3",
        "orderConfirmMsgs": {
            "orderConfirmMessage": [
                {
                    "message": "other",
                    "detail": "Code=MA5010,Text=The limit price entered is too far away from the last trade for this"
                    " security. Please correct and re-submit your order.,Source=",
                    "source": "EquityOptionPreview",
                    "code": "2999",
                    "type": "error",
                }
            ]
        },
        "orderConfirmDetail": {"respTypeCode": "E", "errorCategories": ["UNKNOWN"], "confNum": "24C0SZF5"},
    }
}

MULTILEG_PREVIEW_SAMPLE: dict[str, Any] = {
    "multiLegOptionResponse": {
        "sysMsgs": {
            "sysMsg": [
                {
                    "message": "Other",
                    "detail": "Code=354020, Text=(354020) If you plan to day-trade, you must have sufficient funds",
                    "source": "multilegorder",
                    "code": "1999",
                    "type": "warning",
                }
            ]
        },
        "acctNum": "Z21772945",
        "orderConfirmDetail": {
            "respTypeCode": "V",
            "confNum": "C31PHDRX",
            "acctTypeCode": "M",
            "netAmount": "0.92",
            "netAsk": 1.05,
            "netBid": 0.8,
            "midPoint": 0.925,
            "gcd": 1,
            "finalTotalValOfOrder": "93.30",
            "totalEstCommission": 1.30,
            "subtotalValOfOrder": 92.00,
            "orderDetail": {
                "baseOrderDetail": {
                    "optionDetail": {
                        "complexType": "CO",
                        "numOfLegs": 2,
                        "complexOrderDetails": [
                            {
                                "orderActionCode": "BC",
                                "type": "O",
                                "qty": 1,
                                "securityDetail": {"symbol": "QS280121C7"},
                            },
                            {
                                "orderActionCode": "SC",
                                "type": "O",
                                "qty": 1,
                                "securityDetail": {"symbol": "QS280121C12"},
                            },
                        ],
                    }
                },
                "tradableSecOrderDetail": {
                    "tifCode": "D",
                    "priceTypeDetail": {"priceTypeCode": "L"},
                    "dbCrEvenCode": "DB",
                    "aonCode": False,
                    "destinationCode": "",
                },
            },
        },
    }
}

ORDER_STATUS_SAMPLE: dict[str, Any] = {
    "order": {
        "acctDetails": {
            "acctDetail": [
                {
                    "acctNum": "Z25485019",
                    "acctLevel": "B",
                    "orderSummary": {"orderCount": 1, "openCount": 0, "filledCount": 1, "cancelledCount": 0},
                }
            ]
        },
        "orderDetails": {
            "orderDetail": [
                {
                    "acctNum": "Z25485019",
                    "statusDetail": {
                        "statusCode": "FILLED",
                        "statusDesc": "Filled at $2.96",
                        "cancelableInd": False,
                        "replaceableInd": False,
                        "amountDetail": {
                            "qtyRemaining": "0",
                            "avgExecPrice": "2.96",
                            "qty": 1,
                            "qtyExec": 1,
                            "commission": "0.65",
                            "gross": 296.0,
                            "net": 296.65,
                        },
                    },
                    "idDetail": {"confNum": "C30QFHNX", "systemOrderId": "26089I2KBM", "orderSource": "WO#"},
                    "baseOrderDetail": {
                        "description": "SPXW Condor",
                        "entryDatetime": 1774879200,
                        "orderActionCode": "BP",
                        "actionCodeDesc": "Buy Put",
                        "qty": 1,
                        "sellAllInd": False,
                        "acctTypeCode": 2,
                        "acctTypeDesc": "Margin",
                        "origQty": 1,
                        "securityDetail": {
                            "cusip": "8SPXW6330",
                            "symbol": "SPXW260330P6330",
                            "secDesc": "SPXW MAR 30 2026 $6330 PUT",
                            "secType": "8",
                        },
                        "specialOrderDetail": {"specialOrderCode": "C", "specialOrderName": "COMPLEX_OPTION"},
                    },
                    "tradableSecOrderDetail": {
                        "priceTypeDetail": {
                            "priceTypeCode": "L",
                            "priceTypeDesc": "Limit",
                            "priceTypeDetailDesc": "Limit at $2.10",
                            "limitPrice": "2.10",
                            "pegInd": False,
                        },
                        "optionDetail": {
                            "contractSymbol": "SPXW",
                            "contractType": "P",
                            "expireDate": 1774843200,
                            "strikePrice": 6330,
                            "strategyCode": "CONDOR",
                        },
                        "tifCode": "D",
                        "tifDesc": "Day",
                        "mktRouteCode": "GLOBAL EXECUTION BROKERS L.P.",
                        "marketSessionCode": "S",
                    },
                }
            ]
        },
    }
}

CONDITIONAL_PREVIEW_SAMPLE: dict[str, Any] = {
    "preview": {
        "sysMsgs": {
            "sysMsg": [
                {
                    "message": "Success",
                    "detail": "Code=000000, Text=Success, Source=ConditionalOrder",
                    "source": "ConditionalOrder",
                    "code": "0999",
                    "type": "info",
                }
            ]
        },
        "acctNum": "Z21772945",
        "condOrderDetails": [
            {
                "orderConfirmDetail": {
                    "respTypeCode": "V",
                    "confNum": "D02JRNZX",
                    "acctTypeCode": "M",
                    "netAmt": "6.20",
                    "totalCost": 6.20,
                    "orderDetail": {
                        "baseOrderDetail": {
                            "orderActionCode": "B",
                            "qty": 1,
                            "valueOfOrder": 6.2,
                            "secDetail": {"symbol": "QS"},
                        },
                        "tradableSecOrderDetail": {
                            "tifCode": "D",
                            "priceTypeDetail": {"priceTypeCode": "L", "limitPrice": 6.2},
                        },
                    },
                    "estCommDetail": {"amt": 0, "typeCode": "3", "estComm": 0},
                    "priceDetail": {"price": 6.18, "priceDateTime": 1774969854, "bidPrice": 6.17, "askPrice": 6.19},
                }
            },
            {
                "orderConfirmDetail": {
                    "respTypeCode": "V",
                    "confNum": "D02JRPBB",
                    "acctTypeCode": "M",
                    "netAmt": 7,
                    "totalCost": "7.00",
                    "orderDetail": {
                        "baseOrderDetail": {
                            "orderActionCode": "S",
                            "qty": 1,
                            "valueOfOrder": 7,
                            "secDetail": {"symbol": "QS"},
                        },
                        "tradableSecOrderDetail": {
                            "tifCode": "D",
                            "priceTypeDetail": {"priceTypeCode": "L", "limitPrice": 7},
                        },
                    },
                    "estCommDetail": {"amt": 0, "typeCode": "3", "estComm": 0},
                }
            },
            {
                "orderConfirmDetail": {
                    "respTypeCode": "V",
                    "confNum": "D02JRQ4M",
                    "acctTypeCode": "M",
                    "netAmt": 5.5,
                    "totalCost": 5.5,
                    "orderDetail": {
                        "sysMsgs": {
                            "sysMsg": [
                                {
                                    "message": "Other",
                                    "detail": "Code=001924, Text=(001924) Stop Loss and Stop Limit orders are triggered"
                                    " by the last trade",
                                    "source": "ConditionalOrder",
                                    "code": "1999",
                                    "type": "warning",
                                }
                            ]
                        },
                        "baseOrderDetail": {
                            "orderActionCode": "S",
                            "qty": 1,
                            "valueOfOrder": 5.5,
                            "secDetail": {"symbol": "QS"},
                        },
                        "tradableSecOrderDetail": {
                            "tifCode": "D",
                            "priceTypeDetail": {"priceTypeCode": "S", "stopPrice": 5.5},
                        },
                    },
                    "estCommDetail": {"amt": 0, "typeCode": "3", "estComm": 0},
                }
            },
        ],
    }
}

CANCEL_SAMPLE: dict[str, Any] = {
    "place": {
        "cancelConfirmDetail": [
            {
                "respTypeCode": "A",
                "confNum": "24A0JX2V",
                "acctNum": "Z21772945",
                "actionCode": "B",
                "actionCodeDesc": "Buy",
                "origQty": 1,
                "execQty": "0",
                "remainingQty": 1,
            }
        ]
    }
}

STAGED_EMPTY_SAMPLE: dict[str, Any] = {
    "messages": [
        {
            "code": "204",
            "severity": "INFO",
            "message": "NO DATA HAS BEEN RETRIEVED BECAUSE STAGE ID(s) OR STAGE TYPE PROVIDED DOES NOT EXIST IN THE"
            " TABLE.",
        }
    ]
}


def error_message(code: str, text: str, source: str = "EquityOptionPreview") -> dict[str, Any]:
    """Return one ``orderConfirmMessage`` of type error."""
    return {
        "message": "other",
        "detail": f"Code={code},Text={text},Source=",
        "source": source,
        "code": "2999",
        "type": "error",
    }


def rejection(wrapper: str, acct_num: str, code: str, text: str, conf_num: str = "") -> dict[str, Any]:
    """Return an order-entry error answer: HTTP 200 with ``respTypeCode "E"`` and the message."""
    return {
        wrapper: {
            "acctNum": acct_num,
            "orderConfirmMsgs": {"orderConfirmMessage": [error_message(code, text)]},
            "orderConfirmDetail": {"respTypeCode": "E", "errorCategories": ["UNKNOWN"], "confNum": conf_num},
        }
    }
